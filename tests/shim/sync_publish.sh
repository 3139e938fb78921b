#!/usr/bin/env bash
# Description: sync() and syncfs() publish the process's appends (MEDIUM = ARGV[1]; ARGV[2]: append
# strategy, default stage). Through the kernel a write is in the file when it returns, so sync/syncfs make
# it durable; under daxkit an append waits for a publish point, and sync/syncfs were not one: the appends
# of a file kept open were not in the file the kernel wrote back. The program appends to a file, calls the
# case's call with the file still open, and has a process without the library read the kernel's size:
# the full size, as through the kernel (0 without the publish).
#   sync     os.sync()
#   syncfs   syncfs(fd) of another descriptor on the same file system (the directory)
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: sync_publish.sh MEDIUM [stage|extend]}
append=${2:-stage}
lib=$(dk_lib) || exit 1
dk_need_python
dk_need_cmd stat
dk_managed_dir "$medium" 1G >/dev/null
dir=$DK_DIR

prog='
import ctypes, os, subprocess, sys
d, case = sys.argv[1], sys.argv[2]
p = os.path.join(d, case)
env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "DAXKIT_DIR")}
# The reader starts before the writes: a fork (or exec) is a publish point itself.
reader = subprocess.Popen(["sh", "-c", "read go; stat -c %s \"$0\"", p], env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"x" * 10000)
os.write(fd, b"y" * 3000)
if case == "sync":
    os.sync()
else:
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syncfs(dfd) != 0:
        sys.exit("syncfs: errno %d" % ctypes.get_errno())
    os.close(dfd)
seen = reader.communicate("go\n")[0].strip()
os.close(fd)
print(case, "size seen by another process after the call:", seen)
'
fails=0
for case in sync syncfs; do
    rm -f "$dir/$case"
    k=$(python3 -c "$prog" "$dir" "$case") || dk_fail "$case: the program failed through the kernel"
    rm -f "$dir/$case"
    d=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_APPEND="$append" python3 -c "$prog" "$dir" "$case") ||
        dk_fail "$case: the program failed under daxkit"
    if [ "$k" = "$d" ]; then
        echo "ok   $d"
    else
        echo "FAIL kernel '$k', daxkit '$d'"
        fails=$((fails + 1))
    fi
done
[ "$fails" = 0 ] || dk_fail "$fails case(s) differ from the kernel ($medium, $append)"
echo "sync_publish.sh: $medium $append: sync and syncfs publish"
