#!/usr/bin/env python3
"""Differential tester driver: runs dk_difftest sequences through the kernel and under a preload
library (libdaxkit.so), compares the canonical logs, and shrinks every mismatch to a minimal op list.

Usage (normally through run-diff.sh, which mounts the media):
  run-diff.py --medium hugetmpfs=/mnt/x [--medium xfs=/mnt/y] [--modes posix,sync] [--append stage,extend]
              [--seeds N | --seconds T] [--start S] [--ops N] [--batch K] [--lib PATH | --lib none]
              [--shrink-max M] [--out DIR] [--env K=V]...

For each medium and each (mode, append) configuration the driver makes <mnt>/<cfg>/kernel (plain) and
<mnt>/<cfg>/managed (DAXKIT_DIR), runs batches of K seeds on both sides in parallel, and compares the logs
sequence by sequence. A mismatching seed is rerun alone, then its op list is delta-debugged with --replay
until every remaining op is needed. Prints the seed range first and 'N passed, N failed' last.
Exit: 0 all passed, 1 a mismatch (or the library did not load), 2 usage/setup error.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--medium", action="append", default=[], help="KIND=MOUNTPOINT (repeatable)")
    p.add_argument("--modes", default="posix")
    p.add_argument("--append", default="stage")
    p.add_argument("--seeds", type=int, default=0, help="sequences per configuration")
    p.add_argument("--seconds", type=float, default=0, help="time budget for the whole run")
    p.add_argument("--start", type=int, default=-1, help="first seed (default: from the clock)")
    p.add_argument("--ops", type=int, default=200)
    p.add_argument("--batch", type=int, default=20, help="sequences per process")
    p.add_argument("--build", default=os.environ.get("DAXKIT_BUILD", "build"))
    p.add_argument("--tester", default="", help="dk_difftest binary (default BUILD/tests/dk_difftest; "
                   "dk_difftest_twoproc: two processes on one file)")
    p.add_argument("--tester-arg", action="append", default=[],
                   help="extra tester option for both sides, e.g. --tester-arg=--publish-at-switch")
    p.add_argument("--lib", default="", help="preload library (default BUILD/lib/libdaxkit.so; 'none')")
    p.add_argument("--launcher", choices=["env", "cli"], default="env",
                   help="env: set LD_PRELOAD/DAXKIT_* directly; cli: 'daxkit run --mode ... --'")
    p.add_argument("--env", action="append", default=[], help="extra K=V for the library side")
    p.add_argument("--shrink-max", type=int, default=3, help="failures shrunk per configuration")
    p.add_argument("--shrink-seconds", type=float, default=60, help="time limit of one shrink")
    p.add_argument("--fail-max", type=int, default=20, help="stop a configuration after this many failures")
    p.add_argument("--out", default="", help="directory for logs and shrunk op lists")
    p.add_argument("--exact-holes", action="store_true")
    p.add_argument("--exclude", default="", help="op classes left out: stdio,mmap,transfer,names")
    p.add_argument("--timeout", type=float, default=120,
                   help="seconds one sequence may run: the clock restarts at each '== seed' section a process "
                        "starts, so a batch of K slow sequences is not killed, a stuck one is (review 17, #07)")
    a = p.parse_args()
    if not a.medium or (a.seeds <= 0 and a.seconds <= 0):
        p.error("need --medium and --seeds or --seconds")
    a.gen = ["--exclude", a.exclude] if a.exclude else []
    return a


class Side:
    """How to run dk_difftest on one side: plain (kernel) or under the library."""

    def __init__(self, args, tester, dir_, lib, mode, append):
        self.tester, self.dir, self.env, self.prefix = tester, dir_, dict(os.environ), []
        for k in [k for k in self.env if k.startswith("DAXKIT_") and k not in ("DAXKIT_BUILD", "DAXKIT_SRC")]:
            del self.env[k]
        self.env.pop("LD_PRELOAD", None)
        self.describe = ""
        if lib:
            extra = dict(kv.split("=", 1) for kv in args.env)
            if args.launcher == "cli" and lib.endswith("libdaxkit.so"):
                cli = os.path.join(args.build, "bin", "daxkit")
                self.prefix = [cli, "run", "--mode", mode, "--dir", dir_, "--append", append, "--"]
                self.describe = " ".join(self.prefix[:-1]) + " "
            else:
                self.env.update({"LD_PRELOAD": lib, "DAXKIT_DIR": dir_, "DAXKIT_MODE": mode,
                                 "DAXKIT_APPEND": append})
                self.describe = f"LD_PRELOAD={lib} DAXKIT_DIR={dir_} DAXKIT_MODE={mode} DAXKIT_APPEND={append} "
            self.env.update(extra)
            self.describe += "".join(f"{k}={v} " for k, v in extra.items())
        self.exact = (["--exact-holes"] if args.exact_holes else []) + args.tester_arg
        self.timeout = args.timeout

    def cmd(self, extra):
        return self.prefix + [self.tester, "--dir", self.dir] + self.exact + extra

    def start(self, extra, log_path, err_path):
        with open(log_path, "wb") as out, open(err_path, "wb") as err:
            return subprocess.Popen(self.cmd(extra), env=self.env, stdout=out, stderr=err)


class Timeout(str):
    """wait()'s answer for a process it killed: equal to "timeout", with what it was doing then."""

    def __new__(cls, note):
        o = str.__new__(cls, "timeout")
        o.note = note
        return o


