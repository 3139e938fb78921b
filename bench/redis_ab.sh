#!/usr/bin/env bash
# Issue 2's redis AOF-always row as an estimator that resolves ~1% of the server's CPU (session 26).
# One redis-server (appendonly yes, appendfsync always) per variant, all started at once on a huge-page tmpfs
# this script mounts; then ROUNDS rounds, each a batch of N SETs of redis-benchmark (-c CLIENTS, 64 B values,
# keys from 100,000) to every server in turn (the order rotated from round to round). The figure is the
# server's CPU over a batch: the run time of its threads (/proc/PID/task/*/schedstat, ns) read just before and
# just after the batch while it waits in epoll -- no start-up, no perf, no tick sampling.
# Why batches and low quantiles: on this shared 2-vCPU machine a batch's CPU is not the work alone -- while
# another engineer's job shares the server's core, the same 5,000 SETs take 45-72 ms of CPU instead of 24-27
# (caches, the host's sibling thread). Contention comes in bursts: most batches see none. So each variant's
# figure is the lower quartile (q1) of its batches' CPU (bench/ab_summary.py; the median too), and the
# interval is a bootstrap over rounds (a round's batches lie within ~a second of each other): its half-width is
# what the run resolves within its servers. A server's own bias (where its memory landed) stays for its life:
# two servers of one kind differed by up to ~1.5% here, so give each kind two servers (NAME and NAME-b) and
# POOL=1 (ab_summary.py pools them): then the A/A pair kernel/kernel-b shows the spread too, and the interval
# covers it (150 rounds of 6 servers, ~6 minutes at load 20: +-1.2%). MODE=fresh instead starts a fresh
# server per variant and repetition (one batch of N each, REPS times: bench/perfile.sh's redis row's shape).
# Before the first round every server takes one uncounted batch (its AOF grown, its keys created).
# docs/benchmarks.md, "Session 26 (redis26)".
# Usage: bench/redis_ab.sh BUILD_DIR [OUT_CSV]
# Environment: ROUNDS (120), N (2000 SETs a batch), CLIENTS (4), MEDIUM (hugetmpfs), MODE (concurrent | fresh),
#   REPS (fresh: 21), VARIANTS ("kernel stage aof-keep"), REF (kernel: the ratios' reference), BASE_LIB
#   (another build's libdaxkit.so, for the base-* variants: before/after in one interleaved run), SERVER_CPU,
#   CLIENT_CPU (taskset -c lists for the servers and redis-benchmark; empty: not pinned), POOL (1: the summary
#   pools NAME-b, NAME-c, ... into NAME; the CSV keeps every server's rows).
# Variants: kernel (no library); preload (the library, nothing managed); stage (DAXKIT_DIR: the default, staged
#   appends); aof-keep (DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep: README's setting for an AOF
#   the server keeps to itself); stage-flush, aof-keep-flush (the same with DAXKIT_PERSIST=flush); base-stage,
#   base-aof-keep, base-preload (BASE_LIB's); any with a suffix "-b", "-c", ... (another server of that kind).
# Rows (OUT_CSV, appended; also printed): redis,variant,metric,value,round -- metric cpu_ms (the batch's),
#   us_per_set, wall_ms (the benchmark's).
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
OUT=${2:-/dev/null}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
REPS=${REPS:-21}
ROUNDS=${ROUNDS:-120}
N=${N:-2000}
CLIENTS=${CLIENTS:-4}
MEDIUM=${MEDIUM:-hugetmpfs}
MODE=${MODE:-concurrent}
VARIANTS=${VARIANTS:-"kernel stage aof-keep"}
REF=${REF:-kernel}
LIB=$(dk_lib) || exit 1
dk_need_cmd redis-server redis-benchmark redis-cli python3
AOFKEEP=(DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep)

echo "# start load: $(uptime | sed 's/.*load average: //')  commit $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo -)" \
    | tee -a "$OUT"
dk_media_mount "$MEDIUM" 4G > /dev/null
ROOT=$DK_MNT
ROWS=$(mktemp)
dk_on_exit rm -f "$ROWS"
declare -A PID PORT CPU WALL

