#!/usr/bin/env bash
# The latency tail of a 4 KiB write + sync (issue 4: p99.9 under 2x the median), op by op, each path paired
# with a machine floor in the same loop (bench/dk_bench_atomic_tail.c): every op slower than 2x the median is
# given a cause -- long (> 10 us: interrupt, preemption), engine (checkpoint, wrap, new journal page),
# machine (the paired floor op of the same iteration slow too), none. Fresh huge-page tmpfs,
# DAXKIT_PERSIST=flush (the dax code path: an EMULATION of persistent memory).
#   bench/atomic_tail.sh BUILD   Env: REPS [5], OPS [50000], PINS ["none 1"], PAIR [floor-io],
#     VARIANTS ["floor-busy floor-rec floor-io kernel journal hybrid posix-kernel posix-atomic"], OUT [/tmp/atomic-tail]
#   journal, hybrid: the C API (DAXKIT_ATOMIC_PACE as set: pacing is the default); posix-atomic: pwrite + fsync
#   under LD_PRELOAD with DAXKIT_ATOMIC (the journal), posix-kernel: the same program without the library,
#   posix-strict: under LD_PRELOAD in strict mode (session 15; not in the default VARIANTS).
#   Each op's write and sync phases are timed apart too (session 15): $OUT/phases.md, per run.
#   PAIR=none for T1's latencies: a paired op pays part of the pair op's write-backs (session 25: every path's
#   write phase +0.9-1.0 us with PAIR=floor-io, the pair's own median 1.4 -> 0.5-0.65 us); pairs are for the causes.
#   VARIANTS may name floor-busy:NS, a busy op padded to NS (session 25: as long as the engine's op, no IO).
#   IRQTRACE=1 (session 25; pinned runs, needs perf): each run under `perf record -C PIN` (interrupts, softirqs,
#   switches, page faults, syscalls on that CPU), and each op over 10 us given what the guest ran inside it
#   (bench/atomic_tail_irq.py): $OUT/irq.md and a table in summary.md. Tracing makes the ops slower: the
#   latencies of such runs are not the figures; their rates and causes are.
# Output: $OUT/tail.txt (every program's lines, the load), $OUT/summary.md (medians over repetitions of
# p50/p99/p99.9/max, the ratio per run, slow ops by cause summed over repetitions, and P(pair slow | slow)).
set -euo pipefail
BUILD=$(cd "${1:?usage: atomic_tail.sh BUILD}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/atomic-tail}
REPS=${REPS:-5} OPS=${OPS:-50000} PINS=${PINS:-none 1} PAIR=${PAIR:-floor-io} IRQTRACE=${IRQTRACE:-0}
VARIANTS=${VARIANTS:-floor-busy floor-rec floor-io kernel journal hybrid posix-kernel posix-atomic}
export DAXKIT_SRC=$SRC DAXKIT_BUILD=$BUILD
. "$SRC/tests/harness/media.sh"
dk_need_root
[ "$IRQTRACE" = 0 ] || command -v perf >/dev/null || dk_fail "IRQTRACE=1 needs perf"
[ -x "$BUILD/bin/dk_bench_atomic_tail" ] && [ -r "$BUILD/lib/libdaxkit.so" ] || dk_fail "$BUILD: dk_bench_atomic_tail or libdaxkit.so not built"
mkdir -p "$OUT"
rm -f "$OUT/irq.md"
dk_media_mount hugetmpfs 2G >/dev/null
export DAXKIT_PERSIST=flush
dir=$DK_MNT/bench
txt=$OUT/tail.txt
echo "load before: $(uptime)" | tee "$txt"
for rep in $(seq 1 "$REPS"); do
    for pin in $PINS; do
        for v in $VARIANTS; do
            pre=(env)
            [ "$pin" = none ] || pre=(taskset -c "$pin" env)
            case $v in
            posix-kernel) pre+=(DK_TAIL_LABEL=$v) prog=kernel ;;
            posix-atomic) pre+=(DK_TAIL_LABEL=$v LD_PRELOAD="$BUILD/lib/libdaxkit.so" DAXKIT_DIR="$dir"
                                "DAXKIT_ATOMIC=$dir/tail-data.bin") prog=kernel ;;
            posix-strict) pre+=(DK_TAIL_LABEL=$v LD_PRELOAD="$BUILD/lib/libdaxkit.so" DAXKIT_DIR="$dir"
                                DAXKIT_MODE=strict) prog=kernel ;;
            *) prog=$v ;;
            esac
            rm -rf "$dir" && mkdir -p "$dir"
            echo "# rep $rep pin $pin variant $v" >> "$txt"
            if [ "$IRQTRACE" = 1 ] && [ "$pin" != none ]; then
                trace=$OUT/trace-$rep-$pin-${v//[:\/]/_}.csv
                rm -f "$trace" "$OUT/perf.data"
                perf record -q -o "$OUT/perf.data" -C "$pin" -k mono -e irq_vectors:local_timer_entry \
                    -e irq_vectors:local_timer_exit -e irq_vectors:call_function_entry \
                    -e irq_vectors:call_function_single_entry -e irq_vectors:reschedule_entry \
                    -e irq_vectors:irq_work_entry -e irq:irq_handler_entry -e irq:softirq_entry -e sched:sched_switch \
                    -e exceptions:page_fault_user -e exceptions:page_fault_kernel -e raw_syscalls:sys_enter -- \
                    "${pre[@]}" "$BUILD/bin/dk_bench_atomic_tail" "$dir" "$prog" "$OPS" "$rep" "$PAIR" "$trace" |
                    sed "s/^/pin=$pin,/" >> "$txt"
                perf script -i "$OUT/perf.data" -F comm,pid,tid,cpu,time,event,trace 2>/dev/null > "$OUT/perf.txt"
                python3 "$SRC/bench/atomic_tail_irq.py" "$OUT/perf.txt" "$trace" "$v" "$pin" "$txt" | tee -a "$OUT/irq.md" >> "$txt"
                rm -f "$OUT/perf.data" "$OUT/perf.txt"
            else
                "${pre[@]}" "$BUILD/bin/dk_bench_atomic_tail" "$dir" "$prog" "$OPS" "$rep" "$PAIR" | sed "s/^/pin=$pin,/" >> "$txt"
            fi
        done
    done
done
echo "load after: $(uptime)" | tee -a "$txt"
grep -E '^pin=[^,]*,tail-(phase|short)' "$txt" > "$OUT/phases.md" || true
python3 - "$txt" "$PAIR" <<'EOF' | tee "$OUT/summary.md"
import re, statistics, sys
runs, causes, pair, short, rate, irq = {}, {}, {}, {}, {}, {}
for line in open(sys.argv[1]):
    m = re.match(r'pin=(\S+?),tail,([^,]+),ops \d+,median (\d+),p99 (\d+),p99.9 (\d+),max (\d+)', line)
    if m and not m.group(2).startswith('pair:'):
        runs.setdefault((m.group(1), m.group(2)), []).append([int(x) for x in m.groups()[2:]])
    m = re.match(r'pin=(\S+?),tail-causes,([^,]+),pair \S+,slow\(>2x\) (\d+) of \d+: (.*)', line)
    if m:
        c = causes.setdefault((m.group(1), m.group(2)), {})
        for name in ('long(>10us)', 'engine:checkpoint', 'engine:wrap', 'engine:new-page', 'machine(pair slow too)', 'none'):
            k = re.search(re.escape(name) + r' (\d+)', m.group(4))
            c[name] = c.get(name, 0) + (int(k.group(1)) if k else 0)
    m = re.match(r'pin=(\S+?),tail-short,([^,]+),ops over 10 us (\d+) .*ratio ([\d.]+)', line)
    if m:
        short.setdefault((m.group(1), m.group(2)), []).append((int(m.group(3)), float(m.group(4))))
    m = re.match(r'pin=(\S+?),tail-irq,([^,]+),ops over 10 us \d+: (.*?),timer on cpu', line)
    if m:
        d = irq.setdefault((m.group(1), m.group(2)), {'wo': []})
        for k, nk in re.findall(r'(own thread|switch|timer|irq|softirq|fault|syscall|none seen) (\d+) \(', m.group(3)):
            d[k] = d.get(k, 0) + int(nk)
        w = re.search(r'p99.9 \d+ ns = ([\d.]+)x', line)
        if w:
            d['wo'].append(float(w.group(1)))
    m = re.match(r'pin=(\S+?),tail-rate,([^,]+),.*: ([\d.]+) per ms', line)
    if m:
        rate.setdefault((m.group(1), m.group(2)), []).append(float(m.group(3)))
    m = re.match(r'pin=(\S+?),tail-pair,([^,]+),P\(pair slow \| slow\) ([\d.]+),P\(pair slow\) ([\d.]+)', line)
    if m:
        pair.setdefault((m.group(1), m.group(2)), []).append((float(m.group(3)), float(m.group(4))))
print('4 KiB write + sync, every op; huge tmpfs, DAXKIT_PERSIST=flush; medians over repetitions (ns); ratio = p99.9 /')
print('median per run, median (range). Slow = over 2x the run\'s median; causes summed over repetitions.')
if sys.argv[2] != 'none':
    print(f'Paired with {sys.argv[2]}: each op pays part of the pair op\'s write-backs (session 25: +0.9-1.0 us in the')
    print('write phase of every path, the kernel\'s too) -- for the causes, not for T1\'s latencies: PAIR=none.')
print()
print('| pinned | path | runs | p50 | p99 | p99.9 | max | p99.9 / p50 | slow ops by cause | P(floor slow \\| slow) vs P(floor slow) |')
print('|---|---|---|---|---|---|---|---|---|---|')
for (pin, path), rs in runs.items():
    med = [statistics.median(r[i] for r in rs) for i in range(4)]
    ratios = sorted(r[2] / r[0] for r in rs)
    c = causes.get((pin, path), {})
    cs = ', '.join(f'{k} {v}' for k, v in c.items() if v)
    p = pair.get((pin, path), [])
    ps = f'{statistics.median(x[0] for x in p):.2f} vs {statistics.median(x[1] for x in p):.3f}' if p else '-'
    print(f"| {'cpu ' + pin if pin != 'none' else 'no'} | {path} | {len(rs)} | {med[0]:,.0f} | {med[1]:,.0f} | {med[2]:,.0f} | "
          f"{med[3]:,.0f} | {statistics.median(ratios):.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}) | {cs} | {ps} |")
if short:
    print('\nA diagnostic, not the target (session 15): ops over 10 us (interrupts, preemption) per run -- the p99.9 of')
    print('50,000 ops is the 50th slowest -- and p99.9 / median of the other ops, median (range) over repetitions;')
    print('session 25: ops over 10 us per ms of the path\'s own op time (each op counted up to 10 us), median (range):')
    print('the same rate on every path means no stall of a path\'s own, only a longer op.\n')
    print('| pinned | path | ops over 10 us per run | p99.9 / p50 without them | per ms of op time |')
    print('|---|---|---|---|---|')
    for (pin, path), v in short.items():
        longs = sorted(x[0] for x in v); rs = sorted(x[1] for x in v)
        rr = sorted(rate.get((pin, path), []))
        rs_ = f"{statistics.median(rr):.3f} ({rr[0]:.3f}-{rr[-1]:.3f})" if rr else '-'
        print(f"| {'cpu ' + pin if pin != 'none' else 'no'} | {path} | {statistics.median(longs):.0f} ({longs[0]}-{longs[-1]}) | "
              f"{statistics.median(rs):.2f}x ({rs[0]:.2f}-{rs[-1]:.2f}) | {rs_} |")
if irq:
    print('\nIRQTRACE (session 25): the ops over 10 us by what the guest ran on the CPU inside them, summed over')
    print('repetitions (none seen: the vCPU was not running), and p99.9 / p50 without the ops other tasks preempted,')
    print('median (range). Traced runs are slower: their latencies are not the figures.\n')
    kinds = ('switch', 'own thread', 'timer', 'irq', 'softirq', 'fault', 'syscall', 'none seen')
    print('| pinned | path | ' + ' | '.join(kinds) + ' | p99.9 / p50 without the preempted |')
    print('|---|---|' + '---|' * len(kinds) + '---|')
    for (pin, path), d in irq.items():
        w = sorted(d['wo'])
        ws = f"{statistics.median(w):.2f}x ({w[0]:.2f}-{w[-1]:.2f})" if w else '-'
        print(f"| cpu {pin} | {path} | " + ' | '.join(str(d.get(k, 0)) for k in kinds) + f" | {ws} |")
EOF
