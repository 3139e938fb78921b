#!/usr/bin/env bash
# 4 KiB appends with fsync every 10 (dk_bench_posix --tests append), the kernel against daxkit variants,
# in a chosen memory state before every pass, in ABBA order (pair 1: kernel first, pair 2: kernel last,
# ...), with each pass's wall time and process CPU time. Issue 2: on huge tmpfs the kernel's and the
# library's append passes were bimodal (0.014 s or 0.05-0.30 s for the same pass) -- a pass pays for every
# 2 MiB page its file gets, and what a fresh page costs depends on where the allocator took it from:
#
#   warm     right before the pass, a file of WARM_MIB is written and removed on the same medium: the pass
#            gets pages that were just in use (what a machine that keeps recycling memory looks like);
#   cold     the pass waits COLD_WAIT_S seconds first: free memory that long idle has been handed back to
#            the host by the guest's free page reporting (virtio-balloon, page_reporting_order=11 here, a
#            2 s delay), and the first store into each such page costs the host's fault;
#   compact  `echo 1 > /proc/sys/vm/compact_memory` first (session 8's "after compaction" runs).
#
# Usage: bench/append_memstate.sh BUILD_DIR OUT_CSV
# Environment: STATES ["warm cold"], PAIRS [5], VARIANTS ["posix-stage-auto"] (micro.sh's names:
# mode-append-persist, extendkeep = extend with DAXKIT_EXTEND_SYNC=keep; a suffix ":NAME=VALUE[:...]" sets
# DAXKIT_NAME for that variant, e.g. posix-stage-auto:STAGE_RECYCLE=0), MEDIUM [hugetmpfs], OPS [32768],
# COLD_WAIT_S [4], WARM_MIB [256]. Rows: state,pair,slot,variant,wall_s,cpu_s,median_ns,fsync_median_ns;
# a summary per state on stdout (bench/append_memstate_summary.py). cpu_s is the process's CPU time (perf
# stat task-clock, all its threads). Exit 77 when the medium is unavailable; needs perf (linux-perf).
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
OUT=${2:?out csv}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
STATES=${STATES:-"warm cold"}
PAIRS=${PAIRS:-5}
VARIANTS=${VARIANTS:-posix-stage-auto}
MEDIUM=${MEDIUM:-hugetmpfs}
OPS=${OPS:-32768}
COLD_WAIT_S=${COLD_WAIT_S:-4}
WARM_MIB=${WARM_MIB:-256}
BENCH=$BUILD/bin/dk_bench_posix
CLI=$BUILD/bin/daxkit
[ -x "$BENCH" ] || dk_fail "$BENCH missing; build first"
command -v perf > /dev/null || dk_skip "perf missing (apt-get install linux-perf)"

dk_media_mount "$MEDIUM" 2G > /dev/null
DIR=$DK_MNT/bench
mkdir -p "$DIR"

prepare() {
    case $1 in
    warm) dd if=/dev/zero of="$DK_MNT/warm" bs=1M count="$WARM_MIB" status=none && rm -f "$DK_MNT/warm" ;;
    cold) sleep "$COLD_WAIT_S" ;;
    compact) echo 1 > /proc/sys/vm/compact_memory ;;
    *) dk_fail "unknown state $1 (warm, cold, compact)" ;;
    esac
}

# One pass of variant $1: prints "wall_s,cpu_s,median_ns,fsync_median_ns".
pass() {
    local v=$1 cmd=("$BENCH" --dir "$DIR" --tests append --ops "$OPS" --variant "$1")
    if [ "$v" != kernel ]; then
        local mode app persist keep=cut name=${v%%:*} extra=()
        [ "$name" != "$v" ] && IFS=: read -ra extra <<< "${v#*:}"
        IFS=- read -r mode app persist <<< "$name"
        [ "$app" = extendkeep ] && app=extend keep=keep
        cmd=(env DAXKIT_EXTEND_SYNC=$keep "${extra[@]/#/DAXKIT_}" "$CLI" run --mode "$mode" --dir "$DIR" --append "$app" --persist "$persist" -- "${cmd[@]}")
    fi
    # perf stat's task-clock: every thread of the process (the library's background thread too), in ms.
    perf stat -x, -e task-clock -o "$DK_MNT/time" -- "${cmd[@]}" > "$DK_MNT/row" 2> "$DK_MNT/err" ||
        { cat "$DK_MNT/err" >&2; dk_fail "$v failed"; }
    local cpu
    cpu=$(awk -F, '/task-clock/{printf "%.4f", $1 / 1000}' "$DK_MNT/time")
    awk -F, -v cpu="$cpu" '{printf "%s,%s,%s,%s\n", $12, cpu, $8, $11}' "$DK_MNT/row"
}

[ -s "$OUT" ] || echo "state,pair,slot,variant,wall_s,cpu_s,median_ns,fsync_median_ns" > "$OUT"
echo "bench/append_memstate: $MEDIUM, states '$STATES', $PAIRS pairs, variants '$VARIANTS', load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for state in $STATES; do
    for pair in $(seq 1 "$PAIRS"); do
        order=(kernel $VARIANTS)
        if [ $((pair % 2)) = 0 ]; then
            rev=()
            for ((i = ${#order[@]} - 1; i >= 0; i--)); do rev+=("${order[$i]}"); done
            order=("${rev[@]}")
        fi
        slot=0
        for v in "${order[@]}"; do
            slot=$((slot + 1))
            prepare "$state"
            echo "$state,$pair,$slot,$v,$(pass "$v")" >> "$OUT"
        done
    done
done
echo "bench/append_memstate: done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 "$SRC/bench/append_memstate_summary.py" "$OUT"
