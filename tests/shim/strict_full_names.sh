#!/usr/bin/env bash
# Description: strict mode on a full medium: names still change (review 9, finding 27). The first metadata
# operation of a strict process makes its operation log, which needs space; on a full medium it could not
# be made and unlink, rename and an O_CREAT open failed with EIO -- a program could not free space by
# deleting files (rm: "Input/output error"). Records of names are never replayed (the change is atomic in
# the kernel, durable by the directory fsync), so with no log they are done unlogged and counted
# (strict_meta_unlogged). Cases on a 16 MiB tmpfs filled by dd, each under daxkit strict, the kernel's
# answer expected: mv filler renamed, an O_CREAT open of a new (empty) file, rm renamed, then the freed
# space usable. Usage: strict_full_names.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
lib=$(dk_lib) || exit 1
dk_need_root
dk_need_python
dk_need_cmd dd mv rm
dk_managed_dir tmpfs 16M >/dev/null
dir=$DK_DIR
dd if=/dev/zero of="$dir/filler" bs=1M 2>/dev/null # until ENOSPC
avail=$(df --output=avail "$DK_MNT" | tail -1)
[ "$avail" -lt 64 ] || dk_skip "the medium is not full ($avail KiB free)"
strict=(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict)
fails=0
check() { # NAME RC
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: exit $2 (kernel: 0)"; fails=$((fails + 1)); fi
}
"${strict[@]}" mv "$dir/filler" "$dir/renamed"
check "mv on a full medium" $?
[ -e "$dir/renamed" ] || mv "$dir/filler" "$dir/renamed" # the next cases start from the renamed file
"${strict[@]}" python3 -c "import os, sys; os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644))" \
    "$dir/new"
check "O_CREAT open on a full medium" $?
"${strict[@]}" rm "$dir/renamed"
check "rm on a full medium" $?
[ ! -e "$dir/renamed" ] || rm -f "$dir/renamed"
# The space is back: a strict process makes its log again (a write needs it).
"${strict[@]}" python3 -c "
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644); os.write(fd, b'x' * 4096); os.close(fd)
os.unlink(sys.argv[1])" "$dir/after"
check "create, write and unlink after rm freed the space" $?
[ "$fails" = 0 ] || dk_fail "$fails case(s) differ from the kernel on a full medium (strict)"
echo "strict_full_names.sh: unlink, rename and create work in strict mode on a full medium"
