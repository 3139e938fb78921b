#!/usr/bin/env bash
# Description: reading a file under daxkit must not change its timestamps (MEDIUM = ARGV[1]). A write
# fault on a shared mapping updates mtime/ctime, so a library that populates its mappings for writing
# would make every file it reads look modified (git rm then refuses: "local modifications"). Reads through
# O_RDONLY and O_RDWR descriptors, and pread at the end, must leave mtime and ctime as they were.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: timestamps.sh MEDIUM}
lib=$(dk_lib) || exit 1
dk_need_python
dk_managed_dir "$medium" 1G >/dev/null
dir=$DK_DIR
head -c 300000 /dev/urandom > "$dir/f"
touch -d '2020-01-02 03:04:05' "$dir/f"
before=$(stat -c '%Y.%y %Z.%z %s' "$dir/f")
sleep 0.05
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" python3 -c '
import os, sys
p = sys.argv[1]
for flags in (os.O_RDONLY, os.O_RDWR):
    fd = os.open(p, flags)
    n = 0
    while True:
        b = os.read(fd, 65536)
        if not b: break
        n += len(b)
    assert n == 300000, n
    os.pread(fd, 10, 299995)
    os.close(fd)
' "$dir/f" || dk_fail "reading under daxkit failed"
after=$(stat -c '%Y.%y %Z.%z %s' "$dir/f")
[ "$before" = "$after" ] || dk_fail "reads under daxkit changed the file's timestamps: before '$before', after '$after'"
echo "timestamps.sh: $medium: mtime and ctime unchanged by reads ($after)"
