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
if len(sys.argv) > 2:
    print("\n## Recovery\n\n| records | replay ms | records/s |\n|---|---|---|")
    for r in csv.DictReader(open(sys.argv[2])):
        print("| %s | %s | %.2f M |" % (r["records"], r["replay_ms"], float(r["records_per_s"]) / 1e6))