def sequence_starts(data):
    """The seeds of the '== seed S' sections in data (bytes of a log)."""
    return [int(line.split()[2]) for line in data.split(b"\n") if line.startswith(b"== seed ") and len(line.split()) > 2]


def wait(proc, timeout, log_path=None):
    """proc's exit status; without log_path, killed after `timeout` seconds. With log_path (its log), the
    timeout is per sequence: the clock restarts whenever a new '== seed' section appears in the log -- a batch
    of 20 sequences at load 20 took 109 s of the old 120 s per process (review 17, #07), and was killed as
    if it hung. A killed process gives a Timeout saying how long it ran and at which sequence."""
    if log_path is None:
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return Timeout(f"after {timeout:g} s")
    t0 = last = time.time()
    seen, done, cur = 0, 0, None
    while True:
        try:
            return proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        try:
            with open(log_path, "rb") as f:
                f.seek(seen)
                data = f.read()
        except OSError:
            data = b""
        cut = data.rfind(b"\n") + 1  # whole lines only
        starts = sequence_starts(data[:cut])
        seen += cut
        if starts:
            done, cur, last = done + len(starts), starts[-1], time.time()
        if time.time() - last > timeout:
            proc.kill()
            proc.wait()
            return Timeout(f"sequence {cur} ran past {timeout:g} s; the process ran {time.time() - t0:.0f} s, "
                           f"{max(done - 1, 0)} sequences done before it" if cur is not None else
                           f"no sequence started within {timeout:g} s")


def status_text(rc):
    if rc == "timeout":
        return f"killed: {rc.note}" if isinstance(rc, Timeout) else "killed after the timeout"
    if rc < 0:
        return f"died with signal {signal.Signals(-rc).name}"
    return f"exit {rc}"


def split_sections(text):
    """{seed: [lines]} from a log of '== seed S ...' sections."""
    sections, cur = {}, None
    for line in text.splitlines():
        if line.startswith("== seed "):
            cur = int(line.split()[2])
            sections[cur] = []
        elif cur is not None:
            sections[cur].append(line)
    return sections


def first_diff(a, b):
    """Index of the first differing line, or None."""
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or a[i] != b[i]:
            return i
    return None


class KernelSideError(Exception):
    pass


def wipe(d):
    """Empties directory d (sequence directories and the library's hidden area)."""
    for name in os.listdir(d):
        p = os.path.join(d, name)
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)


def external_listing(side, seed):
    """The directory of seed's sequence listed from outside (raw syscalls, no preload), then removed."""
    d = os.path.join(side.dir, f"t{seed}")
    out = subprocess.run([side.tester, "--list", d], capture_output=True, text=True).stdout
    shutil.rmtree(d, ignore_errors=True)
    return ["X" + line[1:] for line in out.splitlines()]


