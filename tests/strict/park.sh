#!/usr/bin/env bash
# Description: parked logs (docs/oplog.md "Parked logs", session 29) on MEDIUM (ARGV[1], default hugetmpfs). A
# strict process that ends cleanly leaves its log and staging file as parked-<uid>-<k>.{log,strict.stg}; the
# next strict process takes them instead of making new ones (no huge page cleared per file), with the next
# generation of the one in force, so nothing the earlier owner logged is ever valid again. Checks:
#   reuse     A writes and exits: the parked pair is there; B (a second process) logs into the same inode, and
#             its completion marks take 4 KiB pages, not a 2 MiB one (huge tmpfs).
#   adopted   B's acknowledged 4 KiB overwrite waits in the adopted staging file (DAXKIT_STRICT_APPLY=checkpoint;
#             a first write of the range, in lower case, was applied at once) and B is killed: recovery (the next process's start) replays it from the adopted log -- the file
#             holds B's bytes. Negative control: DAXKIT_TEST_ADOPT_RESTART=1 (the adopter starts at generation 1,
#             as a new zeroed file would) loses B's write (ARGV[2] = negative: this mode passes only if it does).
#   SITE      for each crash site of parking and adoption: the process is killed there (its write acknowledged
#             at the park sites, in flight at the adoption sites), the next processes recover and work, the file
#             holds every acknowledged write and the in-flight one whole or not at all, and the area is left
#             with nothing but the registry and at most 4 parked pairs (no stray log, marks, staging, lock, tmp).
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:-hugetmpfs}
mode=${2:-check}
lib=$(dk_lib) || exit 1
py=$(dk_python)
dk_media_mount "$medium" 1G >/dev/null
uid=$(id -u)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# A strict program: python writing (os.pwrite) CHAR x LEN at OFF into DIR/f, then: exit (clean), or kill (SIGKILL
# after the write returned; the range written in lower case first, so that this write waits in the staging file),
# or hold (print the inode of its log and the blocks of its marks, then exit).
prog='
import os, signal, sys, glob
d, ch, n, off, then = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
fd = os.open(d + "/f", os.O_RDWR | os.O_CREAT, 0o644)
if then == "kill": # first the same range in lower case: applied at once (the file mapped), so the next one waits
    os.pwrite(fd, ch.lower() * n, off)
os.pwrite(fd, ch * n, off)
if then == "hold":
    a = d + "/.daxkit/"
    logs = [p for p in glob.glob(a + "*.log") if not os.path.basename(p).startswith("parked-")]
    marks = glob.glob(a + "*.done")
    print("log-inode %d marks-blocks %d" % (os.stat(logs[0]).st_ino if logs else -1,
          os.stat(marks[0]).st_blocks if marks else -1))
if then == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
'
strict() { # DIR CHAR LEN OFF THEN [VAR=VALUE...]
    local d=$1 ch=$2 n=$3 off=$4 then=$5
    shift 5
    env LD_PRELOAD="$lib" DAXKIT_DIR="$d" DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_STRICT_APPLY=checkpoint "$@" \
        "$py" -c "$prog" "$d" "$ch" "$n" "$off" "$then"
}
# The file's bytes as runs "CHARxCOUNT ...".
runs() { "$py" -c 'import sys, itertools
b = open(sys.argv[1], "rb").read()
print(" ".join("%s%d" % (chr(k), len(list(g))) for k, g in itertools.groupby(b)))' "$1"; }
# Nothing but the registry and parked pairs (at most 4, each with its log) in DIR/.daxkit.
area_clean() {
    local d=$1 what=$2 n bad=""
    for n in $(ls -A "$d/.daxkit"); do
        case $n in
        inflight.*.reg) ;;
        parked-$uid-[0-3].log) # no head line of its generation in force: a record there would never be recovered
            [ "$("$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import strict_model as m
print(m.parked_log_records(sys.argv[2]))' "$here" "$d/.daxkit/$n")" = 0 ] || bad="$bad $n(holds records)" ;;
        parked-$uid-[0-3].strict.stg) [ -e "$d/.daxkit/${n%.strict.stg}.log" ] || bad="$bad $n(no log)" ;;
        *) bad="$bad $n" ;;
        esac
    done
    [ -z "$bad" ] || fail "$what: left in the area:$bad"
}

