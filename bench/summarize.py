#!/usr/bin/env python3
"""Summarises bench/results/micro.csv and apps.csv into markdown tables (standard library only).

Every figure is the median over the repetitions of one run. Ratios: daxkit/kernel compares operations per
second (higher is better); daxkit/floor compares median per-operation latency with the user-space floor
(1.0 = as fast as a bare copy; the issue's target is <= 1.3). Variants ending in -flush ran with
DAXKIT_PERSIST=flush: persistence is EMULATED (cache-line flushes as on DAX), which is never the same
guarantee as a kernel run that fsyncs to a page-cache medium -- the tables say so on every such row.

Usage: summarize.py RESULTS_DIR   (writes RESULTS_DIR/summary.md and prints it)
"""
import csv
import os
import statistics
import sys
from collections import defaultdict

OPS = ["seqread", "randread", "seqwrite", "randwrite", "append"]
MEDIUM_PERSISTENCE = {
    "hugetmpfs": "volatile (memory)",
    "tmpfs": "volatile (memory)",
    "xfs": "pagecache: fsync durable to the RAM-backed loop",
    "ext4": "pagecache: fsync durable",
}


def persistence(medium, variant):
    if variant.endswith("-flush"):
        return "EMULATED (DAXKIT_PERSIST=flush)"
    if variant == "floor":
        return "none (no fsync, bare stores)"
    return MEDIUM_PERSISTENCE.get(medium, "per medium")


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def load_micro(path):
    groups = defaultdict(lambda: defaultdict(list))
    order = []
    if not os.path.exists(path):
        return groups, order
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["medium"], r["variant"], r["op"])
            if r["op"] == "FAILED":
                continue
            if key not in groups:
                order.append(key)
            for k in ("ops_per_s", "median_ns", "p99_ns", "fsync_median_ns"):
                groups[key][k].append(float(r[k]))
    return groups, order


def fmt_ratio(x):
    return "n/a" if x != x else f"{x:.2f}x"


def micro_tables(groups, order):
    out = []
    media = []
    for m, _, _ in order:
        if m not in media:
            media.append(m)
    for m in media:
        variants = []
        for mm, v, _ in order:
            if mm == m and v not in variants and v not in ("kernel", "floor"):
                variants.append(v)
        out.append(f"\n### {m} ({MEDIUM_PERSISTENCE.get(m, '')})\n")
        out.append("| op | path | persistence | ops/s | median ns | p99 ns | fsync median ns | daxkit/kernel ops/s | median/floor |")
        out.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
        for op in OPS:
            k = groups.get((m, "kernel", op))
            fl = groups.get((m, "floor", op))
            if not k:
                continue
            kops = med(k["ops_per_s"])
            fmed = med(fl["median_ns"]) if fl else float("nan")
            for v in ["kernel", "floor"] + variants:
                g = groups.get((m, v, op))
                if not g:
                    continue
                ops = med(g["ops_per_s"])
                mn = med(g["median_ns"])
                vs_k = "" if v in ("kernel", "floor") else fmt_ratio(ops / kops)
                vs_f = "" if v == "floor" else fmt_ratio(mn / fmed)
                fs = "" if v == "floor" else f"{med(g['fsync_median_ns']):.0f}"
                out.append(f"| {op} | {v} | {persistence(m, v)} | {ops:,.0f} | {mn:.0f} | {med(g['p99_ns']):.0f} "
                           f"| {fs} | {vs_k} | {vs_f} |")
    return out


def targets(groups):
    """The issue's targets on huge-page tmpfs with DAXKIT_PERSIST=flush, checked against this run."""
    out = ["\n## Targets (huge-page tmpfs, daxkit with DAXKIT_PERSIST=flush vs the kernel, same run)\n",
           "| target | measured | met |", "|---|---|---|"]
    m = "hugetmpfs"

    def ratio(v, op):
        g, k = groups.get((m, v, op)), groups.get((m, "kernel", op))
        return med(g["ops_per_s"]) / med(k["ops_per_s"]) if g and k else float("nan")

    def floor_ratio(v, op):
        g, f = groups.get((m, v, op)), groups.get((m, "floor", op))
        return med(g["median_ns"]) / med(f["median_ns"]) if g and f else float("nan")

    checks = [
        ("seq overwrite >= 2x kernel (posix-stage-flush)", ratio("daxkit-posix-stage-flush", "seqwrite"), 2.0, True),
        ("seq read >= 2x kernel (posix-stage-flush)", ratio("daxkit-posix-stage-flush", "seqread"), 2.0, True),
        ("random read >= 1.5x kernel (posix-stage-flush)", ratio("daxkit-posix-stage-flush", "randread"), 1.5, True),
        ("append >= 2.5x kernel (posix-extend-flush)", ratio("daxkit-posix-extend-flush", "append"), 2.5, True),
        ("append >= 2.5x kernel (posix-extendkeep-flush: EXTEND_SYNC=keep)",
         ratio("daxkit-posix-extendkeep-flush", "append"), 2.5, True),
        ("append default (stage) never slower than kernel", ratio("daxkit-posix-stage-flush", "append"), 1.0, True),
    ]
    for op in OPS:
        checks.append((f"{op} median within 1.3x of floor (posix-stage-flush)",
                       floor_ratio("daxkit-posix-stage-flush", op), 1.3, False))
    for name, x, bound, higher in checks:
        if x != x:
            out.append(f"| {name} | n/a | n/a |")
            continue
        ok = x >= bound if higher else x <= bound
        out.append(f"| {name} | {x:.2f}x | {'yes' if ok else 'NO'} |")
    return out


