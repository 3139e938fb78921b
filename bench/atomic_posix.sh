#!/usr/bin/env bash
# DAXKIT_ATOMIC against strict mode and the kernel through the POSIX path (issue 4, part 3): an unmodified
# program (dk_bench_fsync_writes: random overwrites, fsync every N; wall and process CPU time of the pass) run
# plainly (kernel), under daxkit strict mode
# and under daxkit with DAXKIT_ATOMIC (the default journal policy, hybrid, and the fixed policies), in one run, on a fresh huge-page
# tmpfs with DAXKIT_PERSIST=flush (the dax code path: an EMULATION of persistent memory).
#   bench/atomic_posix.sh [BUILD_DIR]   Env: REPS [3], OPS [20000], SIZES [128 1024 4096 65536],
#                                       EVERY [1 10 100], VARIANTS [kernel strict atomic atomic-hybrid atomic-undo atomic-redo], OUT
# Outputs: $OUT/atomic-posix.csv, $OUT/atomic-posix-mmap.csv and $OUT/atomic-posix-summary.md.
# CPU time counts every thread (the checkpoint thread's work too): on this loaded 2-core machine it is the
# steadier measure; wall throughput is given next to it.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/bench/results}
REPS=${REPS:-3}
OPS=${OPS:-20000}
SIZES=${SIZES:-128 1024 4096 65536}
EVERY=${EVERY:-1 10 100}
VARIANTS=${VARIANTS:-kernel strict atomic atomic-hybrid atomic-undo atomic-redo}
export DAXKIT_SRC=$SRC DAXKIT_BUILD=$BUILD
. "$SRC/tests/harness/media.sh"
dk_need_root
bench=$BUILD/bin/dk_bench_fsync_writes
lib=$BUILD/lib/libdaxkit.so
[ -x "$bench" ] && [ -r "$lib" ] || dk_fail "$bench or $lib not built"
mkdir -p "$OUT"
dk_media_mount hugetmpfs 2G
csv=$OUT/atomic-posix.csv
# dk_bench_fsync_writes's row (its header comment names the columns), then the repetition
header=variant,bs,ops,fsync_every,ops_per_s,cpu_ns_per_op,median_ns,p999_ns,fsync_median_ns,op_median_ns,op_p999_ns
header+=,op_p90_ns,op_p99_ns,op_mean_ns,cpu_close_ns_per_op,bg_cpu_ns,ops_per_s_close,rep
echo "$header" > "$csv"
dir=$DK_MNT/bench

