#!/usr/bin/env bash
# The cost of the descriptor windows' signal mask (src/common/internal_fd.h: every library open of its own
# -- staging files, size records, strict rename/unlink directory opens -- runs with all signals blocked,
# review 14 finding 4: two rt_sigprocmask calls per window). Two libraries, A (as built) and B (the same
# source with the mask removed from dk_ifd_begin/end), on one medium:
#   - system calls: rt_sigprocmask per workload (strace -f -c), A and B;
#   - CPU: task-clock (perf stat, children included) per run, A and B interleaved, REPS each, medians.
# Workloads: tar (cf + xf of SRC_TREE, default mode, as bench/perfile.sh's tar) and rename (a strict
# process renaming one file back and forth RENAME_N times: each rename opens the two directories in windows).
# Usage: bench/window_mask.sh LIB_A LIB_B [MEDIUM]   (MEDIUM: tmpfs (default) | hugetmpfs | xfs)
# Environment: REPS (7), RENAME_N (2000), SRC_TREE (/usr/include/linux).
# B is made by hand: copy the source, replace `dk_signals_block_all(&dk_ifd_saved_mask)` in dk_ifd_begin by
# nothing and `if (--dk_ifd_mine == 0) dk_signals_restore(...)` in dk_ifd_end by `--dk_ifd_mine`, and build
# lib/libdaxkit.so (docs/benchmarks.md, session 15).
set -euo pipefail
LIB_A=$(realpath "${1:?LIB_A}")
LIB_B=$(realpath "${2:?LIB_B}")
MEDIUM=${3:-tmpfs}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_SRC=$SRC DAXKIT_BUILD=$(dirname "$(dirname "$LIB_A")")
. "$SRC/tests/harness/media.sh"
REPS=${REPS:-7}
RENAME_N=${RENAME_N:-2000}
TREE=${SRC_TREE:-/usr/include/linux}
dk_need_cmd strace perf tar python3
echo "start load: $(uptime | sed 's/.*load average: //')"
dk_media_mount "$MEDIUM" 1G > /dev/null
ROOT=$DK_MNT
cp -a "$TREE" "$ROOT/src"

prep() { # workload dir: fresh tree / file
    rm -rf "$2"; mkdir -p "$2"
    case $1 in
    tar) cp -a "$ROOT/src" "$2/t"; mkdir -p "$2/x" ;;
    rename) : > "$2/a" ;;
    esac
}
cmd() { # workload dir lib [prefix...]: the workload's commands under the library
    local w=$1 d=$2 lib=$3; shift 3
    case $w in
    tar) "$@" env LD_PRELOAD="$lib" DAXKIT_DIR="$d" sh -c "tar -C '$d' -cf '$d/t.tar' t && tar -C '$d/x' -xf '$d/t.tar'" ;;
    rename) "$@" env LD_PRELOAD="$lib" DAXKIT_DIR="$d" DAXKIT_MODE=strict python3 -c '
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n): os.rename(d + "/a", d + "/b"); os.rename(d + "/b", d + "/a")' "$d" "$RENAME_N" ;;
    esac
}

for w in tar rename; do
    for v in A B; do
        lib=$LIB_A; [ $v = B ] && lib=$LIB_B
        prep $w "$ROOT/w"
        cmd $w "$ROOT/w" "$lib" strace -f -c -o "$ROOT/sc" -e trace=rt_sigprocmask,openat > /dev/null
        echo "$w $v syscalls: rt_sigprocmask $(awk '$NF=="rt_sigprocmask"{print $4}' "$ROOT/sc") openat $(awk '$NF=="openat"{print $4}' "$ROOT/sc")"
    done
    a=(); b=()
    for r in $(seq "$REPS"); do
        for v in A B; do
            lib=$LIB_A; [ $v = B ] && lib=$LIB_B
            prep $w "$ROOT/w"
            cmd $w "$ROOT/w" "$lib" perf stat -x, -e task-clock -o "$ROOT/pc" -- > /dev/null
            ms=$(awk -F, '$3 == "task-clock" { printf "%.2f", $1 }' "$ROOT/pc")
            if [ $v = A ]; then a+=("$ms"); else b+=("$ms"); fi
        done
    done
    med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    ma=$(med "${a[@]}"); mb=$(med "${b[@]}")
    echo "$w cpu ms (task-clock, median of $REPS interleaved): A (mask) $ma  B (no mask) $mb  A/B $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", a / b }')  [A: ${a[*]}] [B: ${b[*]}]"
done
echo "end load: $(uptime | sed 's/.*load average: //')"
