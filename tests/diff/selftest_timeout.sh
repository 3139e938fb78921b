#!/usr/bin/env bash
# Description: run-diff.py's timeout is per sequence (review 17, #07): a process running K sequences is
# killed only when one sequence runs past --timeout (the clock restarts at each '== seed' section in its
# log), and the kill says at which sequence and after how long. A batch of 20 two-process DAXKIT_ATOMIC
# sequences took 109 s at load 20 against the old 120 s per process, and was reported as a library hang.
# Two fake testers (shell loops writing '== seed' lines), --timeout 2.5 s:
#   slow: 6 sequences of 1 s each (6 s in all) -- must run to the end (the old per-process clock killed it);
#   stuck: 2 sequences, then no output -- must be killed about 2.5 s after the second one started, with a
#   note naming sequence 2 and 1 sequence done.
# Exit 0 pass, 1 fail.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 - "$here/run-diff.py" <<'PY'
import importlib.util, os, subprocess, sys, tempfile, time
spec = importlib.util.spec_from_file_location("run_diff", sys.argv[1])
rd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rd)
fails = 0
def run(script, timeout):
    with tempfile.NamedTemporaryFile(delete=False) as log:
        path = log.name
    with open(path, "wb") as out:
        p = subprocess.Popen(["sh", "-c", script], stdout=out)
    t0 = time.time()
    rc = rd.wait(p, timeout, path)
    os.unlink(path)
    return rc, time.time() - t0
rc, took = run('for i in 1 2 3 4 5 6; do echo "== seed $i ops 1"; echo "1 op"; sleep 1; done', 2.5)
print(f"slow: {rd.status_text(rc) if rc != 0 else 'exit 0'} after {took:.1f} s")
if rc != 0:
    print("FAIL: a batch of slow sequences (1 s each, timeout 2.5 s per sequence) was killed"); fails += 1
rc, took = run('echo "== seed 1 ops 1"; sleep 0.3; echo "== seed 2 ops 1"; exec sleep 60', 2.5)
print(f"stuck: {rd.status_text(rc)} after {took:.1f} s")
if rc != "timeout" or not (2.5 <= took < 20):
    print("FAIL: a stuck sequence was not killed about 2.5 s after it started"); fails += 1
elif "sequence 2" not in rd.status_text(rc) or "1 sequences done" not in rd.status_text(rc):
    print("FAIL: the kill does not say which sequence ran past the timeout and how many were done"); fails += 1
sys.exit(1 if fails else 0)
PY
