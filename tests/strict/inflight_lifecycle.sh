#!/usr/bin/env bash
# Description: the in-flight registry's life (src/upath/inflight.c; review 14, findings 1, 2, 5 b and 8). A
# strict survivor's lock call recovers a writer that died in the middle of a write (crash point
# strict.write.half_applied: 'BA' in the file) -- also when:
#   removed-self   the survivor itself removed the root with its area and made it again (`rm -rf ROOT; mkdir
#                  ROOT`): it used to watch the unlinked registry for good (finding 1; read 'BA').
#   removed-other  another process removed and remade the root while the survivor had the registry mapped
#                  (attached by a lock call) -- the same, for every process of the user.
#   heldlog        a raw fork's child of the writer (no library code runs in it) still holds the dead writer's
#                  log: the survivor's first lock call waits 10 s and gives up (the op cannot be replayed
#                  under a live holder), but the slot keeps its mark; once the child is gone, the survivor's
#                  next lock call recovers (finding 5 b: the slot was cleared at the timeout, nothing recovered
#                  until the next start, read 'BA').
# And the costs:
#   noarea         2,000 lock calls of a strict process whose root has no area: at most one look for the area
#                  per millisecond, not an openat per lock call (finding 2; strace -f counts the openat calls).
#   burst          200 threads each hold a slot at once, then end: the registry's scan width (hw) comes back
#                  down to the slots still held (finding 8: it stayed at 200+ for good, +0.7 us per lock call).
# Usage: inflight_lifecycle.sh CASE. Exit 0 pass, 1 fail, 77 skip. Negative controls: commit message.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

