#!/usr/bin/env python3
"""Summarise bench/results/graph/*.csv into summary.txt (targets marked met / MISSED) and PNG plots.

Each comparison uses the fastest trial of each configuration: other processes share this 2-core
machine, and the minimum is the figure least disturbed by them. Plots are skipped without matplotlib.
"""
import csv
import os
import statistics
import sys
from collections import defaultdict

OUT = sys.argv[1] if len(sys.argv) > 1 else "bench/results/graph"
lines = []


def say(s=""):
    lines.append(s)
    print(s)


def rows(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def target(ok, text):
    say(("  [met]    " if ok else "  [MISSED] ") + text)


def engine():
    r = rows("engine_overhead.csv")
    if not r:
        return
    say("engine overhead per request (issue + switch + completion check), time-based emu, 0 latency,")
    say("thread CPU time per request (wall time per request, which also counts other processes, in brackets):")
    by = defaultdict(list)
    eng = defaultdict(list)
    wall = defaultdict(list)
    for x in r:
        by[int(x["contexts"])].append(float(x["ns_per_request"]))
        if x.get("engine_only_ns"):
            eng[int(x["contexts"])].append(float(x["engine_only_ns"]))
        if x.get("wall_ns_per_request"):
            wall[int(x["contexts"])].append(float(x["wall_ns_per_request"]))
    for c in sorted(by):
        extra = f"  engine alone (always-ready device) {statistics.median(eng[c]):6.2f} ns" if eng[c] else ""
        w = f"  (wall {statistics.median(wall[c]):6.2f} ns)" if wall[c] else ""
        say(f"  contexts={c:5d}  median {statistics.median(by[c]):6.2f} ns  min {min(by[c]):6.2f} ns{w}{extra}")
    best = statistics.median(by.get(64, by[min(by)]))
    target(best < 15, f"overhead < 15 ns at 64 contexts: {best:.2f} ns")


def emu_model():
    r = rows("emu_model.csv")
    if not r:
        return
    by = defaultdict(list)
    for x in r:
        by[(x["model"], x["latency_us"], x["iops_max"], x["contexts"])].append(float(x["fraction"]))
    say("emu models in real time (best of 3): achieved / allowed rate, allowed = min(contexts / latency, iops_max)")
    for (m, l, i, c), f in sorted(by.items()):
        cap = f"{float(i) / 1e6:.0f} M/s" if float(i) else "none"
        say(f"  {m:6s} latency {l:>3s} us  ceiling {cap:>8s}  contexts {c:>4s}: {max(f):5.2f}")


BACKENDS = ("dram", "dram-prefetch", "emu", "mmap", "uring")


def kernels():
    """Per configuration and backend: for each trial index (= one source, the same for every backend),
    the fastest of the rounds; the configuration's time is the sum over the sources every backend ran."""
    r = rows("kernels.csv")
    if not r:
        return
    per = defaultdict(dict)  # (graph, scale, kernel, threads, backend) -> {trial: (wall, cpu)}
    for x in r:
        if not x["seconds"]:
            continue
        key = (x["graph"], int(x["scale"]), x["kernel"], int(x["threads"]), x["backend"])
        t = int(x["trial"])
        cpu = float(x["cpu_s"]) if x.get("cpu_s") else float("nan")
        old = per[key].get(t)
        per[key][t] = (min(old[0], float(x["seconds"])) if old else float(x["seconds"]),
                       min(old[1], cpu) if old else cpu)
    groups = sorted({k[:4] for k in per})
    best, best_cpu = {}, {}
    for g in groups:
        have = [per[g + (b,)] for b in BACKENDS if g + (b,) in per]
        common = set.intersection(*(set(h) for h in have))
        for b in BACKENDS:
            if g + (b,) in per:
                best[g + (b,)] = sum(per[g + (b,)][t][0] for t in common)
                best_cpu[g + (b,)] = sum(per[g + (b,)][t][1] for t in common)
    say("kernels: seconds (per source the fastest round, summed over the sources); ratios vs dram")
    say(f"  {'graph':8s} {'kernel':5s} thr {'dram':>8s} {'dram-pf':>8s} {'emu5us':>8s} {'mmap':>8s} {'uring':>8s}"
        f"  pf speedup (cpu)  emu/dram (cpu)")
    for g in groups:
        d = best.get(g + ("dram",))
        if d is None:
            continue
        p, e = best.get(g + ("dram-prefetch",)), best.get(g + ("emu",))
        ps = f"{d / p:5.2f}x ({best_cpu[g + ('dram',)] / best_cpu[g + ('dram-prefetch',)]:4.2f}x)" if p else " " * 15
        er = f"{e / d:6.2f} ({best_cpu[g + ('emu',)] / best_cpu[g + ('dram',)]:4.2f})" if e else ""
        cols = " ".join(f"{best[g + (b,)]:8.3f}" if g + (b,) in best else f"{'-':>8s}" for b in BACKENDS)
        say(f"  {g[0]+str(g[1]):8s} {g[2]:5s} {g[3]:3d} {cols}  {ps}  {er}")
    urand_bfs = [g for g in groups if g[0] == "urand" and g[2] == "bfs"]
    if urand_bfs:
        top = max(g[1] for g in urand_bfs)
        for g in sorted(x for x in urand_bfs if x[1] == top):
            d, p = best.get(g + ("dram",)), best.get(g + ("dram-prefetch",))
            if d and p:
                dc, pc = best_cpu[g + ("dram",)], best_cpu[g + ("dram-prefetch",)]
                target(d / p >= 1.3, f"dram-prefetch BFS >= 1.3x dram on urand{top}, {g[3]} thread(s): "
                       f"{d / p:.2f}x wall, {dc / pc:.2f}x CPU time")
    for g in groups:
        d, e = best.get(g + ("dram",)), best.get(g + ("emu",))
        if d and e and g[1] == max(x[1] for x in groups if x[2] == g[2]):
            ec = best_cpu[g + ("emu",)] / best_cpu[g + ("dram",)]
            target(e / d <= 1.3, f"emu 5us within 1.3x of dram: {g[2]} {g[0]}{g[1]} {g[3]} thread(s): {e / d:.2f}x wall, "
                   f"{ec:.2f}x CPU time")
    plot_kernels(best, groups)


def sweep(name, key, label):
    r = rows(name)
    if not r:
        return {}
    best = {}
    for x in r:
        k = (x.get("backend", ""), x[key])
        if k not in best or float(x["seconds"]) < float(best[k]["seconds"]):
            best[k] = x
    return best


def ceiling():
    r = rows("ceiling.csv")
    if not r:
        return
    best = {}
    for x in r:
        k = x["loop"]
        best[k] = min(best.get(k, 1e300), float(x["cpu_s"]))
    if "plain" in best and "pipelined" in best:
        say(f"BFS prefetch ceiling, serial, urand{r[0]['scale']} (bfs_ceiling.cpp; thread CPU time, fastest of "
            f"{len(r) // 2} rounds): plain {best['plain']:.2f} s, software-pipelined {best['pipelined']:.2f} s: "
            f"{best['plain'] / best['pipelined']:.2f}x (what prefetching can buy here without coroutines)")


def contexts():
    best = sweep("contexts.csv", "contexts", "contexts")
    if not best:
        return
    say("contexts sweep, BFS kron, emu 5 us, 1 thread (paper Table 4 shape): fastest trial")
    dram = [v for (b, c), v in best.items() if b == "dram"]
    if dram:
        say(f"  dram (no coroutines): {float(dram[0]['seconds']):.3f} s")
    say(f"  {'model':10s} {'contexts':>8s} {'seconds':>9s} {'switches':>12s} {'empty passes':>13s}")
    for (b, c), v in sorted(best.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))):
        if b == "dram":
            continue
        say(f"  {b:10s} {int(c):8d} {float(v['seconds']):9.3f} {int(v['switches']):12d} {int(v['empty_passes']):13d}")
    plot_xy("contexts.png", "contexts per thread", "seconds",
            {b: sorted((int(c), float(v["seconds"])) for (bb, c), v in best.items() if bb == b)
             for b in {k[0] for k in best} if b != "dram"},
            hline=float(dram[0]["seconds"]) if dram else None, logx=True,
            title="BFS kron, emu 5 us, 1 thread")


