#!/usr/bin/env bash
# Description: session 28 -- on a plain (4 KiB-page) tmpfs the first new small file's publish decides "small
# pages" from the file's own fstat (st_blksize below 2 MiB: upath/small_pages.c settings_verdict) and reads none
# of the kernel's huge-page settings: no open of /proc/self/mountinfo or of shmem_enabled (the mountinfo read
# alone was ~20 us of each process's CPU: docs/benchmarks.md, session 28), no seed, the file's bytes as written.
# shim_small_pages_hugetmpfs keeps the huge-page side (a 2 MiB block size: the settings read, small files seeded).
# Skips where the kernel gives a new file of a plain tmpfs a 2 MiB block size (shmem_enabled `force`).
# Usage: small_pages_plain.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

lib=$(dk_lib) || exit 1
prog=$(dk_test_bin shim_small_pages) || exit 1
dk_need_cmd strace stat
dk_managed_dir tmpfs 64M >/dev/null
dir=$DK_DIR
# the control: a new file's block size on this medium through the kernel
printf x > "$DK_MNT/control" || dk_fail "the control's write failed"
blksize=$(stat -c %o "$DK_MNT/control")
rm -f "$DK_MNT/control"
echo "small_pages_plain: a new file's block size here $blksize"
[ "$blksize" -lt $((2 * 1024 * 1024)) ] || dk_skip "a new file of a plain tmpfs reports a 2 MiB block size here (shmem_enabled force?)"
trace=$DK_MNT/trace
log=$DK_MNT/log
# `crash` without a crash point: one new 100-byte file ("crashed") written and closed -- a staged publish of a
# file empty in the kernel, the small-page plan's case
strace -f -o "$trace" -e trace=open,openat env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=posix \
    DAXKIT_APPEND=stage DAXKIT_VERBOSE=1 "$prog" crash "$dir" 2> "$log" || { cat "$log"; dk_fail "the program failed"; }
size=$(stat -c %s "$dir/crashed")
[ "$size" = 100 ] || dk_fail "the new file holds $size bytes, not 100"
reads=$(grep -E 'mountinfo|transparent_hugepage/shmem_enabled' "$trace")
[ -z "$reads" ] || { cat "$log"; dk_fail "the huge-page settings were read on a plain tmpfs: $reads"; }
grep -q "new small files left as they are" "$log" || { cat "$log"; dk_fail "no verdict said (verbose log above)"; }
echo "ok: a new small file on a plain tmpfs, pages left as they are, no settings read"
