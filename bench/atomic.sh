#!/usr/bin/env bash
# Failure-atomic updates (issue 4): dk_bench_atomic on a fresh huge-page tmpfs with DAXKIT_PERSIST=flush
# (the dax code path: an EMULATION of persistent memory), REPS repetitions, then the summary with the
# issue's targets.   bench/atomic.sh [BUILD_DIR]   Env: REPS [3], OPS [20000], TESTS [all four], OUT.
# Outputs: $OUT/atomic.csv (one row per measurement and repetition) and $OUT/atomic-summary.md.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/bench/results}
REPS=${REPS:-3}
OPS=${OPS:-20000}
TESTS=${TESTS:-sizes,dirty,mix,latency,threads,mmap}
export DAXKIT_SRC=$SRC DAXKIT_BUILD=$BUILD
. "$SRC/tests/harness/media.sh"
dk_need_root
bin=$BUILD/bin/dk_bench_atomic
[ -x "$bin" ] || dk_fail "$bin not built"
mkdir -p "$OUT"
dk_media_mount hugetmpfs 2G
export DAXKIT_PERSIST=flush
csv=$OUT/atomic.csv
first=1
for rep in $(seq 1 "$REPS"); do
    echo "bench/atomic.sh: repetition $rep of $REPS (hugetmpfs, DAXKIT_PERSIST=flush)" >&2
    "$bin" --dir "$DK_MNT" --medium hugetmpfs-flush --tests "$TESTS" --ops "$OPS" --seed "$rep" |
        if [ $first = 1 ]; then sed '1s/$/,rep/; 2,$s/$/,'"$rep"'/'; else sed '1d; s/$/,'"$rep"'/'; fi > "$csv.part"
    if [ $first = 1 ]; then mv "$csv.part" "$csv"; first=0; else cat "$csv.part" >> "$csv"; rm "$csv.part"; fi
done
python3 "$SRC/bench/atomic_summary.py" "$csv" | tee "$OUT/atomic-summary.md"
