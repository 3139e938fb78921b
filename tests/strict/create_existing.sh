#!/usr/bin/env bash
# Description: a strict O_CREAT open of a name that exists creates nothing, so it logs nothing and makes no log
# (session 29: a strict process that only reads -- SQLite opens its database with O_CREAT -- made its log, marks
# and staging file for a CREATE record, ~0.5-1 ms of CPU). A strict process opens an existing file with O_CREAT
# and reads it: no operation log in the area while it runs; then it opens a new name with O_CREAT: that create
# is logged (the log exists, counter strict_meta 1) and the name is there. Fails with main 6810852's library
# (a log at the first open). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
lib=$(dk_lib) || exit 1
py=$(dk_python)
dk_managed_dir hugetmpfs 1G >/dev/null
printf 'old' > "$DK_DIR/old"
out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$DK_DIR" DAXKIT_MODE=strict DAXKIT_PERSIST=flush "$py" -c '
import glob, os, sys
d = sys.argv[1]
def logs():
    return sorted(os.path.basename(p) for p in glob.glob(d + "/.daxkit/*.log") if "/parked-" not in p)
fd = os.open(d + "/old", os.O_RDWR | os.O_CREAT, 0o644)
print("read", os.read(fd, 10).decode(), "logs", len(logs()))
fd2 = os.open(d + "/new", os.O_RDWR | os.O_CREAT, 0o644)
print("created logs", len(logs()))' "$DK_DIR" 2>&1)
echo "$out"
fails=0
grep -q "^read old logs 0$" <<<"$out" || { echo "FAIL: an O_CREAT open of an existing file made an operation log"; fails=1; }
grep -q "^created logs 1$" <<<"$out" || { echo "FAIL: the create of a new name was not logged (no log)"; fails=1; }
[ -e "$DK_DIR/new" ] || { echo "FAIL: the new name is missing"; fails=1; }
[ $fails = 0 ] && echo ok
exit $fails
