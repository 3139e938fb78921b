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
dk_need_python
dk_managed_dir hugetmpfs 256M >/dev/null
dir=$DK_DIR
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
# The program lowers its own limit before its first managed open (review 7, finding 1b): strict mode's log and
# the atomic journal, made at that open, must not cross it.
for cfg in "DAXKIT_MODE=strict" "DAXKIT_ATOMIC=*"; do
    rm -rf "${dir:?}"/* "$dir/.daxkit"
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$cfg" python3 -c '
import os, resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (2 << 20, resource.RLIM_INFINITY))
fd = os.open(sys.argv[1] + "/f", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"x" * 8192)
os.fsync(fd)
os.close(fd)
' "$dir" 2>&1)
    rc=$?
    size=$(stat -c %s "$dir/f" 2>/dev/null || echo none)
    if [ $rc -ne 0 ] || [ "$size" != 8192 ]; then
        echo "FAIL: setrlimit(RLIMIT_FSIZE, 2 MiB) by the program, $cfg: exit $rc (SIGXFSZ is 153), size $size: $out"
        fails=$((fails + 1))
    else
        echo "ok: setrlimit by the program, then a managed open, $cfg: ran (the file served by the kernel)"
    fi
done
[ $fails -eq 0 ] || exit 1
exit 0
