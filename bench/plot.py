#!/usr/bin/env python3
"""PNG plots of bench/results/micro.csv and apps.csv (matplotlib; exits 0 with a note when it is missing).

micro-<medium>.png: ops/s per operation and path (median of repetitions), log scale, with the floor.
micro-latency-<medium>.png: median and p99 latency per operation and path.
apps-<medium>.png: speedup of each daxkit variant over the kernel per application metric.
Bars of DAXKIT_PERSIST=flush variants are hatched and labelled "emulated persistence".

Usage: plot.py RESULTS_DIR
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import OPS, load_apps, load_micro, med  # noqa: E402

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("plot.py: matplotlib not installed (scripts/deps.sh bench installs python3-matplotlib); no plots")
    sys.exit(0)


def label(v):
    return v + " (emulated persistence)" if v.endswith("-flush") else v


def bars(ax, groups, variants, key_fn, value_fn, xlabels):
    width = 0.8 / max(1, len(variants))
    for i, v in enumerate(variants):
        xs, ys = [], []
        for j, x in enumerate(xlabels):
            val = value_fn(key_fn(v, x))
            if val == val:
                xs.append(j + i * width)
                ys.append(val)
        ax.bar(xs, ys, width, label=label(v), hatch="//" if v.endswith("-flush") else None)
    ax.set_xticks([j + width * (len(variants) - 1) / 2 for j in range(len(xlabels))])
    ax.set_xticklabels(xlabels, rotation=20, ha="right", fontsize=8)


def plot_micro(d):
    g, order = load_micro(os.path.join(d, "micro.csv"))
    media = []
    for m, _, _ in order:
        if m not in media:
            media.append(m)
    for m in media:
        variants = []
        for mm, v, _ in order:
            if mm == m and v not in variants:
                variants.append(v)
        fig, ax = plt.subplots(figsize=(12, 5))
        bars(ax, g, variants, lambda v, op: (m, v, op),
             lambda k: med(g[k]["ops_per_s"]) if k in g else float("nan"), OPS)
        ax.set_yscale("log")
        ax.set_ylabel("operations/s (4 KiB, fsync every 10; floor: no fsync)")
        ax.set_title(f"dk_bench_posix on {m}: kernel vs daxkit vs user-space floor")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(d, f"micro-{m}.png"), dpi=110)
        plt.close(fig)
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        for ax, col in zip(axes, ("median_ns", "p99_ns")):
            bars(ax, g, variants, lambda v, op: (m, v, op),
                 lambda k, c=col: med(g[k][c]) if k in g else float("nan"), OPS)
            ax.set_yscale("log")
            ax.set_ylabel(f"{col} per operation")
        axes[0].legend(fontsize=6, ncol=2)
        fig.suptitle(f"per-operation latency on {m}")
        fig.tight_layout()
        fig.savefig(os.path.join(d, f"micro-latency-{m}.png"), dpi=110)
        plt.close(fig)


def plot_apps(d):
    g, order, meta = load_apps(os.path.join(d, "apps.csv"))
    media = []
    for m, _, _, _ in order:
        if m not in media:
            media.append(m)
    for m in media:
        metrics, variants = [], []
        for mm, a, metric, v in order:
            if mm != m:
                continue
            if (a, metric) not in metrics:
                metrics.append((a, metric))
            if v != "kernel" and v not in variants:
                variants.append(v)

        def speedup(key):
            v, (a, metric) = key
            x, k = med(g.get((m, a, metric, v), [])), med(g.get((m, a, metric, "kernel"), []))
            if not (x == x and k == k and x and k):
                return float("nan")
            return x / k if meta[(m, a, metric)][1] == "higher" else k / x

        fig, ax = plt.subplots(figsize=(13, 5))
        bars(ax, g, variants, lambda v, am: (v, am), speedup, metrics)
        ax.set_xticklabels([f"{a}:{metric}" for a, metric in metrics], rotation=30, ha="right", fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_ylabel("speedup over the kernel (> 1: daxkit faster)")
        ax.set_title(f"applications on {m}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(d, f"apps-{m}.png"), dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    plot_micro(d)
    plot_apps(d)
    print(f"plot.py: PNGs written to {d}")
