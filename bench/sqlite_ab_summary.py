#!/usr/bin/env python3
"""Summary of bench/sqlite_ab.sh's CSV as Markdown, and a PNG of the runs when matplotlib is installed.

Per variant (in the order of their first run): runs, min, first quartile, median, mean of the lowest quarter of
the runs -- CPU microseconds a transaction of sqlite3 alone -- and each one's ratio to the kernel's. On a loaded
machine the low statistics (q1, the low quarter's mean) are the steadier: load only adds CPU time to a run.

Usage: sqlite_ab_summary.py CSV [PNG]
"""
import csv
import statistics
import sys
from collections import OrderedDict


def stats(xs):
    xs = sorted(xs)
    n = len(xs)
    low = xs[:max(1, n // 4)]
    return {"n": n, "min": xs[0], "q1": xs[n // 4], "med": statistics.median(xs), "lowq": statistics.mean(low)}


def main(path, png=None):
    rows = list(csv.DictReader(open(path)))
    if not rows:
        print("sqlite_ab: no runs")
        return
    runs = OrderedDict()
    for r in rows:
        runs.setdefault(r["variant"], []).append(float(r["us_per_txn"]))
    st = {v: stats(xs) for v, xs in runs.items()}
    k = st.get("kernel")
    r0 = rows[0]
    loads = [float(r["load1"]) for r in rows]
    print(f"# sqlite3 commits, CPU of sqlite3 alone ({r0['medium']}, journal_mode={r0['journal']}, mode {r0['mode']}, "
          f"{r0['txns']} transactions a run, synchronous=FULL; load {min(loads):.1f}-{max(loads):.1f})\n")
    print("us a transaction (task-clock / transactions); ratios to the kernel's: first quartile, median, mean of the "
          "lowest quarter.\n")
    print("| variant | runs | min | q1 | median | low-quarter mean | ratio q1 | ratio median | ratio low quarter |")
    print("|---|---|---|---|---|---|---|---|---|")
    for v, s in st.items():
        ratio = (f"{s['q1'] / k['q1']:.3f}x | {s['med'] / k['med']:.3f}x | {s['lowq'] / k['lowq']:.3f}x" if k
                 else "- | - | -")
        print(f"| {v} | {s['n']} | {s['min']:.2f} | {s['q1']:.2f} | {s['med']:.2f} | {s['lowq']:.2f} | {ratio} |")
    if not png:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(sqlite_ab: matplotlib not installed -- scripts/deps.sh bench installs python3-matplotlib; no plot)")
        return
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(runs)), 4))
    ax.boxplot(list(runs.values()), showfliers=True)
    ax.set_xticks(range(1, len(runs) + 1))
    ax.set_xticklabels([f"{v}\n{(st[v]['q1'] / k['q1']):.3f}x q1" if k else v for v in runs])
    ax.set_ylabel("CPU us a transaction (sqlite3 alone)")
    ax.set_title(f"sqlite3 {r0['journal']} commits, {r0['medium']}, {r0['txns']} a run")
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    print(f"\n(plot: {png})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
