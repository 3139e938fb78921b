#!/usr/bin/env bash
# Description: a program started with a finite RLIMIT_FSIZE (`ulimit -f`) under the library. The library's
# own files (stats file, staging files, strict mode's operation log, the atomic journal) are larger than a
# small limit, and growing one past it makes the kernel kill the program with SIGXFSZ; the library must see
# the limit before it makes any of them, say why it does not accelerate, and let the program run as it
# would on the kernel path. posix, strict and DAXKIT_ATOMIC, each with limits of 16 KiB and 2 MiB.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

lib=$(dk_lib) || exit 1
dk_media_mount hugetmpfs 256M >/dev/null
dir=$DK_MNT/managed
mkdir -p "$dir"
fails=0
for limit_kib in 16 2048; do
    for cfg in "DAXKIT_MODE=posix" "DAXKIT_MODE=strict" "DAXKIT_ATOMIC=*"; do
        rm -rf "${dir:?}"/* "$dir/.daxkit"
        out=$( (ulimit -f "$limit_kib" && env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$cfg" \
                dd if=/dev/zero of="$dir/f" bs=4k count=2 conv=fsync status=none) 2>&1)
        rc=$?
        size=$(stat -c %s "$dir/f" 2>/dev/null || echo none)
        if [ $rc -ne 0 ] || [ "$size" != 8192 ] || ! grep -q "RLIMIT_FSIZE" <<< "$out"; then
            echo "FAIL: ulimit -f $limit_kib, $cfg: exit $rc (SIGXFSZ is 153), size $size, output: $out"
            fails=$((fails + 1))
        else
            echo "ok: ulimit -f $limit_kib, $cfg: the program ran unaccelerated and said why"
        fi
    done
done
[ $fails -eq 0 ] || exit 1
exit 0
