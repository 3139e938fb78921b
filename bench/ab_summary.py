#!/usr/bin/env python3
"""Summary of an interleaved A/B run (bench/redis_ab.sh; any script writing the same rows).

Usage: bench/ab_summary.py CSV [REFERENCE [METRIC]]     Env: POOL=1 -- variants named NAME-b, NAME-c, ... (more
       servers of the same kind: bench/redis_ab.sh) are pooled into NAME: every server's value a repetition
       counts in the quantiles (a repetition's values stay together in the bootstrap), their mean in the paired
       ratio (a server's own bias -- its memory's placement -- is fixed for its life: ~1% between two servers
       of one kind here, which one server per variant cannot show and the intervals do not include).

Rows: what,variant,metric,value,rep (a header line, comments and other metrics are skipped). For each variant:
n, min, q1, median and q3 of METRIC (default cpu_ms), and against REFERENCE (default kernel):
  - q1/ref and med/ref: the ratio of the variants' lower quartiles and medians, each with a 95% bootstrap
    interval (2,000 resamples of the repetitions, paired: a resample takes a repetition's value of every
    variant, so what a repetition's machine state did to all of them stays together);
  - the paired ratio -- each repetition's value over REFERENCE's in the same repetition -- as a median with a
    95% interval of that median (distribution-free: the order statistics a binomial(n, 1/2) puts around it).
On a shared machine a run's CPU grows while another job shares its core (bench/redis_ab.sh: 24-27 ms of CPU
for a batch alone, 45-72 with company): the lower quartile is the undisturbed cost, the median mixes in how
much company each variant had. An interval's half-width is what the run resolves.
"""
import random
import collections
import csv
import math
import os
import re
import statistics
import sys


def quantile(xs, q):
    """Linear interpolation between order statistics (xs sorted)."""
    if not xs:
        return float("nan")
    p = (len(xs) - 1) * q
    i = int(math.floor(p))
    j = min(i + 1, len(xs) - 1)
    return xs[i] + (xs[j] - xs[i]) * (p - i)


def median_ci(xs, level=0.95):
    """(lo, hi): order statistics bracketing the median with at least `level` coverage (xs sorted)."""
    n = len(xs)
    if n < 6:
        return xs[0], xs[-1]
    # largest k with P(Binomial(n, 1/2) < k) <= (1 - level) / 2: [x_(k), x_(n-k+1)] (1-based)
    cdf, k = 0.0, 0
    for i in range(n + 1):
        p = math.comb(n, i) / 2.0**n
        if cdf + p > (1 - level) / 2:
            break
        cdf += p
        k = i + 1
    k = max(k, 1)
    return xs[k - 1], xs[n - k]


def main():
    path = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else "kernel"
    metric = sys.argv[3] if len(sys.argv) > 3 else "cpu_ms"
    vals = collections.defaultdict(dict)  # (what, variant) -> {rep: [values]}, then {rep: mean}
    order = []
    for r in csv.reader(open(path)):
        if len(r) < 5 or r[0].startswith("#") or r[2] != metric:
            continue
        try:
            v = float(r[3])
        except ValueError:
            continue
        var = re.sub(r"-[b-z]$", "", r[1]) if os.environ.get("POOL") == "1" else r[1]
        key = (r[0], var)
        if key not in vals:
            order.append(key)
        vals[key].setdefault(r[4], []).append(v)
    flat = {key: {k: list(xs) for k, xs in reps.items()} for key, reps in vals.items()}
    for key in vals:
        vals[key] = {k: statistics.mean(xs) for k, xs in vals[key].items()}
    print(f"{'what':10} {'variant':16} {'n':>3} {'min':>8} {'q1':>8} {'median':>8} {'q3':>8}"
          f"  {'q1/ref [95% CI]':>22}  {'med/ref [95% CI]':>22}  paired median [95% CI]")
    order.sort(key=lambda k: (k[0], k[1] != ref))
    for key in order:
        what, var = key
        reps = vals[key]
        freps, fbase = flat[key], flat.get((what, ref), {})
        xs = sorted(x for v in freps.values() for x in v)
        base = vals.get((what, ref), {})
        bs = sorted(x for v in fbase.values() for x in v)
        line = (f"{what:10} {var:16} {len(xs):3d} {xs[0]:8.2f} {quantile(xs, .25):8.2f} {statistics.median(xs):8.2f}"
                f" {quantile(xs, .75):8.2f}")
        if bs and var != ref:
            common = [k for k in reps if k in base and base[k] > 0]
            rng = random.Random(1)
            boots = {0.25: [], 0.5: []}
            for _ in range(2000):
                pick = [common[rng.randrange(len(common))] for _ in common]
                a = sorted(x for k in pick for x in freps[k])
                b = sorted(x for k in pick for x in fbase[k])
                for q in boots:
                    boots[q].append(quantile(a, q) / quantile(b, q))
            for q in (0.25, 0.5):
                bq = sorted(boots[q])
                line += (f"  {quantile(xs, q) / quantile(bs, q):6.3f} [{quantile(bq, .025):.3f}, {quantile(bq, .975):.3f}]")
            pr = sorted(reps[k] / base[k] for k in common)
            if pr:
                lo, hi = median_ci(pr)
                line += f"  {statistics.median(pr):.3f} [{lo:.3f}, {hi:.3f}]"
        print(line)


if __name__ == "__main__":
    main()
