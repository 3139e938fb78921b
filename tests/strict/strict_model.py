#!/usr/bin/env python3
"""Strict-mode crash workload and checker (for tests/crash/drive.py).

    strict_model.py workload DIR SEED OPS   run under daxkit (DAXKIT_MODE=strict, DAXKIT_DIR=DIR): OPS
                                            seeded operations on DIR/f0 and DIR/f1 -- overwrites of 1 B to
                                            40 KiB (inline and staged records), appends through an O_APPEND
                                            descriptor, truncates down and up, an fsync every 7 operations --
                                            appending the index of each completed operation to DIR.acked
                                            (outside the managed directory, so the kernel writes it)
    strict_model.py check DIR SEED OPS      after the crash and `daxkit recover DIR`, without the library:
                                            with k operations acknowledged, both files must equal the model
                                            after k or after k+1 operations (every acknowledged operation is
                                            there, the one in flight is all or nothing), and DIR/.daxkit must
                                            hold nothing of the dead process.
The model is the same seeded sequence applied to byte arrays. Exit 0 pass, 1 fail."""
import os
import random
import sys

FILES = ("f0", "f1")


def ops(seed, n):
    rnd = random.Random(seed)
    sizes = {f: 0 for f in FILES}
    for i in range(n):
        f = FILES[rnd.randrange(2)]
        kind = rnd.choices(("write", "append", "truncate"), (6, 3, 1))[0]
        if kind == "write":
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


def model(seed, n, k):
    files = {f: bytearray() for f in FILES}
    for i, f, kind, off, data in ops(seed, n):
        if i >= k:
            break
        b = files[f]
        if kind == "truncate":
            del b[off:]
            b.extend(b"\0" * (off - len(b)))
        else:
            if len(b) < off:
                b.extend(b"\0" * (off - len(b)))
            b[off:off + len(data)] = data
    return files


def workload(d, seed, n):
    fds = {f: os.open(os.path.join(d, f), os.O_RDWR | os.O_CREAT, 0o644) for f in FILES}
    afds = {f: os.open(os.path.join(d, f), os.O_WRONLY | os.O_APPEND) for f in FILES}
    ack = os.open(d.rstrip("/") + ".acked", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for i, f, kind, off, data in ops(seed, n):
        if kind == "write":
            assert os.pwrite(fds[f], data, off) == len(data)
        elif kind == "append":
            assert os.write(afds[f], data) == len(data)
        else:
            os.ftruncate(fds[f], off)
        if i % 7 == 6:
            os.fsync(fds[f])
        os.write(ack, b"%d\n" % (i + 1))
    return 0


def check(d, seed, n):
    acked = 0
    try:
        lines = open(d.rstrip("/") + ".acked").read().split()
        acked = int(lines[-1]) if lines else 0
    except FileNotFoundError:
        pass
    got = {}
    for f in FILES:
        p = os.path.join(d, f)
        got[f] = open(p, "rb").read() if os.path.exists(p) else b""
    ok = [k for k in (acked, acked + 1) if k <= n and all(bytes(m) == got[f] for f, m in model(seed, n, k).items())]
    if not ok:
        want = model(seed, n, acked)
        for f in FILES:
            w = bytes(want[f])
            if w != got[f]:
                first = next((j for j in range(min(len(w), len(got[f]))) if w[j] != got[f][j]), None)
                print("FAIL: %s: %d bytes, the model after %d acknowledged ops has %d; first difference at %s"
                      % (f, len(got[f]), acked, len(w), first))
        print("FAIL: seed %d: the files equal the model neither after %d nor after %d operations" % (seed, acked, acked + 1))
        return 1
    area = os.path.join(d, ".daxkit")
    left = sorted(os.listdir(area)) if os.path.isdir(area) else []
    if left:
        print("FAIL: left in %s after recovery: %s" % (area, left))
        return 1
    print("ok: seed %d: %d acknowledged, files equal the model after %d operations" % (seed, acked, ok[0]))
    return 0


if __name__ == "__main__":
    cmd, d, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    sys.exit(workload(d, seed, n) if cmd == "workload" else check(d, seed, n))
