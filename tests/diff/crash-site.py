#!/usr/bin/env python3
"""Two-process crash at a named crash point: dk_difftest_twoproc --crash-site against two kernel runs.

Usage (normally through run-diff.sh --driver crash-site.py, which mounts the media):
  crash-site.py --medium KIND=MNT --modes strict --sites SITE[,SITE...] [--occurrences 1,2,5] [--victim A|B]
                [--seeds N] [--start S] [--ops N] [--tester-arg=...] [--env K=V] [--lib PATH] [--every-site]

Per (seed, site, occurrence) the library side runs the seed with worker P (the victim) started under
DAXKIT_TEST_CRASH=SITE:N: it kills itself inside the library, in the middle of op i (unacknowledged), and
its next op restarts it (the library's start-up recovery; --recover-cli recovers at once). The kernel has no
crash points, so the kernel side runs the same op list twice, with the victim killed by a `crash` op
instead of op i ("op i never happened") and right after it ("op i completed"). The library side must log
exactly as one of the two (op indices and op i's own line aside): what the survivor and the restarted
victim observe, and the files left. That is strict mode's all-or-nothing claim for the operation in flight
and "the survivor's acknowledged operations are never overwritten by a late replay" for everything after
it. An occurrence the library side does not reach is counted as such (not a pass), and so is a death outside
the list's ops (in a lock, a publish, the final close: no op to put a crash in place of). Prints the seed range
first, how many times each site killed the victim in an op, and 'N passed, N failed, N not reached' last.
Exit 0 no failure and at least one crash, 1 a failure (or nothing reached, or with --every-site a site that
killed the victim in no op of the run), 2 usage.
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("run_diff", os.path.join(here, "run-diff.py"))
rd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rd)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--medium", action="append", default=[])
    p.add_argument("--modes", default="strict")
    p.add_argument("--append", default="stage")
    p.add_argument("--sites", required=True)
    p.add_argument("--occurrences", default="1,2,4,9")
    p.add_argument("--victim", default="A", choices=["A", "B"])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--start", type=int, default=-1)
    p.add_argument("--ops", type=int, default=120)
    p.add_argument("--build", default=os.environ.get("DAXKIT_BUILD", "build"))
    p.add_argument("--tester", default="")
    p.add_argument("--tester-arg", action="append", default=[])
    p.add_argument("--lib", default="")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--out", default="")
    p.add_argument("--every-site", action="store_true",
                   help="fail when a named site kills the victim in no op of the whole run (review 17, finding 9)")
    a = p.parse_args()
    if not a.medium:
        p.error("need --medium")
    a.launcher, a.exact_holes = "env", False
    return a


def run(side, extra, path):
    with open(path, "wb") as out, open(path + ".err", "wb") as err:
        rc = rd.wait(subprocess.Popen(side.cmd(extra), env=side.env, stdout=out, stderr=err), side.timeout)
    return rc, open(path, "rb").read().decode("utf-8", "replace").splitlines()


NUM = re.compile(r"^\d+ ")
CRASH = re.compile(r"^\d+ crash p=. turn=\d = died signal KILL$")


def norm(lines, drop=None):
    """Log lines without op indices (the variants shift them); drop: the index of a line left out."""
    out = []
    for n, line in enumerate(lines):
        if line.startswith("== seed") or n == drop:
            continue
        out.append(NUM.sub("", line))
    return out


def main():
    a = parse_args()
    tester = os.path.abspath(a.tester or os.path.join(a.build, "tests", "dk_difftest_twoproc"))
    lib = os.path.abspath(a.lib or os.path.join(a.build, "lib", "libdaxkit.so"))
    rd.check_preload(lib)
    start = a.start if a.start >= 0 else int(time.time()) % 1000000 * 100
    out_dir = a.out or tempfile.mkdtemp(prefix="daxkit-crashsite.")
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="daxkit-crashsite-work.")
    print(f"crash-site: seeds {start}..{start + a.seeds - 1}, sites {a.sites}, occurrences {a.occurrences}, "
          f"victim {a.victim}, {a.ops} ops; tester options {' '.join(a.tester_arg)}; logs in {out_dir}", flush=True)
    passed = failed = unreached = outside = 0
    killed_in_op = {site: 0 for site in a.sites.split(",")}
    for m in a.medium:
        kind, mnt = m.split("=", 1)
        for mode in a.modes.split(","):
            base = os.path.join(mnt, f"crashsite-{mode}")
            kdir, ddir = os.path.join(base, "kernel"), os.path.join(base, "managed")
            for d in (kdir, ddir):
                os.makedirs(d, exist_ok=True)
            kside = rd.Side(a, tester, kdir, "", mode, a.append)
            dside = rd.Side(a, tester, ddir, lib, mode, a.append)
            for seed in range(start, start + a.seeds):
                ops = subprocess.run([tester, "--seed", str(seed), "--ops", str(a.ops), "--print-ops"] + a.tester_arg,
                                     check=True, capture_output=True, text=True).stdout.splitlines()
                for site in a.sites.split(","):
                    for occ in a.occurrences.split(","):
                        tag = f"{kind}-{mode}-{seed}-{site}-{occ}"
                        crash = f"--crash-site={site}:{occ}:{a.victim}"
                        drc, dlog = run(dside, ["--seed", str(seed), "--ops", str(a.ops), crash], os.path.join(work, "d.log"))
                        died = [n for n, l in enumerate(dlog) if NUM.match(l) and l.endswith("= worker died signal KILL")]
                        if drc != 0 or not died:
                            other = [l for l in dlog if "worker" in l]
                            if drc != 0 or (other and "died signal KILL" not in other[0]):
                                failed += 1
                                print(f"FAIL {tag}: library side {rd.status_text(drc) if drc else 'logged: ' + other[0]}")
                            elif other:  # killed at a lock, publish or the final close: no op of the list to replace
                                outside += 1
                            else:
                                unreached += 1
                            rd.wipe(ddir)
                            continue
                        n = died[0]
                        killed_in_op[site] += 1
                        i = int(dlog[n].split()[0])
                        variants = {"not done": ops[:i] + [f"crash p={a.victim} turn=1"] + ops[i + 1:],
                                    "done": ops[:i + 1] + [f"crash p={a.victim} turn=0"] + ops[i + 1:]}
                        dnorm = norm(dlog, drop=n)
                        match, firsts = None, []
                        for name, vops in variants.items():
                            rp = os.path.join(work, f"replay.{name.replace(' ', '')}")
                            with open(rp, "w") as f:
                                f.write("\n".join(vops) + "\n")
                            krc, klog = run(kside, ["--seed", str(seed), "--replay", rp], os.path.join(work, "k.log"))
                            if krc != 0:
                                sys.exit(f"crash-site: kernel side failed ({rd.status_text(krc)})")
                            # the kernel's crash line (and, "done", op i's own) stand where the library side's
                            # op i line was
                            gone = [k for k, l in enumerate(klog) if CRASH.match(l) or (name == "done" and l.startswith(f"{i} "))]
                            knorm = [NUM.sub("", l) for k, l in enumerate(klog) if k not in gone and not l.startswith("== seed")]
                            d = rd.first_diff(knorm, dnorm)
                            if d is None:
                                match = name
                                break
                            firsts.append(f"{name}: kernel '{knorm[d] if d < len(knorm) else '<none>'}' daxkit "
                                          f"'{dnorm[d] if d < len(dnorm) else '<none>'}'")
                        if match:
                            passed += 1
                            continue
                        failed += 1
                        keep = os.path.join(out_dir, f"{tag}.ops")
                        shutil.copy(os.path.join(work, "replay.notdone"), keep)
                        print(f"FAIL {tag}: died in op {i} ({ops[i]}); equal to neither kernel run:")
                        for f_ in firsts:
                            print(f"    {f_}")
                        print(f"  reproduce: {dside.describe}{' '.join(dside.cmd(['--seed', str(seed), '--ops', str(a.ops), crash]))}"
                              f" > daxkit.log")
                        print(f"  against:   {' '.join(kside.cmd(['--seed', str(seed), '--replay', keep]))} > kernel.log "
                              f"(op {i} replaced by the crash; the 'done' variant keeps op {i} before it)")
                        rd.wipe(ddir)
    shutil.rmtree(work, ignore_errors=True)
    print(f"crash-site: {outside} crash(es) outside the op list's ops (a lock, publish or final close: not compared)")
    print("crash-site: victim killed in an op, per site: " + ", ".join(f"{k} {v}" for k, v in killed_in_op.items()))
    never = [k for k, v in killed_in_op.items() if v == 0]
    if a.every_site and never:
        print(f"FAIL: --every-site: never killed in an op at {', '.join(never)}")
    print(f"{passed} passed, {failed} failed, {unreached} not reached")
    return 1 if failed or not passed or (a.every_site and never) else 0


if __name__ == "__main__":
    sys.exit(main())
