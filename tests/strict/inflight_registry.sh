#!/usr/bin/env bash
# Description: the in-flight registry (src/upath/inflight.c; review 13, finding 1, addendum b). A strict
# survivor that takes a lock after another strict process died in the middle of a write recovers the dead
# process's log before the lock call returns: it reads the write all or nothing, and nothing of the dead
# process is replayed later over what it writes next. Cases (huge tmpfs, DAXKIT_PERSIST=flush):
#   dead-flock   the victim is cut inside its second 8 KiB write (crash point strict.write.half_applied: 'BA'
#                in the file); the survivor, started before the death, takes flock on a managed lock file:
#                it must read all 'A' or all 'B', and the victim's log must be gone (recovered by the survivor).
#   dead-fcntl   the same with a POSIX record lock (F_SETLKW) on a file outside the managed directory.
#   dead-datalock  the same with a POSIX lock on f itself: the replay's descriptor of f must not be closed
#                (a close drops every POSIX lock the process holds on the file: SQLite locks its database).
#   live         the writer lives (sleeps): its slot is held without the mark, the survivor's lock recovers
#                nothing (the writer's log stays) and waits for nothing.
#   thread       a thread of a live writer writes and ends: its slot is given back unmarked (no false alarm).
#   exec         the writer execs (the kernel marks its slot like a death): the survivor's lock finds the log
#                with nothing to replay (exec is a checkpoint), removes it, and returns at once; the file keeps
#                the writer's bytes.
# Without the registry (negative control, stated in the commit): dead-* read 'BA' and the victim's log stays.
# Usage: inflight_registry.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

dk_need_python
lib=$(dk_lib) || exit 1
dk_media_mount hugetmpfs 1G >/dev/null
dir=$DK_MNT/managed
st=$DK_MNT/state
pids=()
dk_on_exit 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done'
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
content() { tr -s 'ABC' < "$1"; }
run() { # ENV... python3 ... (under daxkit, strict): exec, so that a background run's $! is the program
    exec env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_MAP_AFTER_IOS=0 "$@"
}
wait_file() { for _ in $(seq 1 300); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }

# The survivor: started before anything dies, a strict process with the file open; on "go" it takes the
# lock and reads f through the library, writes what it read to $st/read and what the area holds to $st/area.
survivor='
import fcntl, os, sys, time
d, st, how = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(d + "/f", os.O_RDWR)
os.pwrite(os.open(d + "/s", os.O_RDWR | os.O_CREAT), b"S", 0)   # strict: its own log and slot
open(st + "/ready", "w").write("1")
while not os.path.exists(st + "/go"): time.sleep(0.01)
t0 = time.monotonic()
if how == "fcntl":
    lk = os.open(st + "/lockfile", os.O_RDWR | os.O_CREAT)
    fcntl.lockf(lk, fcntl.LOCK_EX)
elif how == "datalock":
    fcntl.lockf(fd, fcntl.LOCK_EX)   # on the file the replay writes: its close must not drop this lock