def latency():
    r = rows("latency.csv")
    if not r:
        return
    best = defaultdict(lambda: 1e99)
    reqs = {}
    for x in r:
        if float(x["seconds"]) < best[x["latency_us"]]:
            best[x["latency_us"]] = float(x["seconds"])
            reqs[x["latency_us"]] = int(x["requests"])
    say("emu latency sweep, BFS urand, 2 threads x 256 contexts: fastest trial")
    d = best.get("dram")
    for l in sorted((k for k in best if k != "dram"), key=float):
        ratio = f"  {best[l] / d:5.2f}x dram" if d else ""
        say(f"  latency {l:>5s} us: {best[l]:8.3f} s  achieved {reqs[l] / best[l] / 1e6:6.2f} MIOPS{ratio}")
    if d:
        say(f"  dram: {d:.3f} s")
    plot_xy("latency.png", "emu latency (us)", "seconds",
            {"emu": sorted((float(k), v) for k, v in best.items() if k != "dram")}, hline=d,
            title="BFS urand, emu latency sweep")


def iops():
    r = rows("iops.csv")
    if not r:
        return
    best = {}
    for x in r:
        k = int(x["iops_max"])
        if k not in best or float(x["seconds"]) < float(best[k]["seconds"]):
            best[k] = x
    say("emu IOPS sweep, BFS kron, 5 us, 2 threads x 256 contexts: fastest trial")
    for k in sorted(best, key=lambda v: v if v else 1e18):
        v = best[k]
        ach = int(v["requests"]) / float(v["seconds"])
        cap = f"{k / 1e6:6.1f} M" if k else " unlimited"
        bound = "  <- IOPS-bound" if k and ach > 0.8 * k else ""
        say(f"  iops_max {cap}: {float(v['seconds']):8.3f} s, achieved {ach / 1e6:6.2f} MIOPS{bound}")
    plot_xy("iops.png", "device IOPS ceiling (M)", "seconds",
            {"emu 5us": sorted((k / 1e6, float(v["seconds"])) for k, v in best.items() if k)}, logx=True,
            title="BFS kron, emu IOPS sweep")


