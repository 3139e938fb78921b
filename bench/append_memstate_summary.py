#!/usr/bin/env python3
"""Summary of bench/append_memstate.sh's CSV: per memory state and variant, the median pass wall and CPU
time, the kernel's median over the variant's (> 1: faster than the kernel), and the same ratio pair by pair
(each pair ran both sides back to back in the same memory state: its median and its worst).

Usage: bench/append_memstate_summary.py OUT.csv"""
import csv
import statistics
import sys


def main(path):
    rows = list(csv.DictReader(open(path)))
    by = {}
    for r in rows:
        by.setdefault((r["state"], r["variant"]), []).append(r)
    states = sorted({r["state"] for r in rows}, key=lambda s: [r["state"] for r in rows].index(s))
    print("| state | variant | passes | wall median s (min-max) | cpu median s | append median ns | x kernel (wall, medians) | per pair: median (worst) | x kernel (cpu) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for st in states:
        kern = by.get((st, "kernel"), [])
        kpair = {r["pair"]: float(r["wall_s"]) for r in kern}
        kwall = statistics.median(float(r["wall_s"]) for r in kern) if kern else None
        kcpu = statistics.median(float(r["cpu_s"]) for r in kern) if kern else None
        for (s, v), rs in by.items():
            if s != st:
                continue
            walls = [float(r["wall_s"]) for r in rs]
            cpus = [float(r["cpu_s"]) for r in rs]
            w, c = statistics.median(walls), statistics.median(cpus)
            med = statistics.median(int(r["median_ns"]) for r in rs)
            if v == "kernel" or kwall is None:
                ratio = pair_txt = cpu_ratio = "-"
            else:
                ratio = f"{kwall / w:.2f}x"
                pr = [kpair[r["pair"]] / float(r["wall_s"]) for r in rs if r["pair"] in kpair]
                pair_txt = f"{statistics.median(pr):.2f}x ({min(pr):.2f}x)" if pr else "-"
                cpu_ratio = f"{kcpu / c:.2f}x" if c else "-"
            print(f"| {st} | {v} | {len(rs)} | {w:.4f} ({min(walls):.4f}-{max(walls):.4f}) | {c:.4f} | {med:.0f} | {ratio} | {pair_txt} | {cpu_ratio} |")


if __name__ == "__main__":
    main(sys.argv[1])
