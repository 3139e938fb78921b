#!/usr/bin/env bash
# Strict recovery rate, two builds interleaved on one crashed log (session 10: recovery allocates what it
# stores -- replay_alloc's fallocate per 2 MiB step -- against the store-only replay before it).
# Before each recovery one strict process (build B's library) writes N records (40 B overwrites spread
# over a 4 MiB file, as bench/strict.sh's recovery part, or SHAPE=append: 4 KiB appends growing a new file)
# and is SIGKILLed; `daxkit recover --json` of build A, then of build B, is timed (strict_replay_us,
# records replayed), RUNS times. Prints one line per run and the medians (records per second) and
# the load average.
# Usage: bench/strict_recovery_ab.sh BUILD_A BUILD_B [N=500000] [RUNS=7]
#        Environment: MEDIUM [hugetmpfs] (tests/harness/media.sh kinds), SHAPE [overwrite|append]
set -euo pipefail
A=$(cd "${1:?build A}" && pwd)
B=$(cd "${2:?build B}" && pwd)
N=${3:-500000}
RUNS=${4:-7}
MEDIUM=${MEDIUM:-hugetmpfs}
SHAPE=${SHAPE:-overwrite}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$B DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
dk_media_mount "$MEDIUM" 2G > /dev/null
dir=$DK_MNT/recover
crash() {  # makes the crashed log afresh (a copy of the directory would give the file another inode
           # number: its records would find no file, and the run would time the misses)
    rm -rf "$dir" && mkdir -p "$dir"
    # DAXKIT_STRICT_MARKS=0 (session 13): a log as a power loss leaves it -- with completion marks recovery in
    # this boot replays none of these completed writes, and the run would time no replay.
    env LD_PRELOAD="$B/lib/libdaxkit.so" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_STRICT_MARKS=0 python3 -c '
import os, signal, sys
n, shape = int(sys.argv[2]), sys.argv[3]
fd = os.open(sys.argv[1] + "/f", os.O_RDWR | os.O_CREAT, 0o644)
if shape == "append":
    b = b"a" * 4096
    for i in range(n): os.write(fd, b)
else:
    os.ftruncate(fd, 1 << 22); os.fsync(fd)
    b = b"r" * 40
    for i in range(n): os.pwrite(fd, b, (i * 64) % (1 << 22))
os.kill(os.getpid(), signal.SIGKILL)' "$dir" "$N" "$SHAPE" 2>/dev/null || true
}
rate() {  # BUILD -> records per second of one recovery of a fresh crashed log, and records replayed
    crash
    "$1/bin/daxkit" recover --json "$dir" | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
print("%.0f %d" % (r["strict_replayed"] / (r["strict_replay_us"] / 1e6), r["strict_replayed"]))'
}
ra=() rb=()
for i in $(seq "$RUNS"); do
    read -r x na < <(rate "$A")
    read -r y nb < <(rate "$B")
    ra+=("$x") rb+=("$y")
    echo "run $i: A $x records/s ($na records), B $y records/s ($nb records)"
done
med() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "medium $MEDIUM, shape $SHAPE, N $N: median A $(med "${ra[@]}") records/s, B $(med "${rb[@]}") records/s; load: $(cut -d' ' -f1-3 /proc/loadavg)"
