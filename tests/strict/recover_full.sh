#!/usr/bin/env bash
# Description: strict recovery on a full medium fails cleanly (review 9, finding 15). A strict process logs
# a 1 MiB append and dies before applying it (crash point strict.write.logged); something else then fills
# the 16 MiB tmpfs. Recovery replays through a mapping of the file, and a store into a page the medium
# cannot allocate is SIGBUS -- in `daxkit recover` and in every program started under daxkit there (start-up
# recovery runs in every mode). Want: `daxkit recover` exits 1 (not by a signal) reporting the record failed
# and the log kept; `ls` and /bin/true under daxkit run (exit 0); once space is freed, recovery replays the
# kept log: the file holds the acknowledged 4 KiB and the logged 1 MiB.
# Before the fix: exit 135 (SIGBUS) for all three.
# Usage: recover_full.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

dk_need_python
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_managed_dir tmpfs 16M >/dev/null
dir=$DK_DIR
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_TEST_CRASH=strict.write.logged:2 python3 -c "
import os
fd = os.open('$dir/f', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
os.write(fd, b'a' * 4096)
os.write(fd, b'b' * 1048576)
" 2>/dev/null
[ "$(stat -c %s "$dir/f")" = 4096 ] || dk_fail "want 4096 bytes before recovery (the 1 MiB append logged, not applied), got $(stat -c %s "$dir/f") (crash points compiled out?)"
dd if=/dev/zero of="$DK_MNT/filler" bs=1M 2>/dev/null
avail=$(df --output=avail "$DK_MNT" | tail -1)
[ "$avail" -lt 1024 ] || dk_fail "the medium is not full: $avail KiB available"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
out=$("$cli" recover --json "$dir" 2>&1); rc=$?
if [ $rc -ne 1 ]; then
    fail "daxkit recover on the full medium: exit $rc (want 1: the record failed, reported); output: $out"
else
    res=$(grep -m1 '^{' <<<"$out" | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
print(r["strict_failed"], r["strict_logs_kept"])') || res="-1 -1"
    read -r failed kept <<<"$res"
    [ "$failed" -ge 1 ] && [ "$kept" = 1 ] || fail "want the record failed and the log kept, got failed=$failed kept=$kept; output: $out"
    echo "ok: daxkit recover on the full medium: exit 1, failed=$failed, logs kept=$kept"
fi
grep -q '\.log$' <<<"$(ls "$dir/.daxkit")" || fail "the log is gone after the failed recovery: $(ls "$dir/.daxkit")"
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" ls "$dir" >/dev/null 2>&1; rc=$?
[ $rc = 0 ] || fail "ls under daxkit on the full medium: exit $rc (kernel: 0)"
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict /bin/true 2>/dev/null; rc=$?
[ $rc = 0 ] || fail "/bin/true under daxkit strict on the full medium: exit $rc"
[ $fails = 0 ] && echo "ok: ls and /bin/true under daxkit run on the full medium"
rm -f "$DK_MNT/filler"
out=$("$cli" recover "$dir" 2>&1); rc=$?
[ $rc = 0 ] || fail "daxkit recover after space was freed: exit $rc; output: $out"
size=$(stat -c %s "$dir/f")
tail_ok=$(tail -c 1048576 "$dir/f" | tr -d b | wc -c)
head_ok=$(head -c 4096 "$dir/f" | tr -d a | wc -c)
[ "$size" = $((4096 + 1048576)) ] && [ "$tail_ok" = 0 ] && [ "$head_ok" = 0 ] ||
    fail "after space was freed: want 4096 a + 1 MiB b, got $size bytes (non-b in the tail: $tail_ok); recover: $out"
[ "$(ls "$dir/.daxkit" | grep -c '\.log$')" = 0 ] || fail "the log is left after its replay: $(ls "$dir/.daxkit")"
[ $fails = 0 ] && echo "ok: after space was freed the kept log was replayed: $size bytes"
[ $fails -eq 0 ] || exit 1
