#!/usr/bin/env bash
# Description: a strict parent's operation log is replayed after the parent dies, whoever inherited a
# descriptor of it (review 9, finding 11). The parent writes once (its log exists), forks a worker that
# sleeps (no exec), overwrites 8 KiB of 'A' with 'B' and is killed; recovery runs while the worker lives.
#   fork      the worker comes from fork() (the library's fork path): it must have closed its copy of the
#             log, so recovery replays the parent's log at once.
#   rawfork   the worker comes from the raw fork system call (no library code runs in it: it keeps the log's
#             flock taken): the log and its staging file must stay (not removed unreplayed by the staging
#             reclaim), and be replayed once the worker is gone.
#   child     a fork() worker that writes a file of its own under strict mode, acknowledged and waiting in its
#             staging file, then is killed after the parent: its own log is replayed (it got one).
# fork and rawfork with DAXKIT_STRICT_APPLY=write, the parent cut inside its second write after half of it was applied
# (crash point strict.write.half_applied: all 'A' or all 'B' after recovery, never torn), and with
# DAXKIT_STRICT_APPLY=checkpoint (the write acknowledged, waiting in the staging file: all 'B').
# Before the fix: the worker's inherited descriptor kept the log's lock; the reclaim found the parent's pool
# lock free and removed the log unreplayed: the file stayed torn ("BA"), or 'A' with the acknowledged 'B' lost.
# Usage: fork_log.sh (huge tmpfs). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

dk_need_python
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_media_mount hugetmpfs 1G >/dev/null
dir=$DK_MNT/managed
workers=()
dk_on_exit 'for p in "${workers[@]}"; do kill -9 "$p" 2>/dev/null; done'

prog='
import ctypes, os, signal, sys, time
d, how, pidfile = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(d + "/f", os.O_RDWR)
os.pwrite(fd, b"A" * 8192, 0)
if how == "rawfork":
    pid = ctypes.CDLL(None, use_errno=True).syscall(57)   # SYS_fork (x86-64): no library code in the child
else:
    pid = os.fork()
if pid == 0:
    if how == "child":
        g = os.open(d + "/g", os.O_RDWR)
        os.pwrite(g, b"A" * 8192, 0)   # its log made and the file mapped: the next one waits (checkpoint)
        os.pwrite(g, b"C" * 8192, 0)
        open(pidfile + ".wrote", "w").write("1")
    time.sleep(60)
    os._exit(0)
open(pidfile, "w").write(str(pid))
if how == "child":
    while not os.path.exists(pidfile + ".wrote"): time.sleep(0.01)
fd2 = os.open(d + "/f", os.O_RDWR)   # a descriptor of its own (the inherited one is the kernel'"'"'s now)
os.pwrite(fd2, b"B" * 8192, 0)
os.kill(os.getpid(), signal.SIGKILL)
'
[ "$(uname -m)" = x86_64 ] || dk_skip "the raw fork system call number is x86-64's"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
content() { tr -s 'ABC' < "$1"; }
# (child: checkpoint only -- the crash point's count is inherited by fork, so the worker's own write would be
# the one cut)
for variant in fork:write fork:checkpoint rawfork:write rawfork:checkpoint child:checkpoint; do
    how=${variant%%:*} apply=${variant#*:} fails0=$fails
    crash=
    [ $apply = write ] && crash=strict.write.half_applied:2
    rm -rf "$dir"; mkdir -p "$dir"
    head -c 8192 /dev/zero | tr '\0' A > "$dir/f"
    head -c 8192 /dev/zero | tr '\0' A > "$dir/g"
    rm -f "$DK_MNT/pid" "$DK_MNT/pid.wrote"
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_STRICT_APPLY=$apply \
        DAXKIT_MAP_AFTER_IOS=0 DAXKIT_TEST_CRASH=$crash python3 -c "$prog" "$dir" $how "$DK_MNT/pid" 2>"$DK_MNT/err"
    [ -s "$DK_MNT/pid" ] || { fail "$how/$apply: the parent wrote no worker pid: $(cat "$DK_MNT/err")"; continue; }
    w=$(cat "$DK_MNT/pid")
    workers+=("$w")
    kill -0 "$w" 2>/dev/null || { fail "$how/$apply: the worker $w is not alive"; continue; }
    want=B
    [ -n "$crash" ] && want="A or B"
    # crash point check: the write cut after half of it was applied leaves "BA" before recovery
    if [ -n "$crash" ] && [ "$(content "$dir/f")" != BA ]; then
        fail "$how/$apply: before recovery the file holds $(content "$dir/f"), want BA (crash points compiled out?)"
        continue
    fi
    before=$(content "$dir/f")
    out=$("$cli" recover "$dir" 2>&1)
    got=$(content "$dir/f")
    logs=$(ls "$dir/.daxkit" | grep -c '\.log$')
    if [ $how = rawfork ]; then
        # The log is still locked by the raw child: kept (with its staging file) for a later recovery.
        [ "$logs" -ge 1 ] || fail "$how/$apply: the parent's log was removed while a raw child held it (unreplayed): file $got; recover: $out"
        [ $apply = checkpoint ] && ! grep -q '\.strict\.stg$' <<<"$(ls "$dir/.daxkit")" &&
            fail "$how/$apply: the parent's strict staging file was removed while its log waits"
        dk_kill_wait "$w"
        out=$("$cli" recover "$dir" 2>&1)
        got=$(content "$dir/f")
    fi
    case "$got" in
        B) ;;
        A) [ -n "$crash" ] || fail "$how/$apply: the file holds A after recovery: the acknowledged B is lost; recover: $out" ;;
        *) fail "$how/$apply: the file holds $got after recovery (torn; want $want); recover: $out"; continue ;;
    esac
    if [ $how = child ]; then
        [ "$(content "$dir/g")" = A ] || echo "note: g holds $(content "$dir/g") before the worker's recovery (its write was applied at once)"
        # The parent's recovery must not have touched the live child's log; its own crash is repaired.
        dk_kill_wait "$w"
        out=$("$cli" recover "$dir" 2>&1)
        [ "$(content "$dir/g")" = C ] || fail "$how/$apply: the worker's acknowledged write of g is lost: g holds $(content "$dir/g"); recover: $out"
    fi
    # (a parked log -- a clean exit's, for the next process -- holds no record: docs/oplog.md "Parked logs")
    [ "$(ls "$dir/.daxkit" | grep -v '^parked-' | grep -c '\.log$')" = 0 ] || fail "$how/$apply: a log is left after every process is gone: $(ls "$dir/.daxkit")"
    [ $fails = "$fails0" ] && echo "ok: $how/$apply: f holds $before before recovery, $got after$([ $how = child ] && echo ", g holds C")"
done
[ $fails -eq 0 ] || exit 1
