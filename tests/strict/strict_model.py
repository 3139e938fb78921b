#!/usr/bin/env python3
"""Strict-mode crash workload and checker (for tests/crash/drive.py).

    strict_model.py workload DIR SEED OPS [THREADS]
        run under daxkit (DAXKIT_MODE=strict, DAXKIT_DIR=DIR): each of THREADS threads (default 1) runs OPS
        seeded operations (seed SEED+thread) on its own two files -- overwrites of 1 B to 40 KiB (inline and
        staged records), appends through an O_APPEND descriptor, truncates down and up (ftruncate at odd
        operation indexes, truncate by name at even ones), renames (the file moves to a new name), an fsync
        every 7 operations, a close and reopen of the file's read-write
        descriptor every 10 (a checkpoint in strict mode) -- appending the index of each completed
        operation to DIR.acked.T (outside the managed directory, so the kernel writes it)
    strict_model.py check-content DIR SEED OPS [THREADS]
        the same comparison of the files only (no recovery expected yet): exit 1 when some thread's files
        equal the model neither after k nor after k+1 operations (tests/strict/powerloss.sh: a power loss
        lost an applied write, which recovery must then redo)
    strict_model.py diff DIR SEED OPS [THREADS]
        prints where each thread's files first differ from the model after its acknowledged operations
    strict_model.py check DIR SEED OPS [THREADS]
        after the crash and `daxkit recover DIR`, without the library: for each thread with k operations
        acknowledged, its files (under the names the model gives them, the old names gone) must equal the
        model after k or after k+1 operations (every acknowledged operation is there, the one in flight is
        all or nothing), and DIR/.daxkit must hold nothing of the dead process.
The model is the same seeded sequence applied to byte arrays. With STRICT_MODEL_DELTA=1 in the environment (the
workload's and the checker's), most overwrites rewrite a whole 4 KiB page of the file with a few bytes changed --
what SQLite does, and what strict mode logs as a delta record (docs/strict.md "Delta records"). Exit 0 pass, 1 fail."""
import fcntl
import os
import re
import random
import sys
import threading

FILES = ("f0", "f1")


DELTA = os.environ.get("STRICT_MODEL_DELTA") == "1"


