#!/usr/bin/env bash
# Description: strict mode, an open with O_TRUNC after logged writes, then a crash (review 7, finding 9).
# Strict mode logs the program's writes; an open that truncates the file is not an operation of the log,
# so records logged before it must not replay over the truncated file after a crash. A Python program
# under the library writes 16 KiB, overwrites 4 KiB at 8 KiB (logged), opens the file again with O_TRUNC,
# writes 10 bytes, fsyncs and kills itself (SIGKILL); `daxkit recover` must leave exactly those 10 bytes
# (before the fix: 12,288 bytes, the old overwrite behind zeros -- a state that never existed). Both
# strict apply policies, huge tmpfs and XFS. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: trunc_open.sh MEDIUM}
dk_need_python
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_managed_dir "$medium" 512M >/dev/null
dir=$DK_DIR
prog='
import os, signal, sys
p = sys.argv[1] + "/f"
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"a" * 16384)
os.close(fd)
fd = os.open(p, os.O_RDWR)
os.pread(fd, 4096, 0)
os.pwrite(fd, b"b" * 4096, 8192)
t = os.open(p, os.O_WRONLY | os.O_TRUNC)
os.write(t, b"T" * 10)
os.fsync(t)
os.kill(os.getpid(), signal.SIGKILL)
'
fails=0
for apply in auto write; do
    rm -rf "${dir:?}"/* "$dir/.daxkit"
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_STRICT_APPLY=$apply python3 -c "$prog" "$dir"
    rc=$?
    [ $rc -eq 137 ] || dk_fail "the program did not die by SIGKILL (exit $rc)"
    out=$("$cli" recover "$dir" 2>&1) || dk_fail "daxkit recover $dir failed: $out"
    size=$(stat -c %s "$dir/f")
    content=$(head -c 10 "$dir/f")
    if [ "$size" != 10 ] || [ "$content" != TTTTTTTTTT ]; then
        echo "FAIL: DAXKIT_STRICT_APPLY=$apply on $medium: after recovery the file is $size bytes (want the 10 written after the truncating open); recover said: $out"
        fails=$((fails + 1))
    else
        echo "ok: DAXKIT_STRICT_APPLY=$apply on $medium: recovered to the 10 bytes written after the truncating open"
    fi
done
[ $fails -eq 0 ] || exit 1
