#!/usr/bin/env python3
"""What the guest saw inside each op over 10 us of one pinned dk_bench_atomic_tail run (session 25).

    atomic_tail_irq.py PERF_SCRIPT_TXT TRACE_CSV LABEL PIN TAIL_TXT

PERF_SCRIPT_TXT: `perf script -F comm,pid,tid,cpu,time,event,trace` of `perf record -C PIN -k mono` around the run
(bench/atomic_tail.sh, IRQTRACE=1: interrupts, softirqs, switches, page faults, syscalls); TRACE_CSV: the run's
slow ops (dk_bench_atomic_tail's TRACE_CSV, with mono_us). Each op over 10 us gets the first of: switch (the CPU
switched to another task: preemption), own thread (only to another thread of the bench's process: the library's
checkpoint thread, its staging pool's thread), timer (the local timer interrupt), irq (another interrupt: device, IPI,
irq work), softirq, fault (a page fault), syscall (the bench's own), none seen (nothing ran in the guest on that
CPU: the vCPU itself was not running -- the host). Prints one line, tail-irq, plus the timer handler's length,
and the run's p99.9 without the ops another task preempted (the same rank -- of 50,000 ops, the 50th slowest of
the others; the run's op count and median from its last `tail,LABEL` line in TAIL_TXT): what the run would have
shown with nothing else to run on its CPU -- interrupts and the host's stalls stay in it.
"""
import bisect
import csv
import re
import statistics
import sys

perf_txt, trace_csv, label, pin, tail_txt = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
n_ops = median = 0
for line in open(tail_txt):
    m = re.match(r'pin=%d,tail,%s,ops (\d+),median (\d+),' % (pin, re.escape(label)), line)
    if m:
        n_ops, median = int(m.group(1)), int(m.group(2))
line_re = re.compile(r'^\s*(.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+([^:\s]+:[^:\s]+):')
next_re = re.compile(r'next_pid=(\d+)')
events = []  # (us, event, pid, comm, next tid of a switch)
for line in open(perf_txt, errors='replace'):
    m = line_re.match(line)
    if m and int(m.group(4)) == pin:
        n = next_re.search(line)
        events.append((float(m.group(5)) * 1e6, m.group(6).split(':')[1], int(m.group(2)), m.group(1),
                       int(n.group(1)) if n else -1))
events.sort()
times = [e[0] for e in events]
rows = [r for r in csv.DictReader(open(trace_csv)) if r.get('mono_us') and int(r['ns']) > 10000]
bench_pids = {e[2] for e in events if e[3].startswith('dk_bench_atomic')}
tid_re = re.compile(r'^\s*.*?\s+(\d+)/(\d+)\s+\[')
bench_tids = set()
for line in open(perf_txt, errors='replace'):
    m = tid_re.match(line)
    if m and int(m.group(1)) in bench_pids:
        bench_tids.add(int(m.group(2)))

ORDER = ('switch', 'own thread', 'timer', 'irq', 'softirq', 'fault', 'syscall', 'none seen')
KIND = {'sched_switch': 'switch', 'local_timer_entry': 'timer', 'irq_handler_entry': 'irq',
        'call_function_entry': 'irq', 'call_function_single_entry': 'irq', 'reschedule_entry': 'irq',
        'irq_work_entry': 'irq', 'softirq_entry': 'softirq', 'page_fault_user': 'fault',
        'page_fault_kernel': 'fault', 'sys_enter': 'syscall'}
count = {k: 0 for k in ORDER}
lengths = {k: [] for k in ORDER}
slow_kept = [int(r['ns']) for r in csv.DictReader(open(trace_csv)) if int(r['ns']) <= 10000]
for r in rows:
    start, ns = float(r['mono_us']), int(r['ns'])
    a, b = bisect.bisect_left(times, start - 0.5), bisect.bisect_right(times, start + ns / 1000 + 0.5)
    seen = set()
    for t, ev, pid, _, nxt in events[a:b]:
        k = KIND.get(ev)
        if k == 'switch' and nxt in bench_tids and pid in bench_pids:
            k = 'own thread'
        if k == 'syscall' and pid not in bench_pids:
            continue  # another task's, after a switch (counted as the switch)
        if k:
            seen.add(k)
    k = next((k for k in ORDER[:-1] if k in seen), 'none seen')
    count[k] += 1
    lengths[k].append(ns)
    if k != 'switch':
        slow_kept.append(ns)

# the timer handler's own length (entry to exit), and the bench's syscalls inside the loop
handler, entry = [], None
for t, ev, pid, _, _ in events:
    if ev == 'local_timer_entry':
        entry = t
    elif ev == 'local_timer_exit' and entry is not None:
        handler.append(t - entry)
        entry = None
if rows:
    lo, hi = min(float(r['mono_us']) for r in rows), max(float(r['mono_us']) for r in rows)
else:
    lo = hi = 0
sys_in_loop = sum(1 for t, ev, pid, _, _ in events if ev == 'sys_enter' and pid in bench_pids and lo <= t <= hi)
parts = []
for k in ORDER:
    if count[k]:
        parts.append(f'{k} {count[k]} (median {statistics.median(lengths[k]) / 1000:.1f} us)')
hs = sorted(handler)
hdesc = (f'{len(hs)} ticks, handler median {statistics.median(hs):.1f} us, p90 {hs[len(hs) * 9 // 10]:.1f}'
         if hs else 'no ticks')
wo = ''
if n_ops and median:
    kept = n_ops - count['switch']
    rank = kept - kept * 999 // 1000  # from the top, as stats_of's p99.9 (the 50th of 50,000)
    slow_kept.sort(reverse=True)
    if len(slow_kept) >= rank:
        p = slow_kept[rank - 1]
        wo = f',without the {count["switch"]} ops preempted: p99.9 {p} ns = {p / median:.2f}x the median {median}'
print(f'pin={pin},tail-irq,{label},ops over 10 us {len(rows)}: ' + ', '.join(parts) +
      f',timer on cpu {pin}: {hdesc},bench syscalls between its first and last slow op {sys_in_loop}{wo}')