# reuse
d=$DK_MNT/reuse
mkdir -p "$d"
strict "$d" A 8192 0 exit
[ -e "$d/.daxkit/parked-$uid-0.log" ] && [ -e "$d/.daxkit/parked-$uid-0.strict.stg" ] ||
    fail "reuse: no parked pair after a clean exit: $(ls "$d/.daxkit")"
ino=$(stat -c %i "$d/.daxkit/parked-$uid-0.log" 2>/dev/null)
got=$(strict "$d" B 100 0 hold)
echo "reuse: parked log inode $ino, second process: $got"
case $got in "log-inode $ino "*) ;; *) fail "reuse: the second process did not log into the parked log ($got)" ;; esac
if [ "$medium" = hugetmpfs ]; then
    mb=${got##* }
    [ "$mb" -ge 0 ] && [ "$mb" -lt 4096 ] || fail "reuse: the marks file holds $mb blocks of 512 B (a 2 MiB page is 4096)"
fi
[ "$(stat -c %i "$d/.daxkit/parked-$uid-0.log" 2>/dev/null)" = "$ino" ] || fail "reuse: parked again under another inode"
area_clean "$d" reuse

# adopted (and the negative control)
d=$DK_MNT/adopted
mkdir -p "$d"
strict "$d" A 8192 0 exit
extra=()
[ "$mode" = negative ] && extra=(DAXKIT_TEST_ADOPT_RESTART=1)
strict "$d" B 4096 4096 kill "${extra[@]}"
env LD_PRELOAD="$lib" DAXKIT_DIR="$d" DAXKIT_MODE=strict /bin/true # recovery at start-up
got=$(runs "$d/f")
echo "adopted: after B's killed overwrite and recovery: $got"
if [ "$mode" = negative ]; then
    [ "$got" = "A4096 b4096" ] || fail "negative control: the adopter that restarts at generation 1 kept B's write ($got)"
    [ "$fails" = 0 ] && echo "ok: the negative control lost B's acknowledged write, as expected"
    exit $((fails != 0))
fi
[ "$got" = "A4096 B4096" ] || fail "adopted: B's acknowledged write was not recovered from the adopted log ($got)"
area_clean "$d" adopted

# crash sites: WHEN the write is acknowledged (park sites: at the exit) or in flight (adoption: the log's set-up)
for site in oplog.park.before_rename oplog.park.renamed strict.park.log_parked \
            oplog.adopt.before_rename strict.adopt.staging_moved oplog.adopt.renamed oplog.adopt.done; do
    d=$DK_MNT/$site
    mkdir -p "$d"
    strict "$d" A 8192 0 exit
    strict "$d" A 4096 8192 exit # a second generation of the parked pair (adopted and parked again)
    out=$(strict "$d" C 4096 4096 exit DAXKIT_TEST_CRASH="$site:1" 2>&1)
    case $out in *"crashpoint: $site#1"*) ;; *) fail "$site: not reached ($out)"; continue ;; esac
    strict "$d" D 100 12288 exit # recovery at this start, then a write and a clean exit
    strict "$d" E 100 12388 exit
    got=$(runs "$d/f")
    case $site in
    oplog.park.*|strict.park.*) want="A4096 C4096 A4096 D100 E100" ;;
    *) want="A4096 C4096 A4096 D100 E100|A12288 D100 E100" ;; # the write in flight: all or nothing
    esac
    echo "$site: $got"
    case "|$want|" in *"|$got|"*) ;; *) fail "$site: the file is '$got', expected one of '$want'" ;; esac
    area_clean "$d" "$site"
done
[ "$fails" = 0 ] && echo "ok"
exit $((fails != 0))
