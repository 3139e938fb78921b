#!/usr/bin/env bash
# One medium of the 4 KiB microbenchmark: mounts MEDIUM (tests/harness/media.sh), runs dk_bench_posix
# through the kernel (+ the user-space floor) and under daxkit in every configured variant, REPS times
# interleaved, appending CSV rows to OUT_CSV. Called by bench/run.sh; exits 77 when the medium is unavailable.
# Usage: bench/micro.sh BUILD_DIR MEDIUM OUT_CSV
# Environment: REPS [3], OPS [file/4 KiB = 32768], VARIANTS (default below), FILE_MIB [128].
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
MEDIUM=${2:?medium}
OUT=${3:?out csv}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
REPS=${REPS:-3}
FILE_MIB=${FILE_MIB:-128}
OPS=${OPS:-0}
# mode-append-persistence; "flush" is DAXKIT_PERSIST=flush (emulated DAX persistence), "auto" follows the medium.
# An append strategy "extendkeep" is extend with DAXKIT_EXTEND_SYNC=keep (fsync keeps the extension).
VARIANTS=${VARIANTS:-"posix-stage-flush posix-extend-flush posix-extendkeep-flush sync-stage-flush sync-extend-flush posix-stage-auto posix-extend-auto"}
BENCH=$BUILD/bin/dk_bench_posix
CLI=$BUILD/bin/daxkit
[ -x "$BENCH" ] || dk_fail "$BENCH missing; build first"

# Data file + append file + floor file + staging pools, with room to spare.
dk_media_mount "$MEDIUM" 2G > /dev/null
DIR=$DK_MNT/bench
mkdir -p "$DIR"
COMMON=(--dir "$DIR" --medium "$MEDIUM" --file-mib "$FILE_MIB" --ops "$OPS")

daxkit_ok=1
if ! nm -D --defined-only "$BUILD/lib/libdaxkit.so" 2>/dev/null | grep -w pwrite >/dev/null; then # not -q: under pipefail, nm killed by SIGPIPE made it "missing"
    daxkit_ok=0
    echo "bench/micro: libdaxkit.so interposes nothing yet; kernel and floor only" >&2
fi

# The appends run in a process of their own, after the reads and overwrites: a pass that appends 128 MiB
# takes that much new memory, and on a machine that hands idle memory back to its host (free page
# reporting) its time depends on whether that memory was just freed or idle for seconds (up to 10x,
# docs/benchmarks.md, "Session 9"). In one process per variant, the library's staging of the 128 MiB data
# file (190 MiB of staging files) took the memory the kernel run had just freed before its own append pass
# came; now each side's appends start right after its own previous process freed its memory.
TEST_GROUPS=("seqread,randread,seqwrite,randwrite" "append")
for rep in $(seq 1 "$REPS"); do
    for tests in "${TEST_GROUPS[@]}"; do
        "$BENCH" "${COMMON[@]}" --variant kernel --floor --seed "$rep" --tests "$tests" | sed "s/\$/,$rep/" >> "$OUT"
        [ $daxkit_ok = 1 ] || continue
        for v in $VARIANTS; do
            IFS=- read -r mode app persist <<< "$v"
            keep=cut
            [ "$app" = extendkeep ] && app=extend keep=keep
            if ! DAXKIT_EXTEND_SYNC=$keep "$CLI" run --mode "$mode" --dir "$DIR" --append "$app" --persist "$persist" -- \
                "$BENCH" "${COMMON[@]}" --variant "daxkit-$v" --seed "$rep" --tests "$tests" > "$DK_MNT/rows" 2> "$DK_MNT/err"; then
                echo "bench/micro: $MEDIUM daxkit-$v rep $rep ($tests) FAILED:" >&2
                cat "$DK_MNT/err" >&2
                echo "$MEDIUM,daxkit-$v,FAILED,4096,0,0,0,0,0,0,0,0,$rep" >> "$OUT"
                continue
            fi
            sed "s/\$/,$rep/" "$DK_MNT/rows" >> "$OUT"
        done
    done
done