case=${1:?case}
dk_need_python
lib=$(dk_lib) || exit 1
dk_managed_dir hugetmpfs 1G >/dev/null
dir=$DK_DIR
st=$DK_MNT/state
mkdir -p "$st"
pids=()
dk_on_exit 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done'
run() { env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_MAP_AFTER_IOS=0 "$@"; }
wait_file() { for _ in $(seq 1 600); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
content() { tr -s 'AB\0' 'AB\n' < "$1" | tr -d '\n'; }
# The registry's header: hw, removed (inflight.c's layout).
hw() { python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(24); print(struct.unpack_from("<I", b, 16)[0])' \
           "$dir/.daxkit/inflight.$(id -u).reg"; }

# The writer: 8 KiB of A, then 8 KiB of B cut by the crash point (killed, 137). heldlog: a raw fork's child
# keeps the writer's log (and its flock) open, its pid in $st/holder.
writer='
import ctypes, os, sys, time
d, st, how = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(d + "/f", os.O_RDWR)
os.pwrite(fd, b"A" * 8192, 0)
if how == "heldlog":
    pid = ctypes.CDLL(None, use_errno=True).syscall(57)   # SYS_fork (x86-64): no library code in the child
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    open(st + "/holder", "w").write(str(pid))
    fd = os.open(d + "/f", os.O_RDWR)   # a descriptor of its own (the inherited one is the kernel'"'"'s now)
os.pwrite(fd, b"B" * 8192, 0)    # cut by DAXKIT_TEST_CRASH
open(st + "/not-cut", "w").write("1")
os._exit(3)
'
write_and_die() { # how
    run DAXKIT_TEST_CRASH=strict.write.half_applied:2 python3 -c "$writer" "$dir" "$st" "$1" 2>"$st/werr"
    local rc=$?
    [ $rc = 137 ] || dk_fail "$case: the writer exited $rc, not killed at its crash point: $(cat "$st/werr")"
    [ "$(content "$dir/f")" = BA ] || dk_fail "$case: the cut write left $(content "$dir/f"), want BA (crash points compiled out?)"
}

case $case in
removed-self|removed-other)
    head -c 8192 /dev/zero > "$dir/f"
    # The survivor: (self) a strict write of its own, a lock call, then it removes the root and makes it again;
    # (other) a lock call only (the registry a first helper left attached, no file of its in the area), while a
    # second helper writes there, removes the root and makes it again. On "go" it locks and reads f.
    if [ $case = removed-other ]; then
        run python3 -c 'import os, sys; os.pwrite(os.open(sys.argv[1] + "/s", os.O_RDWR | os.O_CREAT), b"S", 0)' "$dir" ||
            dk_fail "$case: the first helper failed"
        [ -e "$dir/.daxkit/inflight.$(id -u).reg" ] || dk_fail "$case: no registry made by a strict write"
    fi
    run python3 -c '
import fcntl, os, sys, time
d, st, how = sys.argv[1], sys.argv[2], sys.argv[3]
lk = os.open(st + "/lk", os.O_RDWR | os.O_CREAT)
if how == "removed-self":
    os.pwrite(os.open(d + "/s", os.O_RDWR | os.O_CREAT), b"S", 0)
fcntl.flock(lk, fcntl.LOCK_EX); fcntl.flock(lk, fcntl.LOCK_UN)
if how == "removed-self":
    data = open(d + "/f", "rb").read()
    os.unlink(d + "/s"); os.unlink(d + "/f"); os.rmdir(d)
    if os.path.exists(d): sys.exit("the root was not removed")
    os.mkdir(d); open(d + "/f", "wb").write(data)
open(st + "/ready", "w").write("1")
while not os.path.exists(st + "/go"): time.sleep(0.01)
fcntl.flock(lk, fcntl.LOCK_EX)
open(st + "/read", "w").write(os.pread(os.open(d + "/f", os.O_RDONLY), 8192, 0).decode())
' "$dir" "$st" "$case" 2>"$st/serr" &
    spid=$!; pids+=($spid)
    wait_file "$st/ready" || dk_fail "$case: the survivor did not start: $(cat "$st/serr")"
    if [ $case = removed-other ]; then
        run python3 -c '
import os, sys
d = sys.argv[1]
data = open(d + "/f", "rb").read()
os.pwrite(os.open(d + "/s", os.O_RDWR | os.O_CREAT), b"S", 0)
os.unlink(d + "/s"); os.unlink(d + "/f"); os.rmdir(d)
if os.path.exists(d): sys.exit("the root was not removed")
os.mkdir(d); open(d + "/f", "wb").write(data)
' "$dir" 2>"$st/herr" || dk_fail "$case: the helper failed: $(cat "$st/herr")"
    fi
    write_and_die dead
    touch "$st/go"
    wait $spid || dk_fail "$case: the survivor failed: $(cat "$st/serr")"
    r=$(content "$st/read")
    [ "$r" = A ] || [ "$r" = B ] ||
        dk_fail "$case: the survivor read '$r' after its lock call (want all A or all B: the dead writer recovered first)"
    echo "ok: $case: the survivor read '$r' after the root was removed and made again"
    ;;
heldlog)
    [ "$(uname -m)" = x86_64 ] || dk_skip "the raw fork system call number is x86-64's"
    head -c 8192 /dev/zero > "$dir/f"
    run python3 -c '
import fcntl, os, sys, time
d, st = sys.argv[1], sys.argv[2]
lk = os.open(st + "/lk", os.O_RDWR | os.O_CREAT)
fcntl.flock(lk, fcntl.LOCK_EX); fcntl.flock(lk, fcntl.LOCK_UN)
open(st + "/ready", "w").write("1")
for n in (1, 2):
    while not os.path.exists(st + "/go%d" % n): time.sleep(0.01)
    t0 = time.monotonic()
    fcntl.flock(lk, fcntl.LOCK_EX)
    dt = time.monotonic() - t0
    open(st + "/read%d" % n, "w").write(os.pread(os.open(d + "/f", os.O_RDONLY), 8192, 0).decode())
    fcntl.flock(lk, fcntl.LOCK_UN)
    open(st + "/lock%d_s" % n, "w").write("%.2f" % dt)
