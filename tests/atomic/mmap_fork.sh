#!/usr/bin/env bash
# Description: DAXKIT_ATOMIC_MMAP and fork (review 10, finding 5), with python's mmap (an unmodified program).
#   fork   P1 maps f (tmpfs: undo, stores in place), stores 'A' + msync, forks a worker that sleeps (no exec),
#          stores 'B' without msync and is killed. While the worker lives, P2 maps f: it must see 'A' (the
#          crashed epoch rolled back: the worker holds no descriptor or mapping of the log, so its flock is
#          free), store 'C' + msync. The worker exits; P3 must see 'C'.
#          Before the fix: the worker's copy of the log's descriptor kept the flock: P2's mmap fell back to
#          the kernel silently and saw 'B', and after the worker's exit P3's recovery rolled 'C' back to 'A'.
#   busy   P1 maps f and sleeps holding it; P2 (DAXKIT_ATOMIC_WAIT_MS=50) maps f: its mmap must fail with
#          EBUSY after the wait, not map the file through the kernel (unrecovered, msync not atomic).
# Usage: mmap_fork.sh (tmpfs). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

dk_need_root
dk_need_python
lib=$(dk_lib) || exit 1
dk_media_mount tmpfs 256M >/dev/null
M=$DK_MNT
pids=()
dk_on_exit 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done'
run() { env LD_PRELOAD="$lib" DAXKIT_DIR="$M" DAXKIT_ATOMIC_MMAP='*.dat' "$@"; }

prog='
import errno, mmap, os, signal, sys, time
path, step = sys.argv[1], sys.argv[2]
fd = os.open(path, os.O_RDWR)
try:
    m = mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
except OSError as e:
    print("mmap-error " + errno.errorcode.get(e.errno, str(e.errno))); sys.exit(0)
if step == "crash":
    m[0:4096] = b"A" * 4096; m.flush()
    pid = os.fork()
    if pid == 0:
        time.sleep(120); os._exit(0)
    open(sys.argv[3], "w").write(str(pid))
    m[0:4096] = b"B" * 4096
    os.kill(os.getpid(), signal.SIGKILL)
elif step == "store":
    print("sees " + chr(m[0])); m[0:4096] = sys.argv[3].encode() * 4096; m.flush(); print("stored")
elif step == "hold":
    open(sys.argv[3], "w").write(str(os.getpid()))
    time.sleep(120)
else:
    print("sees " + chr(m[0]))
m.close()
'
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# fork
head -c 4096 /dev/zero > "$M/f.dat"
run python3 -c "$prog" "$M/f.dat" crash "$M/child.pid" > "$M/crash.out" 2>&1
[ -s "$M/child.pid" ] || dk_fail "the crashing program wrote no worker pid: $(cat "$M/crash.out")"
w=$(cat "$M/child.pid")
pids+=("$w")
kill -0 "$w" 2>/dev/null || dk_fail "the worker $w is not alive"
out=$(run python3 -c "$prog" "$M/f.dat" store C 2>&1)
grep -q '^sees A$' <<<"$out" && grep -q '^stored$' <<<"$out" ||
    fail "fork: the restarted program (worker alive) must see A and store C: $out"
dk_kill_wait "$w"
out=$(run python3 -c "$prog" "$M/f.dat" read 2>&1)
grep -q '^sees C$' <<<"$out" || fail "fork: after the worker's exit a later program must see C (the acknowledged msync): $out"
[ $fails = 0 ] && echo "ok: fork: the restart saw A and stored C while the worker lived; C stands after it"

# busy
fails0=$fails
head -c 4096 /dev/zero | tr '\0' D > "$M/g.dat"
rm -f "$M/hold.pid"
run python3 -c "$prog" "$M/g.dat" hold "$M/hold.pid" > "$M/hold.out" 2>&1 &
pids+=("$!")
for _ in $(seq 500); do [ -s "$M/hold.pid" ] && break; sleep 0.02; done
[ -s "$M/hold.pid" ] || dk_fail "the holding program did not start: $(cat "$M/hold.out")"
out=$(run DAXKIT_ATOMIC_WAIT_MS=50 python3 -c "$prog" "$M/g.dat" store E 2>&1)
grep -q '^mmap-error EBUSY$' <<<"$out" ||
    fail "busy: a second program's mmap of a file mapped failure-atomically elsewhere must fail with EBUSY: $out"
[ "$(head -c 1 "$M/g.dat")" = D ] || fail "busy: the second program changed the file: $(head -c 1 "$M/g.dat")"
[ $fails = "$fails0" ] && echo "ok: busy: the second mmap failed with EBUSY after DAXKIT_ATOMIC_WAIT_MS"
[ $fails -eq 0 ] || exit 1
echo "PASS"
