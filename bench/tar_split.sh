#!/usr/bin/env bash
# Where tar's CPU time under daxkit goes: tar cf and tar xf of a source tree with the files it reads and the
# files it writes on two separate media (A: the tree and a reference archive; B: the new archive and the
# extracted tree), each variant managing one of them, both or neither. On one medium a root that is not the
# medium's mount root costs every *unmanaged* file opened on that medium a readlink (its name cannot show it
# is outside), so the split needs two.
# Variants: kernel (no library), preload (library, nothing managed), A (what tar reads managed: cf's
# sources, xf's archive), B (what tar writes managed: cf's archive, xf's files), all (both).
# Figure: CPU time (perf stat -e task-clock, user + system), medians of REPS interleaved repetitions.
# Usage: bench/tar_split.sh BUILD_DIR [MEDIUM]   (MEDIUM: tmpfs (default) | hugetmpfs | xfs)
# Environment: REPS (9), SRC_TREE (/usr/include/linux)
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
MEDIUM=${2:-tmpfs}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
REPS=${REPS:-9}
TREE=${SRC_TREE:-/usr/include/linux}
LIB=$(dk_lib) || exit 1
dk_need_cmd tar perf
[ -d "$TREE" ] || dk_skip "$TREE missing"
dk_media_mount "$MEDIUM" 1G > /dev/null
A=$DK_MNT
dk_media_mount "$MEDIUM" 1G > /dev/null
B=$DK_MNT
ROWS=$(mktemp)
dk_on_exit rm -f "$ROWS"
cp -a "$TREE" "$A/src"
tar -C "$A" -cf "$A/ref.tar" src

cpu_ms() { perf stat -x, -e task-clock -- "$@" 2>&1 > /dev/null | awk -F, '$3 == "task-clock" { print $1 }'; }
for rep in $(seq 1 "$REPS"); do
    for v in kernel preload A B all; do
        case $v in
        kernel) e=(env -u LD_PRELOAD -u DAXKIT_DIR) ;;
        preload) e=(env -u DAXKIT_DIR LD_PRELOAD="$LIB") ;;
        A) e=(env LD_PRELOAD="$LIB" DAXKIT_DIR="$A") ;;
        B) e=(env LD_PRELOAD="$LIB" DAXKIT_DIR="$B") ;;
        all) e=(env LD_PRELOAD="$LIB" DAXKIT_DIR="$A:$B") ;;
        esac
        rm -f "$B/out.tar"
        echo "cf $v $(cpu_ms "${e[@]}" tar -C "$A" -cf "$B/out.tar" src) $rep" >> "$ROWS"
        rm -rf "$B/x" && mkdir "$B/x"
        echo "xf $v $(cpu_ms "${e[@]}" tar -C "$B/x" -xf "$A/ref.tar") $rep" >> "$ROWS"
    done
done
echo "load: $(uptime | sed 's/.*load average: //')  medium $MEDIUM  reps $REPS  commit $(git -C "$SRC" rev-parse --short HEAD)"
echo "CPU ms, median (ratio to kernel, to preload); runs"
awk '{ k = $1 " " $2; v[k] = v[k] " " $3 }
     END {
         for (k in v) {
             n = split(substr(v[k], 2), a, " ")
             for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
             med[k] = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
         }
         for (k in v) {
             split(k, p, " ")
             printf "%s %-8s %7.2f  (%.2fx, %.2fx) %s\n", p[1], p[2], med[k], med[k] / med[p[1] " kernel"],
                    med[k] / med[p[1] " preload"], v[k]
         }
     }' "$ROWS" | sort -k1,1 -k3,3n
