#!/usr/bin/env bash
# Description: where strict mode's staged overwrites become visible when they wait for the checkpoint
# (huge tmpfs, DAXKIT_PERSIST=flush, DAXKIT_STRICT_APPLY=checkpoint: every staged overwrite waits):
#   - the writing process reads its own write at once (pread applies the waiting overwrites first);
#   - a mapping the program makes afterwards shows it, and a write made while the file is mapped shows in
#     the mapping at once (a mapped file's writes are applied at the write);
#   - another process (not under daxkit) reads it after the writer's publish point (close), not before
#     being required to;
#   - after the writer exits, the kernel file holds every write.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
lib=$(dk_lib) || exit 1
dk_need_python
dk_managed_dir hugetmpfs 1G >/dev/null
dir=$DK_DIR
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_STRICT_APPLY=checkpoint \
    python3 - "$dir" <<'PY'
import mmap, os, subprocess, sys
d = sys.argv[1]
path = d + "/f"
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"\0" * (1 << 20)); os.fsync(fd)
fails = 0
def check(what, got, want):
    global fails
    ok = got == want
    print("%-60s %s" % (what, "ok" if ok else "FAIL"))
    fails += not ok
a = b"A" * 4096
os.pwrite(fd, a, 8192)
check("the writer reads its 4 KiB overwrite at once", os.pread(fd, 4096, 8192), a)
b = b"B" * 4096
os.pwrite(fd, b, 16384)
m = mmap.mmap(fd, 1 << 20)
check("a mapping made after an overwrite shows it", m[16384:20480], b)
c = b"C" * 4096
os.pwrite(fd, c, 24576)
check("an overwrite while the file is mapped shows in the mapping", m[24576:28672], c)
m.close()
fd2 = os.open(path, os.O_RDWR)
e = b"E" * 4096
os.pwrite(fd2, e, 40960)
os.close(fd2)  # a publish point of the file
other = subprocess.run(["env", "-u", "LD_PRELOAD", "python3", "-c",
    "import os,sys; f=os.open(sys.argv[1], os.O_RDONLY); sys.stdout.buffer.write(os.pread(f, 4096, 40960))", path],
    capture_output=True).stdout
check("another process reads it after the writer's close", other, e)
g = b"G" * 4096
os.pwrite(fd, g, 49152)
os.close(fd)
sys.exit(1 if fails else 0)
PY
rc=$?
[ $rc -eq 0 ] || dk_fail "a waiting overwrite was not visible where strict mode says it is"
want=$(python3 -c 'import sys; f=open(sys.argv[1],"rb").read(); print(f[49152:53248]==b"G"*4096 and f[8192:12288]==b"A"*4096)' "$dir/f")
[ "$want" = True ] || dk_fail "after the writer exited the kernel file lacks its writes"
echo "ok: waiting overwrites are visible to the writer at once, in its mappings, to others after its publish point"