def run_pair(kside, dside, extra, work, tag, exit_seed=None):
    """Runs both sides in parallel; returns (ksections, dsections, krc, drc, derr). With exit_seed the
    sides ran with --exit-open and that seed's section gets the after-exit listing ('X' lines)."""
    paths = [os.path.join(work, f"{tag}.{s}") for s in ("k.log", "k.err", "d.log", "d.err")]
    if exit_seed is not None:
        extra = extra + ["--exit-open"]
    pk = kside.start(extra, paths[0], paths[1])
    pd = dside.start(extra, paths[2], paths[3])
    krc, drc = wait(pk, kside.timeout, paths[0]), wait(pd, dside.timeout, paths[2])
    read = lambda p: open(p, "rb").read().decode("utf-8", "replace")
    ks, ds = split_sections(read(paths[0])), split_sections(read(paths[2]))
    if krc != 0:
        st = os.statvfs(kside.dir)
        raise KernelSideError(f"the kernel side failed ({status_text(krc)}): {' '.join(kside.cmd(extra))}; "
                              f"{st.f_bavail * st.f_frsize >> 20} MiB free on the medium; stderr: "
                              f"{read(paths[1])[-500:]}")
    if drc != 0:
        wipe(dside.dir)  # a crashed library leaves sequence directories and staging files behind
    if exit_seed is not None:
        ks.setdefault(exit_seed, []).extend(external_listing(kside, exit_seed))
        if exit_seed in ds:
            ds[exit_seed].extend(external_listing(dside, exit_seed))
    return ks, ds, krc, drc, read(paths[3])


def describe_diff(k, d, drc):
    """None when the two sections agree and the library side exited cleanly, else the first difference."""
    i = first_diff(k, d)
    if i is None and drc == 0:
        return None
    if i is None:
        return f"end: library side {status_text(drc)} after identical output"
    kl = k[i] if i < len(k) else "<no line>"
    dl = d[i] if i < len(d) else f"<no line: library side {status_text(drc)}>"
    return f"line {i}:\n    kernel: {kl}\n    daxkit: {dl}"


def compare_one(ks, ds, krc, drc, derr=""):
    """None when a single-sequence run agrees, else a description of the first difference."""
    k = next(iter(ks.values()), [])
    d = next(iter(ds.values()), [])
    return describe_diff(k, d, drc)


def signature(why):
    """What kind of difference: the op on the first differing line, or how the library side died."""
    if "library side died" in why or "library side killed" in why:
        return "died:" + why.split("died with signal ")[-1].split(">")[0].split()[0] if "signal" in why else "killed"
    kline = why.split("kernel: ", 1)[-1].split()
    if kline and kline[0].isdigit() and len(kline) > 1:
        return kline[1]
    return kline[0] if kline else why[:20]


class Config:
    def __init__(self, args, tester, medium, mnt, mode, append, lib):
        self.name = f"{medium}/{mode}/{append}"
        base = os.path.join(mnt, f"{mode}-{append}")
        self.kdir, self.ddir = os.path.join(base, "kernel"), os.path.join(base, "managed")
        for d in (self.kdir, self.ddir):
            os.makedirs(d, exist_ok=True)
        self.kside = Side(args, tester, self.kdir, "", mode, append)
        self.dside = Side(args, tester, self.ddir, lib, mode, append)
        self.passed = self.failed = self.shrunk = 0
        self.signatures = {}  # first differing op (or listing kind) -> seeds that failed there


