#!/usr/bin/env bash
# Failure-atomic updates (issue 4): dk_bench_atomic on a fresh huge-page tmpfs with DAXKIT_PERSIST=flush
# (the dax code path: an EMULATION of persistent memory), REPS repetitions, then the summary with the
# issue's targets.   bench/atomic.sh [BUILD_DIR]   Env: REPS [3], OPS [20000], TESTS [all four], OUT,
# MEDIUM [hugetmpfs] (xfs, ext4: page cache, no emulation; e.g. MEDIUM=xfs TESTS=mmap for the shmem shadow).
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
MEDIUM=${MEDIUM:-hugetmpfs}
label=$MEDIUM
if [ "$MEDIUM" = hugetmpfs ]; then
    dk_media_mount hugetmpfs 2G
    export DAXKIT_PERSIST=flush
    label=hugetmpfs-flush
else
    dk_media_mount "$MEDIUM" 1G
fi
csv=$OUT/atomic.csv
[ "$MEDIUM" = hugetmpfs ] || csv=$OUT/atomic-$MEDIUM.csv
first=1
for rep in $(seq 1 "$REPS"); do
    echo "bench/atomic.sh: repetition $rep of $REPS ($label)" >&2
    "$bin" --dir "$DK_MNT" --medium "$label" --tests "$TESTS" --ops "$OPS" --seed "$rep" |
        if [ $first = 1 ]; then sed '1s/$/,rep/; 2,$s/$/,'"$rep"'/'; else sed '1d; s/$/,'"$rep"'/'; fi > "$csv.part"
    if [ $first = 1 ]; then mv "$csv.part" "$csv"; first=0; else cat "$csv.part" >> "$csv"; rm "$csv.part"; fi
done
python3 "$SRC/bench/atomic_summary.py" "$csv" | tee "${csv%.csv}-summary.md"
