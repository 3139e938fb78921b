#!/usr/bin/env bash
# The hybrid-policy target without the machine's noise: instructions per operation (all threads, the
# checkpoint thread included) of dk_bench_atomic's read:write mix for undo, redo and hybrid at each mix,
# counted by callgrind as Ir(2N ops) - Ir(N ops) over N (the set-up cancels out). Instructions do not see
# write-back and fence stalls (undo's fence per write), so this judges the work each policy's code does.
#   bench/atomic_mix_callgrind.sh [BUILD_DIR] [OUT_CSV]     Env: N [4000], DIR [/dev/shm/dk_mixcg]
set -euo pipefail
B=$(cd "${1:-build}" && pwd); N=${N:-4000}; d=${DIR:-/dev/shm/dk_mixcg.$$}; out=${2:-/dev/stdout}
command -v valgrind > /dev/null || { echo "valgrind missing" >&2; exit 77; }
echo "variant,pct,ir_per_op" > $out
for pct in 0 10 25 40 50 75 90 100; do for v in atomic-undo atomic-redo atomic-hybrid; do
  ir=()
  for ops in $N $((2 * N)); do
    rm -rf $d; mkdir -p $d
    x=$(DK_BENCH_MIX_PCT=$pct DK_BENCH_MIX_VARIANT=$v DAXKIT_PERSIST=flush valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        $B/bin/dk_bench_atomic --dir $d --tests mix --ops $ops --file-mib 32 2>&1 | awk '/Collected/ {print $4}')
    ir+=($x)
  done
  echo "$v,$pct,$(( (ir[1] - ir[0]) / N ))" >> $out
done; done
rm -rf $d
