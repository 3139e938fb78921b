#!/usr/bin/env bash
# Description: session 23 -- a new small file published on a huge-page tmpfs gets 4 KiB pages; files published
# large, grown past 2 MiB or mapped by the program keep huge pages; every file's bytes read back through the
# kernel after the program exits; a crash inside such a publish is rolled back (shim_small_pages.c); session 24:
# with the kernel's huge-page settings unreadable the first new small file still teaches the library the
# medium (a private mount namespace hides shmem_enabled). Skips when the medium gives a new file no huge page now
# (memory fragmented: the control's 1-byte write takes 4 KiB), where the check could not fail.
# Usage: small_pages.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

cli=$(dk_cli) || exit 1
prog=$(dk_test_bin shim_small_pages) || exit 1
dk_need_cmd stat
dk_managed_dir hugetmpfs 64M >/dev/null
dir=$DK_DIR
huge=$((2 * 1024 * 1024))
# the control: what a 1-byte write into a new file of this medium takes without the library
printf x > "$DK_MNT/control" || dk_fail "the control's write failed"
control=$(( $(stat -c %b "$DK_MNT/control") * 512 ))
rm -f "$DK_MNT/control"
echo "small_pages: the control's 1-byte write took $control bytes"
[ "$control" -ge "$huge" ] || dk_skip "no huge page for a new file now (the control took $control bytes): the check cannot fail"
"$cli" run --mode posix --append stage --dir "$dir" -- "$prog" run "$dir" || dk_fail "under the library: exit $?"
"$prog" verify "$dir" || dk_fail "through the kernel after the program's exit: exit $?"
echo "ok: small new files in 4 KiB pages, the others in 2 MiB ones, every byte as written"
# A crash between the seed (the file truncated up to the publish's size, its first page made) and the copy: the
# size record begun before the seed rolls the file back to what was published (nothing), never to zeros.
rm -rf "$dir" && mkdir -p "$dir"
DAXKIT_TEST_CRASH=publish.small_pages.seeded:1 "$cli" run --mode posix --append stage --dir "$dir" -- \
    "$prog" crash "$dir" 2>&1
rc=$?
[ $rc = 137 ] || dk_fail "the crash run ended with $rc, not killed at the seed (137)"
"$cli" recover "$dir" > /dev/null 2>&1 || dk_fail "daxkit recover failed"
size=$(stat -c %s "$dir/crashed")
echo "small_pages: killed after the seed of a 100-byte publish; size after recovery $size"
[ "$size" = 0 ] || dk_fail "after a crash between the seed and the copy the file holds $size bytes (zeros), not nothing"
echo "ok: a crash inside the small-page publish is rolled back"
# Where the kernel's settings cannot be read, the library learns from the first new small file as before
# (session 24): shmem_enabled made empty by a bind mount of /dev/null in a private mount namespace.
rm -rf "$dir" && mkdir -p "$dir"
if unshare -m true 2>/dev/null; then
    unshare -m sh -c 'mount --bind /dev/null /sys/kernel/mm/transparent_hugepage/shmem_enabled && exec "$@"' sh \
        "$cli" run --mode posix --append stage --dir "$dir" -- "$prog" learn "$dir" || dk_fail "learn: exit $?"
    echo "ok: with the settings unreadable the first new small file is published to learn the medium"
else
    echo "small_pages: learn not checked (no unshare -m here)"
fi
