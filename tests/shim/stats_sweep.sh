#!/usr/bin/env bash
# Description: stats files of killed processes are swept (review 9, finding 12). Every daxkit process keeps
# /dev/shm/daxkit/stats.PID open with an flock on it; a clean exit removes it, a SIGKILL (or a crash, an OOM
# kill) left it for good. `daxkit stats` and the daxkit start-ups (at most one a second: a start within a
# second of the last sweep does not sweep) remove the files whose pid no process here has and whose lock is
# free; a live process's file stays -- also one whose pid is unknown here but whose lock is held (a process
# of another pid namespace: simulated with flock(1) on a file named after a pid above pid_max). Background
# processes write nowhere: ctest waits for whoever holds its output.
# The files go to a directory of the test's own (DAXKIT_STATS_DIR): in /dev/shm/daxkit every daxkit process
# of a parallel test run sweeps, and took the killed processes' files before this test could look.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_need_cmd flock
dk_need_python
dk_managed_dir tmpfs >/dev/null
dir=$DK_DIR
S=$DK_MNT/stats
export DAXKIT_STATS_DIR=$S # the library and `daxkit stats` alike
run=(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_STATS=1) # a simple command: $! is the process's pid
pids=()
: >"$DK_MNT/stats_sweep.unmanaged"
dk_on_exit 'kill -9 "${pids[@]}" 2>/dev/null; rm -f "$S/stats.4194305" "$S/stats.4194306" "$S/stats.4194307"'
wait_file() { for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
# A daxkit process that opens a managed file -- its stats file is made then (session 16: one that never
# does has none) -- and sleeps; a simple command: $! is its pid.
sleeper=("${run[@]}" python3 -c 'import os, sys, time
open(os.path.join(sys.argv[1], "f%d" % os.getpid()), "w").close()
time.sleep(60)' "$dir")

"${sleeper[@]}" >/dev/null 2>&1 & live=$!; pids+=($live)
"${sleeper[@]}" >/dev/null 2>&1 & dead1=$!; pids+=($dead1)
"${sleeper[@]}" >/dev/null 2>&1 & dead2=$!; pids+=($dead2)
"${run[@]}" sleep 60 >/dev/null 2>&1 & idle=$!; pids+=($idle)
for p in $live $dead1 $dead2; do wait_file $S/stats.$p || dk_fail "no stats file for daxkit process $p in DAXKIT_STATS_DIR"; done
[ ! -e /dev/shm/daxkit/stats.$live ] || dk_fail "DAXKIT_STATS_DIR=$S set, yet /dev/shm/daxkit/stats.$live was made"
[ ! -e $S/stats.$idle ] || dk_fail "daxkit process $idle never opened a managed file, yet has a stats file"
# nor one that opened files outside the managed directory -- on its device, too -- and holds them open (with
# lazy adoption such a file is pending, looked at when first used: its open must not make a stats file)
"${run[@]}" bash -c 'exec 3</etc/hostname 4<"$1/../stats_sweep.unmanaged"; : >"$1/../outside.ready"; sleep 60 & wait' bash "$dir" \
    >/dev/null 2>&1 & outside=$!; pids+=($outside)
wait_file "$DK_MNT/outside.ready" || dk_fail "the process opening unmanaged files did not start"
[ ! -e $S/stats.$outside ] || dk_fail "daxkit process $outside opened only unmanaged files, yet has a stats file"
kill -9 $dead1 $dead2 $idle; wait $dead1 $dead2 $idle 2>/dev/null
[ -e $S/stats.$dead1 ] || dk_skip "a killed process's stats file is gone without a sweep"
# another namespace's live owner (its pid unknown here, its lock held) and a dead one (no lock)
cp $S/stats.$live $S/stats.4194306 # a stats file (its header), no lock
echo "a report of 2024" > $S/stats.4194307 # not daxkit's: a shared DAXKIT_STATS_DIR may hold such names
# The locker's file is a stats file (a header), so that only its lock keeps it: an empty file -- as it was
# until session 14 -- is not daxkit's and is kept whatever its lock, so that check could not fail. The locker
# is $!; it says so once the lock is held (a fixed 0.2 s sleep stood for that: under load the start-up below
# could have swept the file before flock(1) ran).
cp $S/stats.$live $S/stats.4194305
(exec 9<>$S/stats.4194305 && flock 9 && : >"$DK_MNT/locked" && exec sleep 60) >/dev/null 2>&1 & pids+=($!)
wait_file "$DK_MNT/locked" || dk_fail "flock(1) did not take the lock on $S/stats.4194305"

fails=0
check() { # check WHAT PATH present|absent
    if [ "$3" = present ] && [ ! -e "$2" ]; then echo "FAIL: $1: $2 was removed"; fails=$((fails + 1));
    elif [ "$3" = absent ] && [ -e "$2" ]; then echo "FAIL: $1: $2 was left"; fails=$((fails + 1));
    else echo "ok   $1: $2 $3"; fi
}
# Start-ups sweep at most once a second per directory (the last one's time: the mtime of $S/.sweep): a
# start that must sweep comes after the stamp is made old.
sweeping_start() { [ -e "$S/.sweep" ] && touch -m -d "@$(( $(date +%s) - 5 ))" "$S/.sweep"; "${run[@]}" true; }
sweeping_start # a daxkit process's start-up sweeps
check "start-up, killed process" $S/stats.$dead1 absent
check "start-up, killed process" $S/stats.$dead2 absent
check "start-up, unlocked file of an unknown pid" $S/stats.4194306 absent
check "start-up, a file that is not daxkit's" $S/stats.4194307 present
check "start-up, live process" $S/stats.$live present
check "start-up, locked file of an unknown pid" $S/stats.4194305 present

"${sleeper[@]}" >/dev/null 2>&1 & dead3=$!; pids+=($dead3)
wait_file $S/stats.$dead3 || dk_fail "no stats file for daxkit process $dead3"
kill -9 $dead3; wait $dead3 2>/dev/null
# within a second of a start-up's sweep, another start-up does not sweep (the stamp made fresh first)
[ "$(stat -c %a "$S/.sweep" 2>/dev/null)" = 666 ] || { echo "FAIL: $S/.sweep is not mode 666 (other users' start-ups could not stamp it)"; fails=$((fails + 1)); }
t0=$(date +%s%N); touch "$S/.sweep"; "${run[@]}" true; t1=$(date +%s%N)
if [ $(( (t1 - t0) / 1000000 )) -lt 900 ]; then check "start-up within a second of a sweep" $S/stats.$dead3 present
else echo "note: the start-up took $(( (t1 - t0) / 1000000 )) ms (load): the no-sweep-within-a-second check is not made"; fi
"$cli" stats --json >/dev/null # without the library: the command sweeps
check "daxkit stats, killed process" $S/stats.$dead3 absent
check "daxkit stats, live process" $S/stats.$live present
check "daxkit stats, locked file of an unknown pid" $S/stats.4194305 present
grep -q "\"pid\": $live" <<<"$("$cli" stats --json)" || { echo "FAIL: daxkit stats does not list live process $live"; fails=$((fails + 1)); }

# a fork child holds no lock on its parent's file (it closes the descriptor it inherited): the parent's file
# is swept after the parent is killed while the child lives on; the child's own file stays
"${run[@]}" python3 -c 'import os, sys, time
open(os.path.join(sys.argv[1], "parent"), "w").close()
c = os.fork()
if c == 0:
    open(os.path.join(sys.argv[1], "child"), "w").close(); time.sleep(60); os._exit(0)
print(c, flush=True); time.sleep(60)' "$dir" > "$DK_MNT/child" 2>/dev/null & parent=$!; pids+=($parent)
for _ in $(seq 100); do [ -s "$DK_MNT/child" ] && break; sleep 0.05; done
child=$(cat "$DK_MNT/child"); pids+=($child)
wait_file $S/stats.$child || dk_fail "no stats file for the fork child $child"
kill -9 $parent; wait $parent 2>/dev/null
sweeping_start
check "start-up, killed parent (its fork child alive)" $S/stats.$parent absent
check "start-up, the parent's live fork child" $S/stats.$child present

# .sweep is never followed (review 16, finding 3: the directory's owner could point it at another user's file,
# whose mtime every start-up then set): a link there leaves its target's times alone, and start-ups sweep
target=$DK_MNT/victim
touch -m -d "@1000000000" "$target"
rm -f "$S/.sweep"; ln -s "$target" "$S/.sweep"
"${sleeper[@]}" >/dev/null 2>&1 & dead4=$!; pids+=($dead4)
wait_file $S/stats.$dead4 || dk_fail "no stats file for daxkit process $dead4"
kill -9 $dead4; wait $dead4 2>/dev/null
"${run[@]}" true
[ "$(stat -c %Y "$target")" = 1000000000 ] && echo "ok   .sweep a symlink: its target's mtime unchanged" ||
    { echo "FAIL: .sweep a symlink: the start-up set its target's mtime"; fails=$((fails + 1)); }
check "start-up, .sweep a symlink: swept anyway" $S/stats.$dead4 absent
rm -f "$S/.sweep"

# a relative DAXKIT_STATS_DIR is a configuration error naming the variable, not a silent fallback
out=$(DAXKIT_STATS_DIR=relative/dir "${run[@]}" true 2>&1)
if grep -q "DAXKIT_STATS_DIR" <<<"$out" && grep -q "absolute path" <<<"$out"; then echo "ok   relative DAXKIT_STATS_DIR reported"
else echo "FAIL: relative DAXKIT_STATS_DIR not reported: $out"; fails=$((fails + 1)); fi
[ "$fails" = 0 ] || dk_fail "$fails check(s) failed"
echo "stats_sweep.sh: killed processes' stats files swept at start-up and by daxkit stats; live ones kept"
