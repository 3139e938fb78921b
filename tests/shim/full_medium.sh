#!/usr/bin/env bash
# Description: a log appended and fdatasync'ed record by record until a small tmpfs (or huge tmpfs) is full
# gets the kernel's answer under every append strategy -- a write failing with ENOSPC, every acknowledged
# record in the file, the program alive -- never a SIGBUS from a store into a hole the medium cannot fill
# (the extend strategy makes its steps by ftruncate: review 8, finding 2). The stage strategy accepts the
# write the medium cannot hold into its staging and reports ENOSPC at the fdatasync (and at close); the
# extend strategy stops a huge page early (daxkit's size record takes one).
# With `burst` the log is appended 64 KiB at a time without a sync until a write fails, then fsynced: the
# stage strategy needs new staging files meanwhile, which a full medium cannot back -- they were made
# sparse and the appends' copies into them died of SIGBUS (review 11, finding 8). Passes when the program
# lives, hears ENOSPC (at a write, the fsync or the close), and the file is an intact prefix of what it
# wrote -- all of it when the fsync succeeded. `prefilled`: the same burst on a medium a filler file has filled
# before the program starts: the library's first publish stored into its published-size record file, sparse,
# and died of SIGBUS (session 13: what made the burst case fail about 1 run in 40-90, when the medium was full
# before the process's first publish). Usage: full_medium.sh MEDIUM [burst|prefilled]. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:?MEDIUM (tmpfs|hugetmpfs)}
burst=${2:-}
prefilled=
[ "$burst" = prefilled ] && prefilled=1 burst=burst
lib=$(dk_lib) || exit 1
dk_need_python
dk_managed_dir "$medium" 16M >/dev/null
dir=$DK_DIR
fails=0
for cfg in kernel "DAXKIT_APPEND=stage" "DAXKIT_APPEND=extend DAXKIT_EXTEND_SYNC=keep" \
           "DAXKIT_APPEND=extend DAXKIT_EXTEND_SYNC=cut" "DAXKIT_APPEND=auto"; do
    rm -rf "$dir"/* "$dir"/.daxkit
    [ -z "$prefilled" ] || dd if=/dev/zero of="$dir/filler" bs=64k 2>/dev/null # to ENOSPC: not one page free
    pre=()
    [ "$cfg" = kernel ] || pre=(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" $cfg)
    if [ "$burst" = burst ]; then
        out=$("${pre[@]}" python3 - "$dir/log" <<'PY' 2>&1
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
n = 0
enospc = False
rest = b""
while True:
    rec = rest or (b"%08d" % n) * 8192                 # 64 KiB, numbered (or what a short write left)
    try:
        w = os.write(fd, rec)
    except OSError as e:
        print("error %s after %d records" % (errno.errorcode.get(e.errno, e.errno), n)); enospc = e.errno == errno.ENOSPC; break
    rest = rec[w:]
    if rest: print("short write %d" % w); continue     # as the kernel: the next write says why
    n += 1
synced = True
for call in (os.fsync, os.close):
    try:
        call(fd)
    except OSError as e:                               # stage: staged appends the medium cannot take
        print("%s: %s" % (call.__name__, errno.errorcode.get(e.errno, e.errno)))
        synced = False; enospc = enospc or e.errno == errno.ENOSPC
print("acknowledged %d enospc %s synced %s" % (n, enospc, synced))
PY
)
        rc=$?
        # the file as the kernel has it (no library): an intact prefix; all acknowledged bytes when synced
        ack=$(sed -n 's/^acknowledged \([0-9]*\) enospc True synced \(True\|False\)$/\1 \2/p' <<<"$out")
        chk=$(python3 - "$dir/log" $ack <<'PY' 2>&1
import sys
data = open(sys.argv[1], "rb").read()
n, synced = (int(sys.argv[2]), sys.argv[3] == "True") if len(sys.argv) > 3 else (0, True)
whole = len(data) // 65536
good = all(data[i * 65536:(i + 1) * 65536] == (b"%08d" % i) * 8192 for i in range(whole)) and \
       data[whole * 65536:] == ((b"%08d" % whole) * 8192)[:len(data) - whole * 65536]
print("file %d bytes, prefix %s, complete %s" % (len(data), good, len(data) >= n * 65536 or not synced))
PY
)
        echo "$cfg: exit $rc: $(printf '%s' "$out" | tr '\n' ' ')-- $chk"
        if [ $rc -ne 0 ]; then echo "FAIL: $cfg: the program died (exit $rc; 135 = SIGBUS)"; fails=1; continue; fi
        [ -n "$ack" ] || { echo "FAIL: $cfg: no ENOSPC"; fails=1; }
        grep -q "prefix True, complete True$" <<<"$chk" ||
            { echo "FAIL: $cfg: bytes that were not written, or a successful fsync that lost acknowledged bytes"; fails=1; }
        continue
    fi
    out=$("${pre[@]}" python3 - "$dir/log" <<'PY' 2>&1
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
n = 0
while True:
    rec = (b"%08d" % n) * 512                          # 4 KiB, numbered
    try:
        w = os.write(fd, rec)
        if w != len(rec): print("short write %d" % w); break
        os.fdatasync(fd)
    except OSError as e:
        print("error %s after %d records" % (errno.errorcode.get(e.errno, e.errno), n)); break
    n += 1
try:
    os.close(fd)
except OSError as e:                                   # stage: the write the fdatasync refused is still staged
    print("close: %s" % errno.errorcode.get(e.errno, e.errno))
data = open(sys.argv[1], "rb").read()
good = all(data[i * 4096:(i + 1) * 4096] == (b"%08d" % i) * 512 for i in range(n))
print("acknowledged %d size %d intact %s" % (n, len(data), good))
PY
)
    rc=$?
    echo "$cfg: exit $rc: $(printf '%s' "$out" | tr '\n' ' ')"
    if [ $rc -ne 0 ]; then echo "FAIL: $cfg: the program died (exit $rc; 135 = SIGBUS)"; fails=1; continue; fi
    grep -q "error ENOSPC" <<<"$out" || { echo "FAIL: $cfg: no ENOSPC"; fails=1; }
    grep -q "^acknowledged .* intact True$" <<<"$out" ||
        { echo "FAIL: $cfg: an acknowledged record is missing or wrong"; fails=1; }
done
[ $fails -eq 0 ] || dk_fail "a full $medium did not give the kernel's answer under some append strategy (above)"
echo "ok: every strategy ends with ENOSPC and keeps every acknowledged record${burst:+ (burst: none lost unless the fsync said so)}"