# The run time of every thread of process $1, ns (field 1 of schedstat: sum_exec_runtime).
cpu_ns() {
    local s=0 f v
    for f in /proc/"$1"/task/*/schedstat; do
        read -r v _ < "$f" 2> /dev/null || continue
        s=$((s + v))
    done
    echo "$s"
}

# Starts variant $1's server in directory $2: PID[$1], PORT[$1].
start() {
    local v=$1 dir=$2 port i
    local env=(env -u DAXKIT_DIR -u LD_PRELOAD)
    case ${v%-[b-z]} in
    kernel) ;;
    preload) env+=(LD_PRELOAD="$LIB") ;;
    stage) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$dir") ;;
    aof-keep) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$dir" "${AOFKEEP[@]}") ;;
    stage-flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$dir" DAXKIT_PERSIST=flush) ;;
    aof-keep-flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$dir" "${AOFKEEP[@]}" DAXKIT_PERSIST=flush) ;;
    base-preload) env+=(LD_PRELOAD="${BASE_LIB:?variant $v needs BASE_LIB}") ;;
    base-stage) env+=(LD_PRELOAD="${BASE_LIB:?variant $v needs BASE_LIB}" DAXKIT_DIR="$dir") ;;
    base-aof-keep) env+=(LD_PRELOAD="${BASE_LIB:?variant $v needs BASE_LIB}" DAXKIT_DIR="$dir" "${AOFKEEP[@]}") ;;
    *) echo "redis_ab: unknown variant $v" >&2; exit 2 ;;
    esac
    rm -rf "$dir"
    mkdir -p "$dir"
    port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    "${env[@]}" ${SERVER_CPU:+taskset -c "$SERVER_CPU"} redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" \
        --appendonly yes --appendfsync always --save "" --daemonize no --logfile "$dir/redis.log" \
        > /dev/null 2>&1 < /dev/null &
    PID[$v]=$!
    PORT[$v]=$port
    for i in $(seq 1 400); do
        [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2> /dev/null)" = PONG ] && return 0
        sleep 0.025
    done
    echo "redis_ab: the $v server did not answer" >&2
    exit 1
}
stop() {
    redis-cli -h 127.0.0.1 -p "${PORT[$1]}" shutdown nosave > /dev/null 2>&1 || kill "${PID[$1]}" 2> /dev/null || true
    wait "${PID[$1]}" || true
}
stop_all() { local v; for v in "${!PID[@]}"; do stop "$v"; done; }
# One batch of N SETs to variant $1's server: its CPU and the wall time added to CPU[$1], WALL[$1].
batch() {
    local v=$1 c0 c1 t0 t1
    c0=$(cpu_ns "${PID[$v]}")
    t0=$(date +%s%N)
    ${CLIENT_CPU:+taskset -c "$CLIENT_CPU"} redis-benchmark -h 127.0.0.1 -p "${PORT[$v]}" -t set -n "$N" \
        -c "$CLIENTS" -r 100000 -d 64 -q > /dev/null 2>&1
    t1=$(date +%s%N)
    c1=$(cpu_ns "${PID[$v]}")
    CPU[$v]=$((${CPU[$v]:-0} + c1 - c0))
    WALL[$v]=$((${WALL[$v]:-0} + t1 - t0))
}
rows() { # ROUND: the round's rows for every variant
    local v
    for v in "${VS[@]}"; do
        awk -v v="$v" -v r="$1" -v c="${CPU[$v]}" -v w="${WALL[$v]}" -v n="$N" 'BEGIN {
            printf "redis,%s,cpu_ms,%.4f,%s\n", v, c / 1e6, r
            printf "redis,%s,us_per_set,%.4f,%s\n", v, c / 1e3 / n, r
            printf "redis,%s,wall_ms,%.3f,%s\n", v, w / 1e6, r }' >> "$ROWS"
        CPU[$v]=0 WALL[$v]=0
    done
}

read -r -a VS <<< "$VARIANTS"
K=${#VS[@]}
if [ "$MODE" = fresh ]; then
    for rep in $(seq 1 "$REPS"); do
        for ((k = 0; k < K; k++)); do
            v=${VS[$(((k + rep) % K))]}
            start "$v" "$ROOT/$v.$rep"
            batch "$v"
            stop "$v"
            unset "PID[$v]"
            rm -rf "${ROOT:?}/$v.$rep"
        done
        rows "$rep"
    done
else
    dk_on_exit stop_all
    for v in "${VS[@]}"; do start "$v" "$ROOT/$v"; done
    for v in "${VS[@]}"; do batch "$v"; CPU[$v]=0 WALL[$v]=0; done # (uncounted)
    for r in $(seq 1 "$ROUNDS"); do
        for ((k = 0; k < K; k++)); do batch "${VS[$(((k + r) % K))]}"; done
        rows "$r"
    done
    stop_all
    PID=()
fi
cat "$ROWS" >> "$OUT"
echo "# end load: $(uptime | sed 's/.*load average: //')  medium $MEDIUM  mode $MODE  rounds $ROUNDS (fresh: reps $REPS)  N $N" \
    "clients $CLIENTS  cpus ${SERVER_CPU:--}/${CLIENT_CPU:--}" | tee -a "$OUT"
python3 "$SRC/bench/ab_summary.py" "$ROWS" "$REF" cpu_ms