else:
    lk = os.open(d + "/lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lk, fcntl.LOCK_EX)
dt = time.monotonic() - t0
data = os.pread(fd, 8192, 0)
logs = sorted(n for n in os.listdir(d + "/.daxkit") if n.endswith(".log"))
open(st + "/read", "w").write(data.decode())
open(st + "/area", "w").write(" ".join(logs))
open(st + "/lock_s", "w").write("%.3f" % dt)
if how == "datalock":
    while not os.path.exists(st + "/checked"): time.sleep(0.01)
'
# The writer: writes 8 KiB of A, then (how) 8 KiB of B cut by the crash point / sleeps / from a thread / execs.
writer='
import os, sys, threading, time
d, st, how = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(d + "/f", os.O_RDWR)
if how == "thread":
    t = threading.Thread(target=lambda: os.pwrite(fd, b"A" * 8192, 0))
    t.start(); t.join()
else:
    os.pwrite(fd, b"A" * 8192, 0)
if how == "dead":
    os.pwrite(fd, b"B" * 8192, 0)    # cut by DAXKIT_TEST_CRASH
    open(st + "/not-cut", "w").write("1")
    os._exit(3)
open(st + "/wrote", "w").write("1")
if how == "exec":
    os.execvp("sleep", ["sleep", "60"])
time.sleep(60)
'
# The registry's slots (inflight.c's layout): "slot state futex_owner_died pid log" per slot ever used (all
# slots, not only those below the high-water mark: it comes down as top slots are freed).
slots='
import struct, sys, os
p = sys.argv[1]
b = open(p, "rb").read()
magic, ver, nslots, hw = struct.unpack_from("<QIII", b, 0)
for k in range(nslots):
    o = 256 + 256 * k
    if struct.unpack_from("<I", b, o + 40)[0] == 0: continue
    word, = struct.unpack_from("<I", b, o)
    state, pid = struct.unpack_from("<II", b, o + 40)
    log = b[o + 64:o + 192].split(b"\0")[0].decode()
    print(k, state, 1 if word & 0x40000000 else 0, pid, log)
'
reg() { python3 -c "$slots" "$dir/.daxkit/inflight.$(id -u).reg"; }

# Whether another process can take a POSIX lock on f now (the survivor holds one: it must not).
trylock='
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except OSError:
    print("held")
'

for case in dead-flock dead-fcntl dead-datalock live thread exec; do
    fails0=$fails
    rm -rf "$dir" "$st"; mkdir -p "$dir" "$st"
    head -c 8192 /dev/zero > "$dir/f"
    how=flock; [ $case = dead-fcntl ] && how=fcntl; [ $case = dead-datalock ] && how=datalock
    run python3 -c "$survivor" "$dir" "$st" $how 2>"$st/serr" &
    spid=$!; pids+=($spid)
    wait_file "$st/ready" || { fail "$case: the survivor did not start: $(cat "$st/serr")"; continue; }
    wcase=${case%%-*}
    crash=; [ $wcase = dead ] && crash=strict.write.half_applied:2
    run DAXKIT_TEST_CRASH=$crash python3 -c "$writer" "$dir" "$st" $wcase 2>"$st/werr" &
    wpid=$!; pids+=($wpid)
    if [ $wcase = dead ]; then
        wait $wpid; rc=$?
        [ $rc = 137 ] || { fail "$case: the writer exited $rc, not killed at its crash point: $(cat "$st/werr")"; continue; }
        [ "$(content "$dir/f")" = BA ] || { fail "$case: the cut write left $(content "$dir/f"), want BA (crash points compiled out?)"; continue; }
    else
        wait_file "$st/wrote" || { fail "$case: the writer did not write: $(cat "$st/werr")"; continue; }
        if [ $wcase = exec ]; then # the exec done: the new program's name (set after the old one's memory went)
            for _ in $(seq 800); do [ "$(cat /proc/$wpid/comm 2>/dev/null)" = sleep ] && break; sleep 0.025; done
            [ "$(cat /proc/$wpid/comm 2>/dev/null)" = sleep ] || { fail "$case: the writer did not exec within 20 s"; continue; }
        fi
    fi
    before=$(reg)
    wlog=$(echo "$before" | awk -v p=$wpid '$4 == p {print $5; exit}')
    [ -n "$wlog" ] || { fail "$case: no registry slot of the writer (pid $wpid): $before"; continue; }
    case $wcase in
        dead|exec) echo "$before" | awk -v p=$wpid '$4 == p && $3 == 1 {f=1} END {exit !f}' ||
                       fail "$case: the writer's slot ($wlog) is not marked dead: $before" ;;
        live|thread) echo "$before" | awk '$3 == 1 {f=1} END {exit f}' || fail "$case: a slot is marked dead while its process lives: $before"
                     [ $wcase = thread ] && { echo "$before" | awk -v p=$wpid '$4 == p && $2 == 3 {f=1} END {exit !f}' ||
                         fail "$case: the ended thread's slot ($wlog) was not given back (state 3): $before"; } ;;
    esac
    touch "$st/go"
    if [ $how = datalock ]; then
        wait_file "$st/lock_s" || { fail "$case: the survivor did not take its lock: $(cat "$st/serr")"; continue; }
        sleep 0.1
        [ "$(python3 -c "$trylock" "$dir/f")" = held ] ||
            fail "$case: the survivor's POSIX lock on f is gone after the replay (a close of the replay's descriptor dropped it)"
        touch "$st/checked"
    fi
    wait $spid || { fail "$case: the survivor failed: $(cat "$st/serr")"; continue; }
    read_=$(tr -s 'AB\0' 'AB\n' < "$st/read" | tr -d '\n')
    area=$(cat "$st/area")
    after=$(reg)
    case $wcase in
        dead) [ "$read_" = A ] || [ "$read_" = B ] || fail "$case: the survivor read '$read_' after its lock (want all A or all B: the op in flight recovered first)"
              case " $area " in *" $wlog "*) fail "$case: the dead writer's log $wlog is still there after the survivor's lock: $area" ;; esac
              echo "$after" | awk -v s=$spid '$3 == 1 && $4 != s {f=1} END {exit f}' || fail "$case: a dead mark is left after the survivor's lock: $after" ;;
        live) [ "$read_" = A ] || fail "$case: the survivor read '$read_', want A"
              case " $area " in *" $wlog "*) ;; *) fail "$case: the live writer's log $wlog is gone: $area" ;; esac ;;
        thread) [ "$read_" = A ] || fail "$case: the survivor read '$read_', want A"
                case " $area " in *" $wlog "*) ;; *) fail "$case: the live writer's log $wlog is gone: $area" ;; esac ;;
        exec) [ "$read_" = A ] || fail "$case: the survivor read '$read_', want A (the exec'd writer's bytes)"
              case " $area " in *" $wlog "*) fail "$case: the exec'd writer's log $wlog is still there: $area" ;; esac
              echo "$after" | awk -v s=$spid '$3 == 1 && $4 != s {f=1} END {exit f}' || fail "$case: a dead mark is left after the survivor's lock: $after" ;;
    esac
    grep -q "still held" "$st/serr" && fail "$case: the survivor waited for a live log: $(cat "$st/serr")"
    [ $fails = "$fails0" ] && echo "ok: $case: survivor read $read_ (lock $(cat "$st/lock_s") s), area after: ${area:-(no log)}"
    kill -9 $wpid 2>/dev/null; wait $wpid 2>/dev/null
done
[ $fails -eq 0 ] || exit 1
