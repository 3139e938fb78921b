#!/usr/bin/env python3
"""Process-crash driver: crash a workload at every crash point x occurrence, recover, check.

    drive.py --workload 'CMD' --recover 'CMD' --check 'CMD' [--filter REGEX] [--max-runs N] [--seed S]
             [--dir-root DIR] [--timeout SEC]

Each command is a shell command; {dir} in it is replaced by a fresh, empty directory per run (the medium
the workload writes to). Steps:
  1. baseline: run the workload with DAXKIT_TEST_CRASH=count:FILE (it must exit 0), then recover and check
     (they must pass with nothing crashed). The count file lists every crash site reached and how often.
  2. the pairs (site, occurrence) of the sites matching --filter, occurrence 1..count; when there are more
     than --max-runs, a seeded sample of them (the seed is printed; --seed reproduces the choice).
  3. per pair: fresh dir, run the workload with DAXKIT_TEST_CRASH=site:occurrence, expect death by SIGKILL
     (a run that exits instead did not reach that occurrence -- thread timing -- and is counted as
     "not reached", not a failure), then recover, then check.
With --recovery-crashes N, a seeded sample of --recovery-runs crashed states also has its *recovery* crashed
at up to N of the recovery's own (site, occurrence) pairs (each on a copy of the crashed directory), then
recovery runs again to completion and the checker judges the result: recovery must be safe to interrupt.
A failing pair prints the site, the occurrence, the seed and the commands to reproduce it. Exit 0 when every
pair passed, 1 otherwise, 77 (with the reason) when the workload reaches no crash site (a release build).
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def run(cmd, d, env_extra, timeout):
    env = dict(os.environ)
    env.pop("DAXKIT_TEST_CRASH", None)
    env.update(env_extra)
    # exec: the workload replaces the shell, so a SIGKILL shows as -9, not as the shell's 137.
    return subprocess.run("exec " + cmd.replace("{dir}", d), shell=True, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def fresh_dir(root):
    return tempfile.mkdtemp(prefix="dk-crash.", dir=root)


def read_counts(path):
    counts = {}
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) == 2:
                counts[parts[0]] = counts.get(parts[0], 0) + int(parts[1])
    return counts


def recover_and_check(a, d):
    """Returns None when recovery and the checker passed, else the failure text."""
    r = run(a.recover, d, {}, a.timeout)
    if r.returncode != 0:
        return "recovery exited %d:\n%s" % (r.returncode, r.stdout)
    c = run(a.check, d, {}, a.timeout)
    if c.returncode != 0:
        return "checker exited %d:\n%s%s" % (c.returncode, r.stdout, c.stdout)
    return None


def crash_recovery(a, d, rng):
    """Crashes the recovery of the crashed state in `d` at each of its sites (sampled to a.recovery_crashes),
    recovers again without a crash, checks. Works on copies; `d` is left as it was. Returns (runs, failure)."""
    snap = d + ".snap"
    shutil.copytree(d, snap, symlinks=True)
    probe = d + ".probe"
    shutil.copytree(snap, probe, symlinks=True)
    counts_file = d + ".rcounts"
    run(a.recover, probe, {"DAXKIT_TEST_CRASH": "count:" + counts_file}, a.timeout)
    shutil.rmtree(probe, ignore_errors=True)
    counts = read_counts(counts_file)
    if os.path.exists(counts_file):
        os.unlink(counts_file)
    pairs = [(s, k) for s in sorted(counts) for k in range(1, counts[s] + 1)]
    if len(pairs) > a.recovery_crashes:
        pairs = sorted(rng.sample(pairs, a.recovery_crashes))
    failure = None
    for site, k in pairs:
        r = snap + ".r"
        shutil.copytree(snap, r, symlinks=True)
        first = run(a.recover, r, {"DAXKIT_TEST_CRASH": "%s:%d" % (site, k)}, a.timeout)
        if first.returncode not in (0, -signal.SIGKILL, 128 + signal.SIGKILL):
            failure = "recovery (crash at %s:%d) exited %d:\n%s" % (site, k, first.returncode, first.stdout)
        else:
            # the interrupted recovery runs again, then the checker judges the directory
            failure = recover_and_check(a, r)
            failure = failure and "after recovery crashed at %s#%d: %s" % (site, k, failure)
        shutil.rmtree(r, ignore_errors=True)
        if failure:
            break
    shutil.rmtree(snap, ignore_errors=True)
    return len(pairs), failure


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", required=True)
    p.add_argument("--recover", required=True)
    p.add_argument("--check", required=True)
    p.add_argument("--filter", default=".")
    p.add_argument("--max-runs", type=int, default=200)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--dir-root", default="/dev/shm")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--keep-failed", action="store_true", help="keep the directory of a failed run")
    p.add_argument("--recovery-crashes", type=int, default=0,
                   help="also crash the recovery itself at up to this many (site, occurrence) pairs per "
                        "crashed workload run, then recover again and check")
    p.add_argument("--recovery-runs", type=int, default=20,
                   help="how many crashed workload runs (seeded sample) get recovery crashes")
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    t0 = time.monotonic()

    d = fresh_dir(a.dir_root)
    counts_file = os.path.join(d, ".crash-counts")
    w = run(a.workload, d, {"DAXKIT_TEST_CRASH": "count:" + counts_file}, a.timeout)
    counts = read_counts(counts_file)
    os.unlink(counts_file) if os.path.exists(counts_file) else None
    failure = None
    if w.returncode != 0:
        failure = "the workload without a crash exited %d:\n%s" % (w.returncode, w.stdout)
    failure = failure or recover_and_check(a, d)
    if failure:
        print("FAIL: baseline (no crash): " + failure)
        print("  kept: " + d) if a.keep_failed else shutil.rmtree(d, ignore_errors=True)
        return 1
    shutil.rmtree(d)
    rx = re.compile(a.filter)
    sites = {s: n for s, n in counts.items() if rx.search(s)}
    if not sites:
        print("SKIP: the workload reached no crash site matching %r (a release build has none): %s"
              % (a.filter, counts))
        return 77
    pairs = [(s, k) for s in sorted(sites) for k in range(1, sites[s] + 1)]
    total = len(pairs)
    if total > a.max_runs:
        pairs = random.Random(seed).sample(pairs, a.max_runs)
        pairs.sort()
    print("sites: %s" % ", ".join("%s x%d" % (s, n) for s, n in sorted(sites.items())))
    print("pairs: %d reachable, running %d (seed=%d)" % (total, len(pairs), seed))
    sys.stdout.flush()

    failures = not_reached = crashed = recovery_crash_runs = 0
    rng = random.Random(seed + 1)
    recovery_pairs = set(rng.sample(pairs, min(len(pairs), a.recovery_runs))) if a.recovery_crashes else set()
    for site, k in pairs:
        d = fresh_dir(a.dir_root)
        spec = "%s:%d" % (site, k)
        w = run(a.workload, d, {"DAXKIT_TEST_CRASH": spec}, a.timeout)
        failure = None
        if w.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL):
            crashed += 1
        elif w.returncode == 0:
            not_reached += 1
        else:
            failure = "workload exited %d without the crash:\n%s" % (w.returncode, w.stdout)
        if not failure and a.recovery_crashes and (site, k) in recovery_pairs:
            runs, failure = crash_recovery(a, d, rng)
            recovery_crash_runs += runs
        failure = failure or recover_and_check(a, d)
        if failure:
            failures += 1
            print("FAIL site=%s occurrence=%d seed=%d: %s" % (site, k, seed, failure.rstrip()))
            print("  reproduce: DAXKIT_TEST_CRASH=%s %s; %s; %s  (with {dir} an empty directory)"
                  % (spec, a.workload, a.recover, a.check))
            if a.keep_failed:
                print("  kept: " + d)
                continue
        shutil.rmtree(d, ignore_errors=True)
    dt = time.monotonic() - t0
    print("crash runs: %d crashed, %d not reached, %d failed, %d sites, %.1f s (%.1f runs/s), seed=%d"
          % (crashed, not_reached, failures, len(sites), dt, len(pairs) / dt if dt else 0, seed))
    if a.recovery_crashes:
        print("recovery crashed and rerun: %d times in %d crashed states" % (recovery_crash_runs, len(recovery_pairs)))
    if crashed == 0:
        print("FAIL: no run crashed")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
