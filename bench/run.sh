#!/usr/bin/env bash
# `make bench`: every daxkit benchmark in one run, CSV + summary + PNG plots under bench/results/.
#   bench/run.sh [BUILD_DIR]
# Environment:
#   QUICK=1            a few minutes: one repetition, quick app sizes, apps on huge tmpfs only
#   MEDIA              media of the microbenchmark [hugetmpfs tmpfs xfs]
#   APP_MEDIA          media of the application benchmarks [hugetmpfs xfs; QUICK: hugetmpfs]
#   PARTS              any of: micro apps atomic strict sqlite_ab oplog graph [all]
#   MICRO_REPS [5; QUICK 1], APP_REPS [3; QUICK 1], OPS [65536; QUICK 32768]
#   VARIANTS, APP_VARIANTS, APPS   passed to bench/micro.sh and bench/apps.sh
# Outputs: bench/results/micro.csv, apps.csv, summary.md, run-info.txt, *.png; logs in bench/results/logs/.
# Needs root (it mounts its media). See docs/benchmarks.md.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=$SRC/bench/results
QUICK=${QUICK:-0}
PARTS=${PARTS:-all}
if [ "$QUICK" = 1 ]; then
    MICRO_REPS=${MICRO_REPS:-${REPS:-1}}; APP_REPS=${APP_REPS:-${REPS:-1}}; OPS=${OPS:-0}
    MEDIA=${MEDIA:-"hugetmpfs tmpfs xfs"}
    APP_MEDIA=${APP_MEDIA:-hugetmpfs}
else
    # 65536 ops: two passes over the 128 MiB file (reads, overwrites); appends grow a 256 MiB file.
    MICRO_REPS=${MICRO_REPS:-${REPS:-5}}; APP_REPS=${APP_REPS:-${REPS:-3}}; OPS=${OPS:-65536}
    MEDIA=${MEDIA:-"hugetmpfs tmpfs xfs"}
    APP_MEDIA=${APP_MEDIA:-"hugetmpfs xfs"}
fi
export QUICK
want() { [ "$PARTS" = all ] || [[ " $PARTS " == *" $1 "* ]]; }
[ "$(id -u)" = 0 ] || { echo "bench: needs root (mounts tmpfs and loop media)" >&2; exit 1; }
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
mkdir -p "$OUT/logs"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)   commit: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)   QUICK=$QUICK"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; kernel $(uname -r)"
    echo "nt stores: $(grep -m1 -o 'avx512f' /proc/cpuinfo || grep -m1 -o avx2 /proc/cpuinfo || echo sse2); flush: $(grep -m1 -o 'clwb' /proc/cpuinfo || echo 'no clwb')"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) (other processes share this machine: read ratios, not absolutes)"
} > "$OUT/run-info.txt"
cat "$OUT/run-info.txt"

if want micro; then
    echo "medium,variant,op,bs,ops,fsync_every,ops_per_s,median_ns,p99_ns,mean_ns,fsync_median_ns,wall_s,rep" > "$OUT/micro.csv"
    for m in $MEDIA; do
        echo "bench: microbenchmark on $m"
        rc=0
        REPS=$MICRO_REPS OPS=$OPS bash "$SRC/bench/micro.sh" "$BUILD" "$m" "$OUT/micro.csv" 2> "$OUT/logs/micro-$m.log" || rc=$?
        case $rc in
        0) ;;
        77) echo "bench: $m skipped: $(tail -1 "$OUT/logs/micro-$m.log")" ;;
        *) echo "bench: microbenchmark on $m FAILED (rc $rc):" >&2; tail -20 "$OUT/logs/micro-$m.log" >&2 ;;
        esac
    done
fi

if want apps; then
    echo "medium,app,variant,metric,value,unit,better,rep" > "$OUT/apps.csv"
    for m in $APP_MEDIA; do
        echo "bench: application benchmarks on $m"
        rc=0
        REPS=$APP_REPS bash "$SRC/bench/apps.sh" "$BUILD" "$m" "$OUT/apps.csv" 2> "$OUT/logs/apps-$m.log" || rc=$?
        case $rc in
        0) ;;
        77) echo "bench: apps on $m skipped: $(tail -1 "$OUT/logs/apps-$m.log")" ;;
        *) echo "bench: apps on $m FAILED (rc $rc):" >&2; tail -20 "$OUT/logs/apps-$m.log" >&2 ;;
        esac
    done