def uring():
    r = rows("uring_fio.csv")
    if not r:
        return
    by = defaultdict(list)
    for x in r:
        if x["iops"]:
            by[(x["tool"], int(x["queue_depth"]), x["sqpoll"])].append(float(x["iops"]))
    say("random 4 KiB O_DIRECT reads of the page image, 1 thread: median IOPS")
    for qd in sorted({k[1] for k in by}):
        d = by.get(("daxkit-uring", qd, "0"))
        f = by.get(("fio", qd, "0"))
        if d and f:
            ratio = statistics.median(d) / statistics.median(f)
            say(f"  qd {qd:4d}: daxkit {statistics.median(d):9.0f}  fio {statistics.median(f):9.0f}  ratio {ratio:5.2f}")
            target(ratio >= 0.85, f"uring >= 85% of fio at queue depth {qd}: {ratio * 100:.0f}%")
    s = by.get(("daxkit-uring", 64, "1"))
    if s:
        say(f"  qd   64 with SQPOLL: daxkit {statistics.median(s):9.0f}")


def ooc():
    r = rows("ooc.csv")
    if not r:
        return
    best = {}
    for x in r:
        if x["seconds"] and (x["backend"] not in best or float(x["seconds"]) < best[x["backend"]][0]):
            best[x["backend"]] = (float(x["seconds"]), x)
    say("out of DRAM: BFS, each backend in a fresh memory cgroup with the same budget (bench/graph/ooc.sh)")
    for b, (s, x) in sorted(best.items()):
        say(f"  {b:6s}: {s:8.3f} s  edges {x['edge_mib']} MiB, budget {x['budget_mib']} MiB, cgroup peak"
            f" {x.get('cg_peak_mib', '?')} MiB, limit hits {x.get('cg_limit_hits', '?')}, major faults"
            f" {x.get('cg_major_faults', '?')}, {int(x['requests']) / s / 1e3:.0f} k device reads/s")
    if "uring" in best and "mmap" in best:
        ratio = best["mmap"][0] / best["uring"][0]
        target(ratio >= 2, f"out of DRAM uring >= 2x faster than mmap: {ratio:.2f}x")


def verify():
    r = rows("verify.csv")
    if not r:
        return
    say("verification against the serial references (GAP verifier definitions), 1 trial each:")
    for x in r:
        say(f"  {x['graph']}{x['scale']:3s} {x['kernel']:5s} {x['backend']:14s} verified={x['verified']}")
    bad = [x for x in r if x["verified"] != "yes"]
    target(not bad, f"every kernel x backend verifies: {len(r) - len(bad)} of {len(r)}")


def plt_or_none():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except Exception:
        return None


def plot_xy(name, xl, yl, series, hline=None, logx=False, title=""):
    plt = plt_or_none()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in series.items():
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    if hline:
        ax.axhline(hline, color="k", linestyle="--", label="dram")
    if logx:
        ax.set_xscale("log", base=2 if "contexts" in xl else 10)
    ax.set_xlabel(xl)
    ax.set_ylabel(yl)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, name), dpi=100)
    plt.close(fig)


def plot_kernels(best, groups):
    plt = plt_or_none()
    if plt is None:
        return
    for kernel in sorted({g[2] for g in groups}):
        fig, ax = plt.subplots(figsize=(7, 4))
        for graph in sorted({g[0] for g in groups}):
            for be in BACKENDS:
                pts = sorted((g[1], best[g + (be,)]) for g in groups
                             if g[0] == graph and g[2] == kernel and g[3] == 2 and g + (be,) in best)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{graph} {be}")
        ax.set_yscale("log")
        ax.set_xlabel("scale")
        ax.set_ylabel("seconds (2 threads)")
        ax.set_title(kernel)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(OUT, f"kernels_{kernel}.png"), dpi=100)
        plt.close(fig)


for part in (engine, emu_model, kernels, ceiling, contexts, latency, iops, uring, verify, ooc):
    part()
    say()
with open(os.path.join(OUT, "summary.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