variant_env() {  # VARIANT -> env array
    env=()
    case $1 in
    kernel) ;;
    strict) env=(LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_PERSIST=flush DAXKIT_MODE=strict) ;;
    atomic) env=(LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_PERSIST=flush "DAXKIT_ATOMIC=$dir/*") ;;
    atomic-hybrid | atomic-undo | atomic-redo)
        env=(LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_PERSIST=flush "DAXKIT_ATOMIC=$dir/*"
             DAXKIT_ATOMIC_POLICY=${1#atomic-}) ;;
    esac
}

run() {  # VARIANT BS EVERY REP
    variant_env "$1"
    rm -rf "$dir" && mkdir -p "$dir"
    local row
    row="$(env "${env[@]}" "$bench" "$dir" "$1" "$2" "$OPS" "$3" 32 "$4"),$4"
    # a row of another width than the header would shift every later column (it did: 12 names, 17 fields)
    [ "$(awk -F, '{print NF}' <<<"$row")" = "$(awk -F, '{print NF}' <<<"$header")" ] ||
        dk_fail "dk_bench_fsync_writes printed '$row', not the columns of '$header'"
    echo "$row" >> "$csv"
}

for rep in $(seq 1 "$REPS"); do
    for bs in $SIZES; do
        for fe in $EVERY; do
            echo "bench/atomic_posix.sh: ${bs} B, fsync every $fe, repetition $rep of $REPS" >&2
            for v in $VARIANTS; do run "$v" "$bs" "$fe" "$rep"; done
        done
    done
done
# mmap + msync (part 4 under daxkit run): mmap_writer (tests/atomic) stores 1-300 B at random places of a 1 MiB
# file and calls msync(MS_SYNC) every N stores; the kernel path vs DAXKIT_ATOMIC_MMAP (userfaultfd write-protect).
mcsv=$OUT/atomic-posix-mmap.csv
echo "variant,msync_every,stores,wall_s,cpu_s,rep" > "$mcsv"
writer=$BUILD/tests/mmap_writer
MMAP_OPS=${MMAP_OPS:-20000}
if [ -x "$writer" ]; then
    for rep in $(seq 1 "$REPS"); do
        for fe in $EVERY; do
            for v in kernel atomic-mmap; do
                rm -rf "$dir" && mkdir -p "$dir" && truncate -s 1M "$dir/m"
                env=(MMAP_WRITER_QUIET=1)
                [ $v = kernel ] || env+=(LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_PERSIST=flush "DAXKIT_ATOMIC_MMAP=$dir/*")
                t0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
                s0=$(date +%s.%N)
                env "${env[@]}" "$writer" "$dir/m" "$rep" "$MMAP_OPS" "$fe"
                s1=$(date +%s.%N)
                cpu=$(awk -v t0="$t0" '{printf "%.4f", ($14 + $15 + $16 + $17 - t0) / 100}' /proc/$$/stat)
                echo "$v,$fe,$MMAP_OPS,$(echo "$s1 - $s0" | bc),$cpu,$rep" >> "$mcsv"
            done
        done
    done
fi
python3 - "$csv" "$mcsv" <<'EOF' | tee "$OUT/atomic-posix-summary.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for r in rows:
    med.setdefault((int(r['bs']), int(r['fsync_every']), r['variant']), []).append(r)
variants = [v for v in ['kernel', 'strict', 'atomic', 'atomic-hybrid', 'atomic-undo', 'atomic-redo'] if any(k[2] == v for k in med)]
def m(bs, fe, v, col):
    rs = med.get((bs, fe, v), [])
    return statistics.median(float(r[col]) for r in rs) if rs else None
keys = sorted({(k[0], k[1]) for k in med})
print('Random overwrites + fsync every N through the POSIX path, huge tmpfs, DAXKIT_PERSIST=flush (emulated dax),')
print('medians over repetitions. atomic = DAXKIT_ATOMIC (default policy: journal). CPU ns per write, fsyncs included, all')
print('threads; "atomic / strict" = strict CPU ns / atomic CPU ns (a throughput ratio).\n')
print('| size | fsync every | ' + ' | '.join(variants) + ' | atomic / strict | cheapest daxkit |')
print('|---' * (len(variants) + 4) + '|')
for bs, fe in keys:
    ns = {v: m(bs, fe, v, 'cpu_ns_per_op') for v in variants}
    ratio = f"{ns['strict'] / ns['atomic']:.2f}x" if ns.get('atomic') and ns.get('strict') else '-'
    cand = {v: x for v, x in ns.items() if v != 'kernel' and x}
    best = min(cand, key=cand.get) if cand else '-'
    print(f'| {bs} | {fe} | ' + ' | '.join(f'{ns[v]:,.0f}' if ns[v] else '-' for v in variants) + f' | {ratio} | {best} |')
print('\nThe same runs by wall time: ops/s (median write latency ns; p99.9 ns):\n')
print('| size | fsync every | ' + ' | '.join(variants) + ' |')
print('|---' * (len(variants) + 2) + '|')
for bs, fe in keys:
    cells = []
    for v in variants:
        o = m(bs, fe, v, 'ops_per_s')
        cells.append('-' if o is None else f"{o:,.0f} ({m(bs, fe, v, 'median_ns'):,.0f}; {m(bs, fe, v, 'p999_ns'):,.0f})")
    print(f'| {bs} | {fe} | ' + ' | '.join(cells) + ' |')
mrows = list(csv.DictReader(open(sys.argv[2]))) if len(sys.argv) > 2 else []
if mrows:
    print('\nmmap + msync (mmap_writer, 1-300 B stores into a 1 MiB MAP_SHARED file; whole-process wall and CPU '
          'per store incl. start-up, median over repetitions):\n')
    print('| msync every | kernel wall us/store | kernel CPU us/store | atomic wall us/store | atomic CPU us/store | wall ratio |')
    print('|---|---|---|---|---|---|')
    for fe in sorted({int(r['msync_every']) for r in mrows}):
        cell = {}
        for v in ('kernel', 'atomic-mmap'):
            rs = [r for r in mrows if r['variant'] == v and int(r['msync_every']) == fe]
            if rs:
                cell[v] = (statistics.median(float(r['wall_s']) / int(r['stores']) * 1e6 for r in rs),
                           statistics.median(float(r['cpu_s']) / int(r['stores']) * 1e6 for r in rs))
        if len(cell) == 2:
            k, a = cell['kernel'], cell['atomic-mmap']
            print(f'| {fe} | {k[0]:.2f} | {k[1]:.2f} | {a[0]:.2f} | {a[1]:.2f} | {a[0] / k[0]:.1f}x |')
EOF
