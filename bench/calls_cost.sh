#!/usr/bin/env bash
# What a change to the served call's entry and exit costs (session 12: the call record of src/upath/calls.h):
# two libraries side by side on dk_bench_posix's seqread, randwrite (4 KiB pwrite) and append (4 KiB), posix
# mode, DAXKIT_PERSIST=flush, in a directory on /dev/shm (tmpfs):
#   1. instructions per operation (callgrind; Ir(2N ops) - Ir(N ops) over N: the set-up cancels out);
#   2. REPS interleaved wall-clock runs (A, B, A, B, ...; 64 MiB file), medians of median_ns and ops/s.
#   bench/calls_cost.sh BUILD_DIR LIB_A LIB_B      Env: N [4000], REPS [15], DIR [/dev/shm/dk_callcost]
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd); A=${2:?library A}; C=${3:?library B}
N=${N:-4000}; REPS=${REPS:-15}; d=${DIR:-/dev/shm/dk_callcost.$$}
BENCH=$B/bin/dk_bench_posix
run() { # LIB ARGS...: one dk_bench_posix run in a fresh directory
    local lib=$1; shift
    rm -rf "$d"; mkdir -p "$d"
    env LD_PRELOAD="$lib" DAXKIT_DIR="$d" DAXKIT_PERSIST=flush "$@"
    rm -rf "$d"
}
echo "load: $(uptime)"
if command -v valgrind > /dev/null; then
    for t in randwrite append seqread; do
        for L in "$A" "$C"; do
            ir=()
            for ops in $N $((2 * N)); do
                ir+=("$(run "$L" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BENCH" --dir "$d" --variant x \
                    --tests $t --ops $ops --warmup 0 --file-mib 16 2>&1 | awk '/Collected/ {print $4}')")
            done
            echo "instructions,$t,$L,$(((ir[1] - ir[0]) / N))"
        done
    done
else
    echo "valgrind missing: no instruction counts" >&2
fi
out=$(mktemp)
for r in $(seq 1 "$REPS"); do
    for L in "$A" "$C"; do
        run "$L" "$BENCH" --dir "$d" --variant "$L" --tests seqread,randwrite,append --file-mib 64 --seed "$r" >> "$out"
    done
done
python3 - "$out" << 'PY'
import csv, statistics, sys
by = {}
for r in csv.reader(open(sys.argv[1])):
    by.setdefault((r[2], r[1]), []).append((int(r[7]), float(r[6])))
for (op, lib), xs in sorted(by.items()):
    print(f"wallclock,{op},{lib},median_ns {statistics.median(x[0] for x in xs):.0f},"
          f"ops_per_s {statistics.median(x[1] for x in xs):.0f},n {len(xs)}")
PY
rm -f "$out"
echo "load: $(uptime)"
