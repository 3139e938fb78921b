#!/usr/bin/env bash
# Description: a strict log's completion marks (<log>.done, docs/oplog.md "Completion marks") take 4 KiB pages on
# a huge-page tmpfs, as many as its allocated record slots need (132 KiB for the first 2 MiB of log), not a 2 MiB
# page: the header's pwrite and the marks' fallocate took one and the kernel cleared it -- ~0.4-0.7 ms of every
# strict process's CPU (session 29). A strict process writes once and reports its marks file's blocks while it
# runs. Fails with the library of main 6810852 (4096 blocks of 512 B). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
lib=$(dk_lib) || exit 1
py=$(dk_python)
dk_managed_dir hugetmpfs 1G >/dev/null
got=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$DK_DIR" DAXKIT_MODE=strict DAXKIT_PERSIST=flush "$py" -c '
import glob, os, sys
d = sys.argv[1]
fd = os.open(d + "/f", os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b"x" * 100, 0)
m = glob.glob(d + "/.daxkit/*.done")
print(os.stat(m[0]).st_blocks if m else -1)' "$DK_DIR")
echo "the marks file holds $got blocks of 512 B (a 2 MiB page: 4096)"
[ "$got" -gt 0 ] || { echo "FAIL: no marks file"; exit 1; }
[ "$got" -le 264 ] || { echo "FAIL: more than the 132 KiB the first 2 MiB of log need"; exit 1; }
echo ok
