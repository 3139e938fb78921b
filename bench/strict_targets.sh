#!/usr/bin/env bash
# Issue 3's two strict-mode speed targets, each measured against its reference in the same run, variants
# interleaved run by run, medians printed (docs/strict.md, "Measured, session 8"):
#   1. huge tmpfs, DAXKIT_PERSIST=flush (emulated DAX persistence on both sides): 4 KiB random overwrites of
#      a 32 MiB file, fsync every 10 -- strict (default apply) against sync mode: within 2x;
#   2. XFS on a RAM loop device (real fsync): 4 KiB random overwrites, fsync every 1 -- strict against the
#      kernel's pwrite + fsync (no daxkit): never slower;
#   plus strict_floor (the same 4 KiB overwrite in persist primitives only) on the huge tmpfs; and strict with
#   DAXKIT_STRICT_MARKS=0 in both (strict-nomarks: the cost of the completion marks, session 13).
# Usage: bench/strict_targets.sh BUILD_DIR [RUNS=5]   Environment: OPS1 [100000], OPS2 [3000]
# Output: one CSV row per run (dk_bench_fsync_writes: variant,bs,ops,fsync_every,ops_per_s,cpu_ns_per_op,
# median_ns,p999_ns,fsync_median_ns,op_median_ns,op_p999_ns,op_p90_ns,op_p99_ns,op_mean_ns), then per variant
# the medians over the runs and the ratios (of the medians: the targets' measure; the mean is printed too). Root
# (mounts). Prints the load (uptime) before and after: compare only variants of one run.
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
RUNS=${2:-5}
OPS1=${OPS1:-100000}
OPS2=${OPS2:-3000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
dk_need_root
LIB=$BUILD/lib/libdaxkit.so
BENCH=$BUILD/bin/dk_bench_fsync_writes
OUT=$(mktemp)
dk_on_exit "rm -f $OUT"

summary() { # TITLE REFERENCE_VARIANT
    python3 - "$OUT" "$1" "$2" <<'EOF'
import csv, statistics as st, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0].startswith(sys.argv[2].split(":")[0] + ":")]
by = {}
for r in rows:
    by.setdefault(r[0], []).append(r)
ref = sys.argv[3]
def per_op(r):  # write median + fsync median / fsync_every
    return int(r[6]) + int(r[8]) / int(r[3])
print(sys.argv[2].split(":")[1])
def mean(r):  # the mean of write (+ fsync) over the pass: what the medians hide (op_mean_ns, since session 9)
    return float(r[13]) if len(r) > 13 else float("nan")
med = {}
for v, rs in by.items():
    med[v] = (st.median(per_op(r) for r in rs), st.median(float(r[5]) for r in rs), st.median(int(r[6]) for r in rs),
              st.median(mean(r) for r in rs))
for v, (t, c, w, m) in med.items():
    rt, rc, _, _ = med[ref]
    print("  %-22s per op %9.0f ns (write median %7.0f, mean per op %9.0f)  CPU per op %8.0f ns   vs %s: time %.2fx, CPU %.2fx"
          % (v, t, w, m, c, ref, t / rt, c / rc))
EOF
}

echo "load before: $(uptime)"
dk_media_mount hugetmpfs 2G > /dev/null
h=$DK_MNT
for run in $(seq 1 "$RUNS"); do
    for mode in sync strict strict-nomarks; do
        rm -rf "$h/b" && mkdir "$h/b"
        env LD_PRELOAD="$LIB" DAXKIT_DIR="$h/b" DAXKIT_MODE=${mode%-nomarks} DAXKIT_PERSIST=flush \
            DAXKIT_STRICT_MARKS=$([ "$mode" = strict-nomarks ] && echo 0 || echo 1) \
            "$BENCH" "$h/b" "t1:$mode" 4096 "$OPS1" 10 32 "$run" | tee -a "$OUT"
    done
done
rm -rf "$h/b"
"$BUILD/bin/strict_floor" "$h" 20000 25
dk_media_mount xfs 1G > /dev/null
x=$DK_MNT
for run in $(seq 1 "$RUNS"); do
    rm -rf "$x/b" && mkdir "$x/b"
    "$BENCH" "$x/b" "t2:kernel" 4096 "$OPS2" 1 32 "$run" | tee -a "$OUT"
    rm -rf "$x/b" && mkdir "$x/b"
    env LD_PRELOAD="$LIB" DAXKIT_DIR="$x/b" DAXKIT_MODE=strict "$BENCH" "$x/b" "t2:strict" 4096 "$OPS2" 1 32 "$run" |
        tee -a "$OUT"
    rm -rf "$x/b" && mkdir "$x/b"
    env LD_PRELOAD="$LIB" DAXKIT_DIR="$x/b" DAXKIT_MODE=strict DAXKIT_STRICT_MARKS=0 "$BENCH" "$x/b" "t2:strict-nomarks" \
        4096 "$OPS2" 1 32 "$run" | tee -a "$OUT"
done
echo "load after: $(uptime)"
summary "t1:target 1 -- huge tmpfs, DAXKIT_PERSIST=flush (emulated DAX both sides), 4 KiB, fsync every 10: strict within 2x of sync" "t1:sync"
summary "t2:target 2 -- XFS on a RAM loop (real fsync), 4 KiB, fsync every 1: strict never slower than the kernel" "t2:kernel"
