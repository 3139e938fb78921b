#!/usr/bin/env bash
# 4 KiB write + fsync latency (issue 4's last target: p99.9 under 2x the median), every path in one run, on a
# fresh huge-page tmpfs with DAXKIT_PERSIST=flush (the dax code path: an EMULATION of persistent memory):
#   C API (dk_bench_atomic --tests latency): floor (a busy 900 ns op with no IO: the machine's own tail),
#     floor-io (the paced journal's write-backs and fences without the engine: the machine's tail for an op
#     that waits for memory -- the busy floor waits for the clock and cannot see a slow memory),
#     kernel (pwrite + fsync), atomic-hybrid, atomic-journal -- each followed by a classified pass
#     (DK_BENCH_CLASSIFY=1: what each op slower than 2x the median saw, on stderr) and a traced pass
#     (DK_BENCH_TRACE: what the engine did in each slow op -- a journal record into a new 2 MiB page, a window
#     pad, a checkpoint, pacing -- rows in $OUT/atomic-latency-trace.csv, a summary line per run on stderr);
#   POSIX path (dk_bench_fsync_writes, fsync after every 4 KiB write, per-op = write + fsync): posix-kernel,
#     posix-atomic (DAXKIT_ATOMIC, the journal). DK_BENCH_SETTLE=1 (session 11): the pass starts once the
#     process's CPU has settled -- the 64 MiB written to make the file grow DAXKIT_ATOMIC's journal to 128 MiB,
#     and its checkpoint thread applied them during the first ms of the pass (0.2-9 ms of its CPU, load 15).
# Interleaved: repetition x pinning (none, or `taskset -c CPU`) x journal pacing (DAXKIT_ATOMIC_PACE=1|0).
#   bench/atomic_latency.sh [BUILD_DIR]   Env: REPS [5], OPS [50000], PINS ["none 1"], PACE ["1 0"], OUT, TRACE [1],
#                                         BENCH_BIN [BUILD/bin/dk_bench_atomic] (another build, for A/B),
#                                         BUILDS ["LABEL=DIR ..."]: A/B of whole builds (bench programs and
#                                         library), interleaved in each repetition; paths become LABEL:path
# Outputs: $OUT/atomic-latency.csv (rep,pin,pace,path,median_ns,p999_ns,p99_ns,max_ns; the POSIX path: no max), $OUT/atomic-latency-classes.txt
# and $OUT/atomic-latency-summary.md (medians over repetitions; the ratio is p99.9 / median per run, then
# the median and range of those ratios). Print `uptime` with the numbers: the tail is the machine's too.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/bench/results}
REPS=${REPS:-5}
OPS=${OPS:-50000}
PINS=${PINS:-none 1}
PACE=${PACE:-1 0}
BUILDS=${BUILDS:-=$BUILD}
export DAXKIT_SRC=$SRC DAXKIT_BUILD=$BUILD
. "$SRC/tests/harness/media.sh"
dk_need_root
for b in $BUILDS; do
    d=${b#*=}
    bin=${BENCH_BIN:-$d/bin/dk_bench_atomic}
    [ -x "$bin" ] && [ -x "$d/bin/dk_bench_fsync_writes" ] && [ -r "$d/lib/libdaxkit.so" ] ||
        dk_fail "$bin, $d/bin/dk_bench_fsync_writes or $d/lib/libdaxkit.so not built"
done
mkdir -p "$OUT"
dk_media_mount hugetmpfs 2G
export DAXKIT_PERSIST=flush
csv=$OUT/atomic-latency.csv
classes=$OUT/atomic-latency-classes.txt
echo "rep,pin,pace,path,median_ns,p999_ns,p99_ns,max_ns" > "$csv"
: > "$classes"
trace=()
[ "${TRACE:-1}" = 0 ] || { trace=(DK_BENCH_TRACE="${csv%.csv}-trace.csv"); : > "${csv%.csv}-trace.csv"; }
dir=$DK_MNT/bench
echo "load before: $(uptime)" | tee -a "$classes" >&2
for rep in $(seq 1 "$REPS"); do
    for pin in $PINS; do
        for pace in $PACE; do
          for b in $BUILDS; do
            label=${b%%=*} d=${b#*=}
            bin=${BENCH_BIN:-$d/bin/dk_bench_atomic} posix=$d/bin/dk_bench_fsync_writes lib=$d/lib/libdaxkit.so
            pfx=${label:+$label:}
            pre=(env DAXKIT_ATOMIC_PACE="$pace")
            [ "$pin" = none ] || pre+=(taskset -c "$pin")
            echo "bench/atomic_latency.sh: repetition $rep of $REPS, pin $pin, pace $pace${label:+, build $label}" >&2
            rm -rf "$dir" && mkdir -p "$dir"
            echo "# rep $rep pin $pin pace $pace${label:+ build $label}" >> "$classes"
            "${pre[@]}" env DK_BENCH_CLASSIFY=1 "${trace[@]}" "$bin" --dir "$dir" --medium hugetmpfs-flush --tests latency \
                --ops "$OPS" --seed "$rep" 2>>"$classes" |
                awk -F, -v p="$rep,$pin,$pace" -v x="$pfx" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                    { print p "," x $c["variant"] "," $c["median_ns"] "," $c["p999_ns"] "," \
                        (("p99_ns" in c) ? $c["p99_ns"] : "") "," (("max_ns" in c) ? $c["max_ns"] : "") }' >> "$csv"
            for v in kernel atomic; do
                rm -rf "$dir" && mkdir -p "$dir"
                env=()
                [ $v = kernel ] || env=(LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "DAXKIT_ATOMIC=$dir/*")
                "${pre[@]}" env DK_BENCH_SETTLE=1 "${env[@]}" "$posix" "$dir" "posix-$v" 4096 "$OPS" 1 64 "$rep" |
                    awk -F, -v p="$rep,$pin,$pace" -v x="$pfx" '{ print p "," x $1 "," $10 "," $11 "," $13 "," }' >> "$csv"
            done
          done
        done
    done
done
echo "load after: $(uptime)" | tee -a "$classes" >&2
python3 - "$csv" <<'EOF' | tee "${csv%.csv}-summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
groups = {}
for r in rows:
    groups.setdefault((r['pin'], r['pace'], r['path']), []).append(r)
base = ['floor', 'floor-io', 'kernel', 'posix-kernel', 'atomic-hybrid', 'atomic-journal', 'posix-atomic']
labels = sorted({r['path'].rpartition(':')[0] for r in rows})
order = [(l + ':' if l else '') + p for p in base for l in labels]
print('4 KiB write + fsync, every op; huge tmpfs, DAXKIT_PERSIST=flush. Medians over repetitions; ratio = p99.9 / median')
print('per run, median (range) over runs. pace = DAXKIT_ATOMIC_PACE (the journal only; other paths repeat).\n')
print('| pinned | pace | path | runs | median ns | p99 ns | p99.9 ns | max ns | p99.9 / median | runs under 2x |')
print('|---|---|---|---|---|---|---|---|---|---|')
for pin in sorted({k[0] for k in groups}):
    for pace in sorted({k[1] for k in groups}, reverse=True):
        for path in order:
            rs = groups.get((pin, pace, path))
            if not rs:
                continue
            med = statistics.median(float(r['median_ns']) for r in rs)
            p = statistics.median(float(r['p999_ns']) for r in rs)
            med_of = lambda k: statistics.median(float(r[k]) for r in rs) if all(r.get(k) for r in rs) else None
            p99, mx = med_of('p99_ns'), med_of('max_ns')
            fmt = lambda v: f"{v:,.0f}" if v is not None else '-'
            ratios = sorted(float(r['p999_ns']) / float(r['median_ns']) for r in rs)
            under = sum(x < 2 for x in ratios)
            print(f"| {'cpu ' + pin if pin != 'none' else 'no'} | {pace} | {path} | {len(rs)} | {med:,.0f} | {fmt(p99)} | {p:,.0f} | {fmt(mx)} | "
                  f"{statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}) | {under} |")
EOF