' "$dir" "$st" 2>"$st/serr" &
    spid=$!; pids+=($spid)
    wait_file "$st/ready" || dk_fail "$case: the survivor did not start: $(cat "$st/serr")"
    write_and_die heldlog
    holder=$(cat "$st/holder"); pids+=($holder)
    touch "$st/go1"
    wait_file "$st/read1" || dk_fail "$case: the survivor's first lock call did not return: $(cat "$st/serr")"
    grep -q "still held" "$st/serr" || dk_fail "$case: the survivor did not wait for the held log (lock $(cat "$st/lock1_s" 2>/dev/null) s): $(cat "$st/serr")"
    r1=$(content "$st/read1")
    kill -9 "$holder"
    for _ in $(seq 100); do kill -0 "$holder" 2>/dev/null || break; sleep 0.05; done
    sleep 1.2 # (a given-up slot is looked at again at most once a second)
    touch "$st/go2"
    wait $spid || dk_fail "$case: the survivor failed: $(cat "$st/serr")"
    r2=$(content "$st/read2")
    [ "$r2" = A ] || [ "$r2" = B ] ||
        dk_fail "$case: after the log's holder died the survivor's next lock call read '$r2' (want all A or all B: the slot kept its mark and was recovered); first lock: '$r1' after $(cat "$st/lock1_s") s"
    logs=$(ls "$dir/.daxkit" | grep -c '\.log$')
    echo "ok: $case: first lock call gave up after $(cat "$st/lock1_s") s (read '$r1'); after the holder's death the next read '$r2' ($logs log(s) left)"
    ;;
noarea)
    dk_need_cmd strace
    run strace -f -e trace=openat -o "$st/trace" python3 -c '
import fcntl, os, sys, time
lk = os.open(sys.argv[1] + "/lk", os.O_RDWR | os.O_CREAT)
t0 = time.monotonic()
for i in range(2000): fcntl.flock(lk, fcntl.LOCK_EX); fcntl.flock(lk, fcntl.LOCK_UN)
open(sys.argv[1] + "/ms", "w").write("%d" % ((time.monotonic() - t0) * 1000))
' "$st" 2>"$st/serr" || dk_fail "$case: the program failed: $(cat "$st/serr")"
    main=$(awk 'NR == 1 { print $1 }' "$st/trace") # the program's main thread (the library's threads look at their start too)
    n=$(awk -v m="$main" '$1 == m && /\/\.daxkit".*ENOENT/ { n++ } END { print n + 0 }' "$st/trace")
    ms=$(cat "$st/ms")
    [ -e "$dir/.daxkit" ] && dk_fail "$case: a lock call made the area"
    [ "$ms" -lt 1900 ] || dk_skip "2,000 lock calls under strace took $ms ms (load): too slow to tell one look per call from one per millisecond"
    [ "$n" -le $((ms + 20)) ] ||
        dk_fail "$case: $n failing openat calls of the missing area for 2,000 lock calls in $ms ms (want at most one per millisecond)"
    echo "ok: $case: $n looks for the missing area in 2,000 lock calls ($ms ms under strace)"
    ;;
burst)
    run python3 -c '
import os, sys, threading
d = sys.argv[1]
fd = os.open(d + "/f", os.O_RDWR | os.O_CREAT)
os.pwrite(fd, b"M", 0)                    # the main thread: a slot held for the process'"'"'s life
n = 200
b = threading.Barrier(n)
def w(k):
    os.pwrite(fd, b"T", 1 + k)            # a slot held until the thread ends
    b.wait()
ts = [threading.Thread(target=w, args=(k,)) for k in range(n)]
for t in ts: t.start()
for t in ts: t.join()
open(sys.argv[2] + "/done", "w").write("1")
' "$dir" "$st" 2>"$st/serr" || dk_fail "$case: the program failed: $(cat "$st/serr")"
    h=$(hw)
    [ "$h" -le 4 ] || dk_fail "$case: after 200 threads held a slot each and ended, the registry's scan width is $h (want the slots still held: the lock hook loads that many futex words at every lock call)"
    echo "ok: $case: scan width $h after a burst of 200 threads"
    ;;
*) dk_fail "unknown case $case" ;;
esac
