#!/usr/bin/env bash
# Description: strict mode, a truncate that grows a file past RLIMIT_FSIZE -- by name (truncate(2)) and by
# descriptor (ftruncate) -- is refused before it is logged (review 26, finding 2). The kernel refuses such a
# growth with EFBIG and SIGXFSZ, whose default action ends the process: a record logged first is never taken
# back, and `daxkit recover` applied the truncate that never happened (a 100-byte file recovered as 2 MiB; by
# name only -- ftruncate was refused first since review 8). A Python program under the library writes 100 bytes
# (a log exists), lowers the limit to 1 MiB and truncates the file to 2 MiB with SIGXFSZ at its default; it must
# die by SIGXFSZ, and recovery must leave the 100 bytes. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: fsize_truncate.sh MEDIUM}
dk_need_python
lib=${DK_FSIZE_TRUNCATE_LIB:-$(dk_lib)} || exit 1
cli=$(dk_cli) || exit 1
dk_managed_dir "$medium" 512M >/dev/null
dir=$DK_DIR
fails=0
for how in name fd; do
    rm -rf "${dir:?}"/* "$dir/.daxkit"
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict python3 - "$dir/f" "$how" <<'PY'
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"x" * 100)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))
if sys.argv[2] == "name":
    os.truncate(sys.argv[1], 2 << 20)
else:
    os.ftruncate(fd, 2 << 20)
print("the truncate returned")
PY
    rc=$?
    if [ $rc -ne $((128 + 25)) ]; then
        echo "FAIL ($how): the program did not die by SIGXFSZ (exit $rc)"
        fails=$((fails + 1))
        continue
    fi
    out=$("$cli" recover "$dir" 2>&1) || dk_fail "daxkit recover $dir failed: $out"
    size=$(stat -c %s "$dir/f")
    if [ "$size" != 100 ]; then
        echo "FAIL ($how): after recovery the file is $size bytes (want 100: the truncate was refused); recover said: $out"
        fails=$((fails + 1))
    else
        echo "ok ($how): the refused growth was never logged; 100 bytes after recovery"
    fi
done
[ $fails -eq 0 ] || exit 1
