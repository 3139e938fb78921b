#!/usr/bin/env bash
# Description: recovery's check of a staged write's crc (session 8: one fence makes the staged bytes and the
# record durable in no order, so recovery must replay a staged record only when its staged bytes match the
# crc the record carries). A Python program under the library (strict, DAXKIT_PERSIST=flush, huge tmpfs)
# writes 64 KiB (one staged append) and makes 8 staged 4 KiB overwrites at distinct offsets, then kills
# itself (SIGKILL); the 9 records stay in the log. Control: `daxkit recover` replays all 9 and reports no
# torn staged record. Then the same with every staged byte inverted before recovery (what a power failure
# leaves when the record lines reached the medium and the staged lines did not): recovery must report 9
# torn staged records and replay none -- the file keeps what the program applied before it died, not the
# inverted bytes a replay without the check writes over it. Both, for logs written with one crc32c fold and
# recovered with another (DAXKIT_CRC_FOLD, session 27: every fold gives the same value). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

dk_need_python
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_managed_dir hugetmpfs 512M >/dev/null
dir=$DK_DIR
prog='
import os, signal, sys
fd = os.open(sys.argv[1] + "/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"." * 65536)
os.fsync(fd)
for i in range(8):
    os.pwrite(fd, bytes([65 + i]) * 4096, i * 8192)
os.kill(os.getpid(), signal.SIGKILL)
'
check='
import json, sys
r = json.loads(sys.argv[1].splitlines()[0])
data = open(sys.argv[2] + "/f", "rb").read()
want = bytearray(b"." * 65536)
for i in range(8):
    want[i * 8192:i * 8192 + 4096] = bytes([65 + i]) * 4096
torn, replayed, corrupt = r.get("strict_staged_torn"), r["strict_replayed"], sys.argv[3] == "1"
if data != bytes(want):
    first = next(i for i in range(min(len(data), len(want))) if data[i] != want[i]) if len(data) == len(want) else -1
    sys.exit("FAIL: after recovery the file differs from the 8 acknowledged writes (first at byte %d; corrupt=%s; %s)" % (first, corrupt, r))
if corrupt and (torn != 9 or replayed != 0):
    sys.exit("FAIL: inverted staged bytes: want 9 torn staged records and none replayed, got %s" % r)
if not corrupt and (torn != 0 or replayed != 9):
    sys.exit("FAIL: intact staged bytes: want every record replayed and none torn, got %s" % r)
print("ok: %s: %d replayed, %d torn staged records; the file holds the 8 writes" % ("staged bytes inverted" if corrupt else "intact", replayed, torn))
'
# Each crc32c fold writes the same crc (session 27): logs written with one are recovered with another
# (DAXKIT_CRC_FOLD: writer:recoverer; a fold the CPU lacks falls back to the best it has). A bad value is the
# option table's parse in `daxkit recover` too (which loads no configuration): auto, and the library's message.
for folds in auto:auto pclmul:auto off:pclmul auto:off auto:bogus; do
for corrupt in 0 1; do
    wfold=${folds%%:*} rfold=${folds#*:}
    rm -rf "${dir:?}"/* "$dir/.daxkit"
    # DAXKIT_STRICT_MARKS=0: the log as a power loss leaves it (completion marks never count after one; in
    # this boot they would say the 9 writes were applied, and recovery would rightly replay none).
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_STRICT_MARKS=0 \
        DAXKIT_CRC_FOLD="$wfold" python3 -c "$prog" "$dir"
    rc=$?
    [ $rc -eq 137 ] || dk_fail "the program did not die by SIGKILL (exit $rc)"
    stg=$(ls "$dir"/.daxkit/*.strict.stg 2>/dev/null | head -1)
    [ -n "$stg" ] || dk_fail "no strict staging file left in $dir/.daxkit"
    if [ $corrupt = 1 ]; then
        python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    b = bytearray(f.read(65536 + 8 * 4096))  # the append, then the 8 overwrites (64-byte bump allocator)
    f.seek(0)
    f.write(bytes(x ^ 0xff for x in b))' "$stg" || dk_fail "cannot invert the staged bytes"
    fi
    out=$(DAXKIT_CRC_FOLD="$rfold" "$cli" recover --json "$dir" 2>"$dir.err") || dk_fail "daxkit recover $dir failed: $out"
    if [ "$rfold" = bogus ]; then
        grep -qF "DAXKIT_CRC_FOLD='bogus' is not valid: expected one of auto|avx512|pclmul|off" "$dir.err" ||
            dk_fail "daxkit recover with DAXKIT_CRC_FOLD=bogus: not the option table's message: $(cat "$dir.err")"
    fi
    rm -f "$dir.err"
    echo -n "folds $folds: "
    python3 -c "$check" "$out" "$dir" $corrupt || exit 1
done
done