def load_apps(path):
    groups = defaultdict(list)
    order = []
    meta = {}
    if not os.path.exists(path):
        return groups, order, meta
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["medium"], r["app"], r["metric"], r["variant"])
            if key not in groups:
                order.append(key)
            meta[(r["medium"], r["app"], r["metric"])] = (r["unit"], r["better"])
            try:
                groups[key].append(float(r["value"]))
            except ValueError:
                pass
    return groups, order, meta


def app_tables(groups, order, meta):
    out = []
    rows = []
    for m, a, metric, v in order:
        if (m, a, metric) not in rows:
            rows.append((m, a, metric))
    variants = []
    for _, _, _, v in order:
        if v not in variants:
            variants.append(v)
    if not rows:
        return out
    out.append("\n## Application benchmarks (median of repetitions; speedup = daxkit vs kernel, > 1 is faster)\n")
    def col(v):
        return f"{v} (EMULATED persistence)" if v.endswith("-flush") else v
    hdr = "| medium | app | metric | unit | " + " | ".join(col(v) for v in variants) + " | " + \
          " | ".join(f"speedup {col(v)}" for v in variants if v != "kernel") + " |"
    out.append(hdr)
    out.append("|" + "---|" * (4 + len(variants) + len(variants) - 1))
    for m, a, metric in rows:
        unit, better = meta[(m, a, metric)]
        vals = {v: med(groups.get((m, a, metric, v), [])) for v in variants}
        k = vals.get("kernel", float("nan"))
        cells = [f"{vals[v]:,.4g}" if vals[v] == vals[v] else "n/a" for v in variants]
        sp = []
        for v in variants:
            if v == "kernel":
                continue
            x = vals[v]
            r = (x / k if better == "higher" else k / x) if x == x and k == k and x and k else float("nan")
            sp.append(fmt_ratio(r))
        out.append(f"| {m} | {a} | {metric} | {unit} | " + " | ".join(cells) + " | " + " | ".join(sp) + " |")
    if any(v.endswith("-flush") for v in variants):
        out.append("\nColumns ending in -flush ran with DAXKIT_PERSIST=flush: EMULATED persistence. On xfs the kernel "
                   "column fsyncs to the (RAM-backed) device, a stronger guarantee than the emulation; compare "
                   "those columns only with that in mind.")
    return out


def app_targets(groups, meta):
    """Application targets of the issue, per medium, for the default configuration (posix, stage, auto)."""
    out = []
    write_heavy = [("redis", "set-aof-always"), ("rocksdb", "fillsync"), ("sqlite", "insert-txn-wal"),
                   ("sqlite", "update-txn-wal"), ("sqlite", "insert-txn-delete"), ("sqlite", "update-txn-delete")]
    meta_heavy = [("tree", "git-init-add-commit"), ("tree", "tar-create"), ("tree", "tar-extract"),
                  ("tree", "rsync-copy")]
    media = sorted({m for (m, _, _) in meta})
    for m in media:
        for v in ("posix-stage-auto", "posix-extend-auto", "posix-extend-flush"):
            rows = []
            for kind, items, bound in (("write-heavy: faster than the kernel", write_heavy, 1.0),
                                       ("metadata-heavy: at most 5% slower", meta_heavy, 0.95)):
                for a, metric in items:
                    if (m, a, metric) not in meta:
                        continue
                    x, k = med(groups.get((m, a, metric, v), [])), med(groups.get((m, a, metric, "kernel"), []))
                    if not (x == x and k == k and x and k):
                        continue
                    sp = x / k if meta[(m, a, metric)][1] == "higher" else k / x
                    ok = sp > bound if bound == 1.0 else sp >= bound
                    rows.append(f"| {kind} | {a} {metric} | {sp:.2f}x | {'yes' if ok else 'NO'} |")
            if rows:
                label = f"{m}, daxkit {v}" + (" (EMULATED persistence)" if v.endswith("-flush") else "")
                out += [f"\n### Application targets: {label} vs kernel\n", "| target | metric | speedup | met |",
                        "|---|---|---|---|"] + rows
    return out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    g, order = load_micro(os.path.join(d, "micro.csv"))
    lines = ["# daxkit benchmark summary", ""]
    info = os.path.join(d, "run-info.txt")
    if os.path.exists(info):
        lines += ["```", open(info).read().rstrip(), "```"]
    if order:
        lines.append("\n## 4 KiB microbenchmark (dk_bench_posix, fsync every 10 ops, 128 MiB file)")
        lines.append("daxkit/kernel: ops/s ratio (fsync included). median/floor: median op latency over the "
                     "user-space floor's (floor has no fsync).")
        lines += micro_tables(g, order)
        lines += targets(g)
    ag, ao, am = load_apps(os.path.join(d, "apps.csv"))
    lines += app_tables(ag, ao, am)
    lines += app_targets(ag, am)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