fi

if want atomic; then
    echo "bench: failure-atomic C API on huge tmpfs (bench/atomic.sh; atomic.csv, atomic-summary.md)"
    if [ "$QUICK" = 1 ]; then a_reps=1 a_ops=20000; else a_reps=$MICRO_REPS a_ops=100000; fi
    REPS=$a_reps OPS=$a_ops OUT=$OUT bash "$SRC/bench/atomic.sh" "$BUILD" > "$OUT/logs/atomic.log" 2>&1 ||
        echo "bench: bench/atomic.sh failed (rc $?; see logs/atomic.log)" >&2
    echo "bench: DAXKIT_ATOMIC vs strict vs kernel, POSIX path (bench/atomic_posix.sh; atomic-posix*.csv, atomic-posix-summary.md)"
    REPS=$a_reps OPS=$((a_ops / 2)) OUT=$OUT bash "$SRC/bench/atomic_posix.sh" "$BUILD" > "$OUT/logs/atomic-posix.log" 2>&1 ||
        echo "bench: bench/atomic_posix.sh failed (rc $?; see logs/atomic-posix.log)" >&2
fi

if want strict; then
    echo "bench: strict mode vs sync/posix/kernel (bench/strict.sh; strict.csv, strict-recovery.csv, strict-summary.md)"
    rm -f "$OUT/strict.csv"
    if [ "$QUICK" = 1 ]; then s_ops=5000; else s_ops=20000; fi
    OPS=$s_ops REPS=1 bash "$SRC/bench/strict.sh" "$BUILD" "$OUT/strict.csv" 2> "$OUT/logs/strict.log" &&
        $PY "$SRC/bench/strict_summary.py" "$OUT/strict.csv" "$OUT/strict-recovery.csv" > "$OUT/strict-summary.md" ||
        echo "bench: bench/strict.sh failed (see logs/strict.log)" >&2
fi

if want sqlite_ab; then
    echo "bench: sqlite3 commits, CPU of sqlite3 alone, kernel vs daxkit interleaved (bench/sqlite_ab.sh; sqlite_ab/)"
    if [ "$QUICK" = 1 ]; then q_reps=3; else q_reps=15; fi
    REPS=$q_reps bash "$SRC/bench/sqlite_ab.sh" "$BUILD" "$OUT/sqlite_ab" > "$OUT/logs/sqlite_ab.log" 2>&1 ||
        echo "bench: bench/sqlite_ab.sh failed (see logs/sqlite_ab.log)" >&2
fi

$PY "$SRC/bench/summarize.py" "$OUT"
$PY "$SRC/bench/plot.py" "$OUT" || echo "bench: plotting failed (tables above are complete)" >&2

if want oplog; then
    echo "bench: operation log (bench/oplog.sh; results in bench/results/oplog.csv)"
    rm -f "$OUT/oplog.csv"
    REPS=$MICRO_REPS bash "$SRC/bench/oplog.sh" "$BUILD" "$OUT/oplog.csv" 2> "$OUT/logs/oplog.log" ||
        echo "bench: bench/oplog.sh failed (see logs/oplog.log)" >&2
fi

# The graph engine's benchmarks belong to bench/graph/ (another part of daxkit); run them when present.
if want graph && [ -f "$SRC/bench/graph/run.sh" ]; then
    echo "bench: graph engine benchmarks (bench/graph/run.sh; results in bench/results/graph/)"
    if [ "$QUICK" = 1 ]; then
        SCALES=${SCALES:-18} SSSP_SCALES=${SSSP_SCALES:-18} TRIALS=${TRIALS:-1} SWEEP_SCALE=${SWEEP_SCALE:-18} \
            OOC_SCALE=${OOC_SCALE:-18} bash "$SRC/bench/graph/run.sh" "$BUILD" || echo "bench: bench/graph/run.sh failed" >&2
    else
        bash "$SRC/bench/graph/run.sh" "$BUILD" || echo "bench: bench/graph/run.sh failed" >&2
    fi
fi
echo "bench: results in $OUT (summary.md, micro.csv, apps.csv, *.png)"
