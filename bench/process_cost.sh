#!/usr/bin/env bash
# What one short-lived managed process costs over the kernel path (session 28): the CPU (task-clock, user +
# system) of PER runs of a tiny program -- tar cf of a one-file tree into a new archive, in a managed directory:
# the library's load, start-up (configuration, recovery, the inherited descriptors), the stats file, the first
# open, the first publish with its size record (the root's area, lock and sizes files) and the exit -- through
# the kernel, with library A and with library B, interleaved, REPS samples each. tar and rsync run two or
# three such processes a round, so this is the part of bench/perfile.sh's tar/rsync rows no per-file cut reaches.
# Usage: bench/process_cost.sh BUILD_DIR LIB_A LIB_B [MEDIUM]   (MEDIUM: tmpfs (default) | hugetmpfs | xfs)
# Environment: REPS (15), PER (40 runs a sample). Prints each variant's median and minimum per process, and
# its excess over the kernel's median.
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
A=${2:?library A}
B=${3:?library B}
MEDIUM=${4:-tmpfs}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
REPS=${REPS:-15}
PER=${PER:-40}
dk_need_cmd tar perf
dk_media_mount "$MEDIUM" 256M > /dev/null
D=$DK_MNT/d
mkdir -p "$D/t"
echo hi > "$D/t/a"
OUT=$(mktemp)
dk_on_exit rm -f "$OUT"
echo "start load: $(uptime | sed 's/.*load average: //')" >&2
sample() { # NAME ENV...: one sample, ms a process
    local name=$1
    shift
    perf stat -x, -e task-clock -o "$OUT.t" -- env "$@" sh -c \
        'i=0; while [ $i -lt '"$PER"' ]; do tar -C "$0" -cf "$0/o.tar" t || exit 1; i=$((i + 1)); done' "$D" > /dev/null
    awk -F, -v n="$name" -v per="$PER" '$3 == "task-clock" { printf "%s %.4f\n", n, $1 / per }' "$OUT.t" >> "$OUT"
}
for _ in $(seq 1 "$REPS"); do
    sample kernel -u LD_PRELOAD -u DAXKIT_DIR
    sample A LD_PRELOAD="$A" DAXKIT_DIR="$D"
    sample B LD_PRELOAD="$B" DAXKIT_DIR="$D"
done
rm -f "$OUT.t"
echo "load: $(uptime | sed 's/.*load average: //')  medium $MEDIUM  reps $REPS  runs a sample $PER"
echo "A = $A"
echo "B = $B"
sort -k1,1 -k2,2n "$OUT" | awk '
    { v[$1] = v[$1] " " $2; n[$1]++ }
    END {
        for (k in v) {
            m = split(substr(v[k], 2), a, " ")
            med[k] = m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
            lo[k] = a[1]
        }
        split("kernel A B", order, " ")
        for (i = 1; i <= 3; i++) {
            k = order[i]
            printf "%-6s median %.3f ms a process  min %.3f  over the kernel %+.3f ms\n", k, med[k], lo[k], med[k] - med["kernel"]
        }
    }'
