#!/usr/bin/env bash
# The operation-log benchmark (dk_bench_oplog) on each medium: mounts it (tests/harness/media.sh), runs the
# benchmark REPS times, writes CSV rows with a rep column to OUT_CSV (header included when the file is new).
# Usage: bench/oplog.sh BUILD_DIR OUT_CSV [MEDIA...]   (MEDIA default: hugetmpfs tmpfs xfs)
# Environment: REPS [3], OPS [200000], OPS_XFS [20000]. On tmpfs and XFS-without-DAX the log persists with cache-line flushes
# (tmpfs) or msync (xfs): tmpfs figures are emulated persistence and are labelled so by the medium column.
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
OUT=${2:?out csv}
shift 2
MEDIA=${*:-hugetmpfs tmpfs xfs}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
BENCH=$BUILD/bin/dk_bench_oplog
[ -x "$BENCH" ] || dk_fail "$BENCH missing; build first"
[ -s "$OUT" ] || echo "medium,op,threads,data_bytes,ops,ops_per_s,median_ns,p99_ns,mean_ns,wall_s,rep" > "$OUT"
if [ $# -ne 1 ]; then # one process per medium: the harness unmounts it when the process ends
    for m in $MEDIA; do bash "$0" "$BUILD" "$OUT" "$m" || echo "bench/oplog: $m failed or skipped" >&2; done
    exit 0
fi
m=$1
dk_media_mount "$m" 1G > /dev/null
label=$m
[ "$m" = xfs ] || label="$m(emulated-persistence)"
ops=${OPS:-200000}
[ "$m" != xfs ] || ops=${OPS_XFS:-20000} # msync per append: ~50 us each
for rep in $(seq 1 "${REPS:-3}"); do
    "$BENCH" --dir "$DK_MNT" --medium "$label" --ops "$ops" | tail -n +2 | sed "s/\$/,$rep/" >> "$OUT"
done
