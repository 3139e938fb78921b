#!/usr/bin/env bash
# Description: a program that hears ENOSPC, frees space and tries again ends with exactly what it wrote --
# never a byte twice, never a byte of a write that failed. On a small tmpfs with about 1 MiB free, a log
# of 48 records of 64 KiB (3 MiB) is appended through an O_APPEND descriptor; at the first ENOSPC (a write,
# or the fsync) the program removes a filler file and repeats the failed call (a write: the bytes the
# short counts left). The file must then be the 48 records, byte for byte, and the program must have
# heard ENOSPC once. Two defects it catches (review 11, finding 8; the session 11 knownbug of
# shim_full_medium_burst_tmpfs):
#  - posix mode, stage: the fsync's relink of 3 MiB of staged appends got 1 MiB into the file, then ENOSPC;
#    what landed was not counted, so the next publish copied the appends again from their start, through
#    the O_APPEND descriptor at the kernel's end: the stream twice (the 1 MiB, then all 3 MiB);
#  - sync mode: a write whose publish got part way answered -1 ENOSPC with 61,440 of its bytes in the file,
#    and kept the rest staged: the retried write put them in a second time. The kernel's write returns the
#    short count instead (and the next write says ENOSPC).
# Every append strategy in posix mode and stage and extend in sync mode, against the kernel's run.
# Usage: full_medium_retry.sh MEDIUM (tmpfs|hugetmpfs). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:?MEDIUM (tmpfs|hugetmpfs)}
lib=$(dk_lib) || exit 1
dk_need_cmd python3 fallocate stat
py=$(dk_python) || dk_fail "cannot find python3's interpreter"
dk_media_mount "$medium" 16M >/dev/null
dir=$DK_MNT/managed
fails=0
for cfg in kernel "DAXKIT_APPEND=stage" "DAXKIT_APPEND=extend" "DAXKIT_APPEND=extend DAXKIT_EXTEND_SYNC=keep" \
           "DAXKIT_APPEND=auto" "DAXKIT_MODE=sync DAXKIT_APPEND=stage" "DAXKIT_MODE=sync DAXKIT_APPEND=extend"; do
    rm -rf "$dir" "$DK_MNT/filler"
    mkdir -p "$dir"
    # About 1 MiB + 20 KiB free (not a multiple of the records: a write is cut short by the kernel).
    avail=$(stat -f -c '%a %S' "$DK_MNT") || dk_fail "statfs of $DK_MNT"
    avail=$(( ${avail% *} * ${avail#* } ))
    fill=$((avail - (1 << 20) - 20480))
    [ $fill -gt 0 ] || dk_fail "only $avail bytes free on the $medium"
    fallocate -l $fill "$DK_MNT/filler" || dk_fail "cannot make the filler ($fill bytes)"
    pre=()
    [ "$cfg" = kernel ] || pre=(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" $cfg)
    out=$("${pre[@]}" "$py" - "$dir/log" "$DK_MNT/filler" <<'PY' 2>&1
import errno, os, sys
log, filler = sys.argv[1], sys.argv[2]
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
N = 48
freed, shorts, n, rest, events = False, 0, 0, b"", []
def enospc(what):
    global freed
    if freed:
        print("FAIL: %s: ENOSPC again after the filler was removed" % what); sys.exit(1)
    os.unlink(filler); freed = True; events.append(what)
while n < N:
    rec = rest or (b"%08d" % n) * 8192               # 64 KiB, numbered
    try:
        w = os.write(fd, rec)
    except OSError as e:
        if e.errno != errno.ENOSPC: raise
        enospc("write %d" % n); continue             # the same bytes again
    rest = rec[w:]
    if rest: shorts += 1; events.append("short %d" % w)
    else: n += 1
while True:
    try:
        os.fsync(fd); break
    except OSError as e:
        if e.errno != errno.ENOSPC: raise
        enospc("fsync")
os.close(fd)
print("records %d enospc at %s" % (n, ",".join(events) or "none"))
data = open(log, "rb").read()
want = b"".join((b"%08d" % i) * 8192 for i in range(N))
first = None if data == want else next((i for i in range(min(len(data), len(want))) if data[i] != want[i]), -1)
print("file %d bytes, expected %d, first wrong byte %s" % (len(data), len(want), first))
ok = data == want and freed
print("exact %s" % ok)
PY
)
    rc=$?
    echo "$cfg: exit $rc: $(printf '%s' "$out" | grep -v '^daxkit\[' | tr '\n' ' ')"
    if [ $rc -ne 0 ]; then echo "FAIL: $cfg: the program failed (exit $rc)"; fails=1; continue; fi
    grep -q "enospc at none" <<<"$out" && { echo "FAIL: $cfg: the medium never filled: the test proves nothing"; fails=1; }
    grep -q "^exact True$" <<<"$out" ||
        { echo "FAIL: $cfg: the file is not exactly the records written (a byte twice, or one of a failed write)"; fails=1; }
done
[ $fails -eq 0 ] || dk_fail "a retry after ENOSPC on a full $medium did not end with exactly what was written (above)"
echo "ok: after ENOSPC, freeing space and retrying, every configuration holds exactly the records written"
