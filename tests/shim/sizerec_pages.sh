#!/usr/bin/env bash
# Description: session 22 -- the published-size record file takes 4 KiB pages of a huge-page tmpfs, not a 2 MiB
# page per process (shim_sizerec_pages.c). Skips when the medium gives a plain file no huge page now (memory
# fragmented: the control's fallocate of 4 KiB gets 4 KiB), where the check could not fail.
# Usage: sizerec_pages.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

cli=$(dk_cli) || exit 1
prog=$(dk_test_bin shim_sizerec_pages) || exit 1
dk_need_cmd fallocate stat
dk_managed_dir hugetmpfs 64M >/dev/null
dir=$DK_DIR
huge=$((2 * 1024 * 1024))
# the control: what a 4 KiB allocation in a new file of this medium takes without the library
fallocate -l 4096 "$DK_MNT/control" || dk_fail "fallocate of the control file failed"
control=$(( $(stat -c %b "$DK_MNT/control") * 512 ))
rm -f "$DK_MNT/control"
echo "sizerec_pages: the control's 4 KiB fallocate took $control bytes"
[ "$control" -ge "$huge" ] || dk_skip "no huge page for a new file now (the control took $control bytes): the check cannot fail"
out=$("$cli" run --mode posix --append stage --dir "$dir" -- "$prog" "$dir") || dk_fail "the program failed: $out"
echo "$out"
bytes=$(echo "$out" | awk '$1 == "record_file_bytes" { print $2 }')
[ -n "$bytes" ] || dk_fail "no record_file_bytes line"
[ "$bytes" -lt "$huge" ] || dk_fail "the size record file took $bytes bytes of the medium for one record (a huge page)"
echo "ok: the size record file took $bytes bytes"
