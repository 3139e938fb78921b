#!/usr/bin/env python3
"""Summarises bench/strict.sh's CSV: ops/s per variant for each (medium, op, bs, fsync_every), strict's
ratio to sync (the issue's "within 2x of sync") and to the kernel, and the inline/staged choice.
Usage: strict_summary.py strict.csv [strict-recovery.csv] > strict-summary.md"""
import csv
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
ops = defaultdict(list)
for r in rows:
    if r["op"] in ("randwrite", "append"):
        ops[(r["medium"], r["op"], int(r["bs"]), int(r["fsync_every"]), r["variant"])].append(float(r["ops_per_s"]))
mean = {k: sum(v) / len(v) for k, v in ops.items()}
keys = sorted({k[:4] for k in mean})
print("# Strict mode benchmark (bench/strict.sh)\n")
print("ops/s; hugetmpfs rows use DAXKIT_PERSIST=flush (emulated DAX persistence), xfs rows real msync/fsync.")
print("strict/sync = strict's time per op over sync's (issue target: <= 2 at 4 KiB, fsync every 10);")
print("strict/kernel = strict's ops/s over the kernel's (issue target on xfs: >= 1).\n")
print("| medium | op | bs | fsync every | kernel | posix | sync | strict | strict staged | strict inline | strict time / sync | strict / kernel |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for m, op, bs, fe in keys:
    p = "flush" if m == "hugetmpfs" else "auto"
    g = lambda v: mean.get((m, op, bs, fe, v), 0)
    k, po, sy, st = g("kernel"), g("daxkit-posix-" + p), g("daxkit-sync-" + p), g("daxkit-strict-" + p)
    ss, si = g("daxkit-strict-staged-" + p), g("daxkit-strict-inline-" + p)
    print("| %s | %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s |" % (
        m, op, bs, fe, k, po, sy, st, ss, si, "%.2f" % (sy / st) if st else "-", "%.2f" % (st / k) if k else "-"))
# Medians are steadier than ops/s on a loaded machine: per-op time = median write + median fsync / fsync_every.
med = defaultdict(list)
for r in rows:
    if r["op"] in ("randwrite", "append"):
        fe = int(r["fsync_every"])
        med[(r["medium"], r["op"], int(r["bs"]), fe, r["variant"])].append(
            float(r["median_ns"]) + float(r["fsync_median_ns"]) / fe)
median = lambda v: sorted(v)[len(v) // 2]
print("\n## Median time per operation (write + fsync / fsync_every), ns; median over repetitions\n")
print("| medium | op | bs | fsync every | kernel | sync | strict | strict / sync | strict / kernel |")
print("|---|---|---|---|---|---|---|---|---|")
for m, op, bs, fe in keys:
    p = "flush" if m == "hugetmpfs" else "auto"
    g = lambda v: median(med[(m, op, bs, fe, v)]) if med.get((m, op, bs, fe, v)) else 0
    k, sy, st = g("kernel"), g("daxkit-sync-" + p), g("daxkit-strict-" + p)
    print("| %s | %s | %d | %d | %.0f | %.0f | %.0f | %s | %s |" % (m, op, bs, fe, k, sy, st,
          "%.2f" % (st / sy) if sy else "-", "%.2f" % (st / k) if k else "-"))
if len(sys.argv) > 2:
    print("\n## Recovery\n\n| records | replay ms | records/s |\n|---|---|---|")
    for r in csv.DictReader(open(sys.argv[2])):
        print("| %s | %s | %.2f M |" % (r["records"], r["replay_ms"], float(r["records_per_s"]) / 1e6))

import os
sq = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "strict-sqlite.csv")
if os.path.exists(sq):
    t = defaultdict(list)
    for r in csv.DictReader(open(sq)):
        t[(r["locking"], r["variant"], r["journal"])].append(float(r["txn_per_s"]))
    print("\n## SQLite single-insert transactions, huge tmpfs (strict/sync/atomic: DAXKIT_PERSIST=flush), txn/s per repetition\n")
    print("(strict OFF keeps each write whole, not a commit; atomic OFF = posix + DAXKIT_ATOMIC keeps commits whole)\n")
    print("| locking | kernel WAL | kernel OFF | strict OFF | strict WAL | sync WAL | atomic OFF | strict OFF / kernel WAL |")
    print("|---|---|---|---|---|---|---|---|")
    for l in ("normal", "exclusive"):
        c = lambda v, j: t.get((l, v, j), [])
        f = lambda x: " / ".join("%.0f" % y for y in x) or "-"
        kw, so = c("kernel", "wal"), c("strict", "off")
        ratio = "%.2f" % (median(so) / median(kw)) if kw and so else "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (l, f(kw), f(c("kernel", "off")), f(so), f(c("strict", "wal")),
                                                            f(c("sync", "wal")), f(c("atomic", "off")), ratio))
