#!/usr/bin/env python3
"""Summary of bench/atomic.sh's CSV: medians over repetitions, and the issue-4 targets, as Markdown."""
import csv
import statistics
import sys
from collections import defaultdict


def main(path):
    rows = list(csv.DictReader(open(path)))
    med = defaultdict(list)
    for r in rows:
        key = (r["variant"], r["test"], int(r["bs"]), int(r["sync_every"]), int(r["write_pct"]), int(r["dirty_blocks"]))
        med[key].append(r)

    def m(key, col):
        vals = [float(r[col]) for r in med.get(key, [])]
        return statistics.median(vals) if vals else float("nan")

    def cpu_ops(key):
        c = m(key, "cpu_ns_per_op")
        return 1e9 / c if c and c == c else float("nan")

    reps = max((len(v) for v in med.values()), default=0)
    medium = rows[0]["medium"] if rows else "?"
    print(f"# daxkit atomic C API: benchmark summary ({medium}, medians of {reps} repetitions)\n")
    print("## Copies with a sync every N\n")
    print("ops/s by wall time, and by process CPU time (all threads, user + system; steadier on a shared machine).")
    print("kernel = pwrite + fsync on the same file system.\n")
    print("| size | sync every | kernel wall | atomic wall | kernel CPU | atomic CPU | atomic / kernel (CPU) |")
    print("|---|---|---|---|---|---|---|")
    for bs in (128, 1024, 4096, 65536):
        for se in (1, 10, 100):
            kk, ak = ("kernel", "sizes", bs, se, 100, 0), ("atomic-hybrid", "sizes", bs, se, 100, 0)
            k, a = m(kk, "ops_per_s"), m(ak, "ops_per_s")
            kc, ac = cpu_ops(kk), cpu_ops(ak)
            if k == k and a == a:
                print(f"| {bs} B | {se} | {k:,.0f} | {a:,.0f} | {kc:,.0f} | {ac:,.0f} | {ac / kc:.2f}x |")
    print("\n## Sync cost vs dirty blocks (median ns of one sync, 128 B copies; target: 1,000 within 20% of 1)\n")
    print("In parentheses: a 1-block sync after the same copies, all but the last into another file (the same cache")
    print("state). raw = N blocks / 1 block (what a program sees); own = N blocks / that control (the sync's own growth).\n")
    print("| dirty blocks | kernel fsync | atomic undo | atomic redo |")
    print("|---|---|---|---|")
    variants = ("kernel", "atomic-undo", "atomic-redo")

    def ctl(v, d):
        return m((v, "dirty-ctl", 128, d, 100, d), "median_ns") if d > 1 else m((v, "dirty", 128, 1, 100, 1), "median_ns")

    for d in (1, 10, 100, 1000):
        cells = [f'{m((v, "dirty", 128, d, 100, d), "median_ns"):,.0f} ({ctl(v, d):,.0f})' for v in variants]
        print(f"| {d} | " + " | ".join(cells) + " |")
    for v in variants:
        one, thousand = m((v, "dirty", 128, 1, 100, 1), "median_ns"), m((v, "dirty", 128, 1000, 100, 1000), "median_ns")
        own = thousand / ctl(v, 1000)
        verdict = lambda x: "met" if x <= 1.2 else "NOT met"
        print(f"\n{v}: 1,000 dirty blocks / 1 = {thousand / one:.2f} raw -> {verdict(thousand / one)}; "
              f"/ the control at 1,000 = {own:.2f} own -> {verdict(own)}")
    print("\n## Read:write mixes, 4 KiB ops, sync every 10 (ops/s by CPU time; target: hybrid within 5% of the better policy)\n")
    print("| writes | kernel | undo | redo | hybrid | hybrid / best | target | wall ops/s: undo / redo / hybrid |")
    print("|---|---|---|---|---|---|---|---|")
    for pct in (0, 10, 25, 40, 50, 75, 90, 100):
        keys = [(v, "mix", 4096, 10, pct, 0) for v in ("kernel", "atomic-undo", "atomic-redo", "atomic-hybrid")]
        k, u, r, h = (cpu_ops(key) for key in keys)
        wu, wr, wh = (m(key, "ops_per_s") for key in keys[1:])
        best = max(u, r)
        ok = "met" if h >= 0.95 * best else "NOT met"
        print(f"| {pct}% | {k:,.0f} | {u:,.0f} | {r:,.0f} | {h:,.0f} | {h / best:.2f} | {ok} | {wu:,.0f} / {wr:,.0f} / {wh:,.0f} |")
    print("\n## 4 KiB copy + sync latency (ns; target: p99.9 < 2x median)\n")
    print("| path | median | p99.9 | p99.9 / median |")
    print("|---|---|---|---|")
    for v in ("kernel", "atomic-hybrid"):
        p50, p999 = m((v, "latency", 4096, 1, 100, 0), "median_ns"), m((v, "latency", 4096, 1, 100, 0), "p999_ns")
        print(f"| {v} | {p50:,.0f} | {p999:,.0f} | {p999 / p50:.1f} |")

    print("\n## Threads: 4 KiB copies, sync every 10 per thread (ops/s, all threads; wall and CPU time)\n")
    print("| threads | file(s) | kernel wall | atomic wall | kernel CPU | atomic CPU |")
    print("|---|---|---|---|---|---|")
    for n in (1, 2):
        for kind in ("private", "shared"):
            t = f"threads{n}-{kind}"
            kk, ak = ("kernel", t, 4096, 10, 100, 0), ("atomic-hybrid", t, 4096, 10, 100, 0)
            print(f"| {n} | {kind} | {m(kk, 'ops_per_s'):,.0f} | {m(ak, 'ops_per_s'):,.0f} | {cpu_ops(kk):,.0f} | {cpu_ops(ak):,.0f} |")
    print("\n## A program storing into its mapping + msync (part 4: userfaultfd write-protect mode)\n")
    print("Per operation (store, plus the msync when due): median ns, and CPU ns (all threads). On tmpfs the")
    print("kernel's msync writes nothing back (not durable). wp: the file's own mapping write-protected (tmpfs;")
    print("one userfaultfd fault per page per epoch, undo copy); shadow: a protected shmem shadow, msync journals")
    print("the changed bytes and applies them (the only mode on XFS/ext4; forced on tmpfs for comparison).\n")
    print("| store | msync every | kernel median | kernel CPU | wp median | wp CPU | shadow median | shadow CPU |")
    print("|---|---|---|---|---|---|---|---|")
    for bs in (128, 4096):
        for se in (1, 10, 100):
            k = ("mmap", bs, se, 100, 0)
            cells = []
            for v in ("kernel-msync", "uwp-msync", "uwp-shadow-msync"):
                cells += [f"{m((v,) + k, 'median_ns'):,.0f}", f"{m((v,) + k, 'cpu_ns_per_op'):,.0f}"]
            print(f"| {bs} B | {se} | " + " | ".join(cells) + " |")

if __name__ == "__main__":
    main(sys.argv[1])