def shrink(args, cfg, seed, work, exit_open, sig):
    """Delta debugging (ddmin) of seed's op list: the smallest list (1-minimal) that still differs in
    the same way (same signature), so that shrinking does not drift to another bug."""
    # the tester's own options too: some choose what is generated (dk_difftest_twoproc --names, --mmap, --fork)
    ops = subprocess.run([cfg.kside.tester, "--seed", str(seed), "--ops", str(args.ops), "--print-ops"] + args.gen
                         + args.tester_arg,
                         check=True, capture_output=True, text=True).stdout.splitlines()
    replay = os.path.join(work, f"replay.{seed}")
    runs = [0]

    def fails(subset):
        with open(replay, "w") as f:
            f.write("\n".join(subset) + "\n")
        runs[0] += 1
        r = run_pair(cfg.kside, cfg.dside, ["--seed", str(seed), "--replay", replay], work, "shrink",
                     seed if exit_open else None)
        why = compare_one(*r)
        return why if why is not None and signature(why) == sig else None

    if not fails(ops):
        return None, ops, runs[0]
    n, deadline = 2, time.time() + args.shrink_seconds
    while len(ops) >= 2 and time.time() < deadline:
        chunk = max(1, len(ops) // n)
        parts = [ops[i:i + chunk] for i in range(0, len(ops), chunk)]
        reduced = False
        for i in range(len(parts)):
            complement = [op for j, p in enumerate(parts) if j != i for op in p]
            if complement and fails(complement):
                ops, n, reduced = complement, max(n - 1, 2), True
                break
        if not reduced:
            if n >= len(ops):
                break
            n = min(len(ops), n * 2)
    ops = simplify(ops, fails, deadline)
    with open(replay, "w") as f:
        f.write("\n".join(ops) + "\n")
    return fails(ops), ops, runs[0]


def simplify(ops, fails, deadline):
    """Makes the shrunk list easier to read: smaller lengths and offsets where the difference stays."""
    ops = list(ops)
    for i in range(len(ops)):
        words = ops[i].split()
        for j, w in enumerate(words[1:], 1):
            key, _, val = w.partition("=")
            if key not in ("len", "off", "inoff", "outoff") or not val.lstrip("-").isdigit():
                continue
            v = int(val)
            for cand in (0, 1, 4096, v // 2):
                if time.time() >= deadline:
                    return ops
                if abs(cand) >= abs(v) or (cand == 0 and v < 0):
                    continue
                trial = words[:j] + [f"{key}={cand}"] + words[j + 1:]
                attempt = ops[:i] + [" ".join(trial)] + ops[i + 1:]
                if fails(attempt):
                    ops, words, v = attempt, trial, cand
                    break
    return ops


def report_failure(args, cfg, seed, why, work, out_dir, exit_open):
    print(f"FAIL {cfg.name} seed={seed}: first difference at {why}", flush=True)
    # One shrink per kind of first difference: many seeds usually hit the same bug.
    sig = signature(why)
    cfg.signatures.setdefault(sig, []).append(seed)
    if len(cfg.signatures[sig]) > 1:
        print(f"  (not shrunk: same first differing op '{sig}' as seed {cfg.signatures[sig][0]})")
        return
    if cfg.shrunk >= args.shrink_max:
        print(f"  (not shrunk: --shrink-max {args.shrink_max} reached)")
        return
    cfg.shrunk += 1
    single = run_pair(cfg.kside, cfg.dside, ["--seed", str(seed), "--ops", str(args.ops)] + args.gen, work, "single",
                      seed if exit_open else None)
    why1 = compare_one(*single)
    if why1 is None:
        print(f"  does not reproduce alone; reproduce the batch with:\n    {cfg.dside.describe}"
              f"{' '.join(cfg.dside.cmd(['--seed', str(seed - seed % args.batch), '--count', str(args.batch), '--ops', str(args.ops)] + args.gen))}")
        return
    t0 = time.time()
    why2, ops, runs = shrink(args, cfg, seed, work, exit_open, signature(why1))
    if why2 is None:
        print("  the generated op list does not reproduce through --replay (tester bug?)")
        return
    name = f"{cfg.name.replace('/', '-')}-seed{seed}.ops"
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        f.write(f"# {cfg.name} seed {seed}: {len(ops)} ops, shrunk from {args.ops} in {runs} runs\n")
        f.write("\n".join(ops) + "\n")
    note = "" if time.time() - t0 < args.shrink_seconds else f" (stopped by --shrink-seconds {args.shrink_seconds:g}: may not be minimal)"
    print(f"  shrunk to {len(ops)} ops in {runs} runs ({time.time() - t0:.1f} s){note}; first difference at {why2}")
    for op in ops:
        print(f"    {op}")
    rep = ["--seed", str(seed), "--replay", path] + (["--exit-open"] if exit_open else [])
    print(f"  op list saved in {path}; reproduce with (any fresh directories on a {cfg.name.split('/')[0]} medium):")
    print(f"    {cfg.kside.describe}{' '.join(cfg.kside.cmd(rep))} > kernel.log")
    print(f"    {cfg.dside.describe}{' '.join(cfg.dside.cmd(rep))} > daxkit.log; diff kernel.log daxkit.log")
    if exit_open:
        print(f"    then compare: {cfg.kside.tester} --list {cfg.kside.dir}/t{seed}  with  "
              f"{cfg.kside.tester} --list {cfg.dside.dir}/t{seed}   (the state after exit)")
    if single[4].strip():
        print("  library stderr (single run, last lines):")
        for line in single[4].strip().splitlines()[-5:]:
            print(f"    {line}")


def run_batch(args, cfg, first, count, work, out_dir):
    """Runs seeds first..first+count-1 in one process per side; the last one exits with files open.
    Returns the next seed to run: after a crash of the library side, the seeds it did not reach."""
    extra = ["--seed", str(first), "--count", str(count), "--ops", str(args.ops)] + args.gen
    last = first + count - 1
    ks, ds, krc, drc, derr = run_pair(cfg.kside, cfg.dside, extra, work, "batch", last)
    for seed in range(first, first + count):
        k, d = ks.get(seed, []), ds.get(seed)
        if d is None and seed > first:
            return seed  # the library side died before this seed: rerun from here
        if d is None:
            cfg.failed += 1
            report_failure(args, cfg, seed, f"start: library side {status_text(drc)} before any output: "
                           + " | ".join(derr.strip().splitlines()[-3:]), work, out_dir, seed == last)
            return seed + 1
        why = describe_diff(k, d, drc if seed == max(ds) else 0)
        if why is None:
            cfg.passed += 1
            continue
        cfg.failed += 1
        report_failure(args, cfg, seed, why, work, out_dir, seed == last)
        if derr.strip() and drc != 0 and seed == max(ds):
            print("  library side stderr (last lines): " + " | ".join(derr.strip().splitlines()[-3:]))
    return first + count


def check_preload(lib):
    """The library must really be loaded: ld.so ignores a preload it cannot load, which would pass all."""
    env = dict(os.environ, LD_PRELOAD=lib)
    maps = subprocess.run(["cat", "/proc/self/maps"], env=env, capture_output=True, text=True)
    if os.path.realpath(lib) not in maps.stdout and lib not in maps.stdout:
        sys.stderr.write(maps.stderr)
        print(f"run-diff: FAIL: {lib} does not load as a preload library (see the loader message above)")
        sys.exit(1)


def main():
    args = parse_args()
    tester = os.path.abspath(args.tester or os.path.join(args.build, "tests", "dk_difftest"))
    if not os.access(tester, os.X_OK):
        sys.exit(f"run-diff: {tester} not built")
    lib = "" if args.lib == "none" else (args.lib or os.path.join(args.build, "lib", "libdaxkit.so"))
    if lib:
        lib = os.path.abspath(lib)
        check_preload(lib)
    start = args.start if args.start >= 0 else int(time.time() * 1000) % 1000000000 * 1000
    start -= start % args.batch
    out_dir = args.out or tempfile.mkdtemp(prefix="daxkit-diff.")
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="daxkit-diff-work.")
    configs = []
    for m in args.medium:
        kind, mnt = m.split("=", 1)
        for mode in args.modes.split(","):
            for append in args.append.split(","):
                configs.append(Config(args, tester, kind, mnt, mode, append, lib))
    what = f"--seeds {args.seeds} each" if args.seeds else f"--seconds {args.seconds:g} in all"
    print(f"run-diff: {len(configs)} configuration(s): {', '.join(c.name for c in configs)}")
    print(f"run-diff: seed range starts at {start} ({what}, {args.ops} ops per sequence"
          f"{', excluding ' + args.exclude if args.exclude else ''}, batches of "
          f"{args.batch}); library: {lib or 'none (kernel vs kernel)'}; logs in {out_dir}", flush=True)
    t0 = time.time()
    last = start
    for n, cfg in enumerate(configs):
        deadline = t0 + args.seconds * (n + 1) / len(configs) if args.seconds else None
        seed = start
        while cfg.failed < args.fail_max:
            if args.seeds and seed >= start + args.seeds:
                break
            if deadline and time.time() >= deadline and seed > start:
                break  # every configuration runs at least one batch
            count = min(args.batch, start + args.seeds - seed) if args.seeds else args.batch
            try:
                seed = run_batch(args, cfg, seed, count, work, out_dir)
            except KernelSideError as e:
                print(f"run-diff: ERROR {cfg.name}: {e}; stopping this configuration")
                cfg.failed += 1
                break
        last = max(last, seed)
        print(f"run-diff: {cfg.name}: seeds {start}..{seed - 1}: {cfg.passed} passed, {cfg.failed} failed",
              flush=True)
        for sig, seeds in sorted(cfg.signatures.items(), key=lambda kv: -len(kv[1])):
            print(f"run-diff:   first difference at '{sig}': {len(seeds)} seed(s), e.g. {seeds[:5]}")
    shutil.rmtree(work, ignore_errors=True)
    passed, failed = sum(c.passed for c in configs), sum(c.failed for c in configs)
    secs = time.time() - t0
    print(f"run-diff: seed range {start}..{last - 1}; {passed + failed} sequences in {secs:.0f} s "
          f"({(passed + failed) * 60 / max(secs, 1e-9):.0f} per minute)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