def page_rewrite(rnd, i, cur):
    """A 4 KiB page of cur (bytes) at a page boundary, with one to three short runs changed."""
    off = rnd.randrange(0, len(cur) // 4096) * 4096
    page = bytearray(cur[off:off + 4096])
    for _ in range(rnd.randrange(1, 4)):
        at, ln = rnd.randrange(0, 4096), rnd.choice((1, 4, 16, 70, 130))
        for j in range(at, min(at + ln, 4096)):
            page[j] = (page[j] + 1 + (i * 7 + j) % 250) % 256
    return off, bytes(page)


def ops(seed, n):
    rnd = random.Random(seed)
    sizes = {f: 0 for f in FILES}
    cur = {f: bytearray() for f in FILES}  # (DELTA only: the contents, for page rewrites)
    for i, f, kind, off, data in ops_raw(rnd, n, sizes, cur):
        if DELTA:
            b = cur[f]
            if kind == "truncate":
                del b[off:]
                b.extend(b"\0" * (off - len(b)))
            elif kind in ("write", "append"):
                if len(b) < off:
                    b.extend(b"\0" * (off - len(b)))
                b[off:off + len(data)] = data
        yield i, f, kind, off, data


def ops_raw(rnd, n, sizes, cur):
    for i in range(n):
        f = FILES[rnd.randrange(2)]
        kind = rnd.choices(("write", "append", "truncate", "rename"), (6, 3, 1, 1))[0]
        if kind == "rename":
            yield i, f, "rename", 0, b""
            continue
        if kind == "write" and DELTA and len(cur[f]) >= 4096 and rnd.random() < 0.7:
            off, data = page_rewrite(rnd, i, cur[f])
            yield i, f, "write", off, data
        elif kind == "write":
            size = rnd.choice((1, 17, 100, 700, 1024, 1500, 4096, 9000, 13000, 40000))
            off = rnd.randrange(0, sizes[f] + 5000)
            yield i, f, "write", off, bytes([(i * 7 + j) % 251 for j in range(size)])
            sizes[f] = max(sizes[f], off + size)
        elif kind == "append":
            size = rnd.choice((5, 300, 2048, 20000))
            yield i, f, "append", sizes[f], bytes([(i * 13 + j) % 241 for j in range(size)])
            sizes[f] += size
        else:
            new = rnd.randrange(0, sizes[f] + 3000)
            yield i, f, "truncate", new, b""
            sizes[f] = new


def name_after(t, f, i):
    return "t%d%s.r%d" % (t, f, i)


def model(seed, n, k, t):
    """(contents, names) of thread t's files after k operations."""
    files = {f: bytearray() for f in FILES}
    names = {f: "t%d%s" % (t, f) for f in FILES}
    for i, f, kind, off, data in ops(seed, n):
        if i >= k:
            break
        b = files[f]
        if kind == "rename":
            names[f] = name_after(t, f, i)
        elif kind == "truncate":
            del b[off:]
            b.extend(b"\0" * (off - len(b)))
        else:
            if len(b) < off:
                b.extend(b"\0" * (off - len(b)))
            b[off:off + len(data)] = data
    return files, names


def run_thread(d, t, seed, n):
    names = {f: "t%d%s" % (t, f) for f in FILES}
    fds = {f: os.open(os.path.join(d, names[f]), os.O_RDWR | os.O_CREAT, 0o644) for f in FILES}
    afds = {f: os.open(os.path.join(d, names[f]), os.O_WRONLY | os.O_APPEND) for f in FILES}
    ack = os.open(d.rstrip("/") + ".acked.%d" % t, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for i, f, kind, off, data in ops(seed, n):
        if kind == "write":
            if DELTA:  # strict mode takes delta records only under the program's record lock (review29 #9); released
                fcntl.lockf(fds[f], fcntl.LOCK_UN)  # first, as SQLite does: the library follows the program's locks from a
                fcntl.lockf(fds[f], fcntl.LOCK_EX)  # whole-file unlock on after a close of the file
            assert os.pwrite(fds[f], data, off) == len(data)
        elif kind == "append":
            assert os.write(afds[f], data) == len(data)
        elif kind == "rename":
            new = name_after(t, f, i)
            os.rename(os.path.join(d, names[f]), os.path.join(d, new))
            names[f] = new
        elif i % 2:
            os.ftruncate(fds[f], off)
        else:  # by name (session 26: strict logs it too -- its own crash site, strict.truncate_name.logged)
            os.truncate(os.path.join(d, names[f]), off)
        if i % 7 == 6:
            os.fsync(fds[f])
        if i % 10 == 9:
            # A close is a publish point: strict mode checkpoints there (crash sites strict.checkpoint.*,
            # which fsync -- not a checkpoint -- never reaches). The file is reopened under its name now.
            os.close(fds[f])
            fds[f] = os.open(os.path.join(d, names[f]), os.O_RDWR)
        os.write(ack, b"%d\n" % (i + 1))


def workload(d, seed, n, threads):
    ts = [threading.Thread(target=run_thread, args=(d, t, seed + t, n)) for t in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return 0


def thread_state(d, t, seed, n, k):
    """True when thread t's files are exactly the model after k operations (old names gone)."""
    files, names = model(seed, n, k, t)
    for f in FILES:
        p = os.path.join(d, names[f])
        got = open(p, "rb").read() if os.path.exists(p) else b""
        if got != bytes(files[f]):
            return False
    present = {e for e in os.listdir(d) if e.startswith("t%df" % t)}
    expected = {names[f] for f in FILES if os.path.exists(os.path.join(d, names[f]))}
    return present == expected


def check_thread(d, t, seed, n):
    acked = 0
    try:
        lines = open(d.rstrip("/") + ".acked.%d" % t).read().split()
        acked = int(lines[-1]) if lines else 0
    except FileNotFoundError:
        pass
    ok = [k for k in (acked, acked + 1) if k <= n and thread_state(d, t, seed, n, k)]
    if not ok:
        files, names = model(seed, n, acked, t)
        print("FAIL: thread %d seed %d: the files equal the model neither after %d nor after %d operations; "
              "model names %s (sizes %s), directory has %s" % (t, seed, acked, acked + 1, sorted(names.values()),
              [len(files[f]) for f in FILES], sorted(e for e in os.listdir(d) if e.startswith("t%df" % t))))
        return None
    return acked, ok[0]


def diff(d, seed, n, threads):
    """One line per thread: where its files first differ from the model after its acknowledged operations."""
    for t in range(threads):
        lines = open(d.rstrip("/") + ".acked.%d" % t).read().split()
        acked = int(lines[-1]) if lines else 0
        files, names = model(seed + t, n, acked, t)
        out = []
        for f in FILES:
            p = os.path.join(d, names[f])
            got = open(p, "rb").read() if os.path.exists(p) else None
            want = bytes(files[f])
            if got is None:
                out.append("%s missing" % names[f])
            elif got != want:
                at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
                out.append("%s: size %d (model %d), first difference at byte %d" % (names[f], len(got), len(want), at))
        print("thread %d after %d operations: %s" % (t, acked, "; ".join(out) or "equal"))
    return 0


def parked_log_records(path):
    """Head lines of the generation in force in the log at path (src/oplog/format.h): a parked log must have none."""
    import struct
    b = open(path, "rb").read()
    gens = []
    for i in (0, 1):  # header slot g % 2: magic "DKOL", the slot's parity (the crc is left to the library's scan)
        magic, gen = struct.unpack_from("<I", b, i * 64 + 4)[0], struct.unpack_from("<I", b, i * 64 + 12)[0]
        if magic == 0x4C4F4B44 and gen and gen % 2 == i:
            gens.append(gen)
    if not gens:
        return 0
    g = max(gens)
    return sum(1 for off in range(128, len(b) - 63, 64)
               if b[off + 4] == 0xA5 and struct.unpack_from("<I", b, off + 8)[0] == g)


def check(d, seed, n, threads, content_only=False):
    results = [check_thread(d, t, seed + t, n) for t in range(threads)]
    if None in results:
        return 1
    if content_only:
        print("ok: seed %d: files equal the model (acknowledged, model state) %s" % (seed, results))
        return 0
    area = os.path.join(d, ".daxkit")
    # (the user's in-flight registry stays: a table of thread slots, no record or data -- src/upath/inflight.c;
    # and a parked log with its staging file, left for the next process: no valid record -- docs/oplog.md; and the
    # lock cache's board when the workload took record locks -- STRICT_MODEL_DELTA: a slot table, no record or data)
    keep = r"inflight\.\d+\.reg|parked-\d+-\d+\.log|parked-\d+-\d+\.strict\.stg|lockboard\d*\.\d+"
    left = sorted(n for n in os.listdir(area) if not re.fullmatch(keep, n)) if os.path.isdir(area) else []
    if left:
        print("FAIL: left in %s after recovery: %s" % (area, left))
        return 1
    for n in sorted(os.listdir(area)) if os.path.isdir(area) else []:
        if re.fullmatch(r"parked-\d+-\d+\.log", n) and parked_log_records(os.path.join(area, n)):
            print("FAIL: the parked log %s holds a head line of its generation in force (a record never recovered)" % n)
            return 1
    print("ok: seed %d: (acknowledged, model state) per thread %s" % (seed, results))
    return 0


if __name__ == "__main__":
    cmd, d, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    if cmd == "workload":
        sys.exit(workload(d, seed, n, threads))
    if cmd == "diff":
        sys.exit(diff(d, seed, n, threads))
    sys.exit(check(d, seed, n, threads, content_only=cmd == "check-content"))
