#!/usr/bin/env bash
# Description: recovery does not depend on the roots a program is given (review 10, finding 18). P1, run
# with the wider root /data, leaves a record for /data/sub/f in /data/.daxkit and is killed:
#   strict   a strict overwrite of 'B' logged, not applied (crash point strict.write.logged);
#   atomic   a DAXKIT_ATOMIC (journal) fsync of 'B' committed, not applied (crash point atomic.sync.after_epoch).
# P2, run with the narrower root /data/sub, starts: its start must replay P1's record ('B'), before it writes
# 'C' and fsyncs; a program started with the wider root /data afterwards must leave 'C' (before the fix P2's
# start looked at /data/sub/.daxkit only, and that last start replayed P1's 'B' over P2's acknowledged 'C').
# Usage: recover_roots.sh (huge tmpfs; test builds: crash points). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_cmd python3
lib=$(dk_lib) || exit 1
dk_media_mount hugetmpfs 256M >/dev/null
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
content() { tr -s 'ABC' < "$1"; }
write_prog='
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR); os.pwrite(fd, sys.argv[2].encode() * 8192, 0); os.fsync(fd); os.close(fd)'
for how in strict atomic; do
    M=$DK_MNT/$how
    mkdir -p "$M/sub"
    head -c 8192 /dev/zero | tr '\0' A > "$M/sub/f"
    if [ $how = strict ]; then
        env=(DAXKIT_MODE=strict)
        crash=strict.write.logged:1
    else
        env=(DAXKIT_ATOMIC='*' DAXKIT_ATOMIC_POLICY=journal DAXKIT_ATOMIC_PACE=0 DAXKIT_PERSIST=flush)
        crash=atomic.sync.after_epoch:1
    fi
    env LD_PRELOAD="$lib" DAXKIT_DIR="$M" "${env[@]}" DAXKIT_TEST_CRASH=$crash python3 -c "$write_prog" "$M/sub/f" B \
        2>/dev/null
    [ "$(content "$M/sub/f")" = A ] ||
        { fail "$how: after P1's crash the file holds $(content "$M/sub/f"), want A (crash points compiled out?)"; continue; }
    env LD_PRELOAD="$lib" DAXKIT_DIR="$M/sub" "${env[@]}" /bin/true
    got=$(content "$M/sub/f")
    [ "$got" = B ] || fail "$how: a start with the narrower root $M/sub left $got, want B (P1's record replayed)"
    env LD_PRELOAD="$lib" DAXKIT_DIR="$M/sub" "${env[@]}" python3 -c "$write_prog" "$M/sub/f" C
    env LD_PRELOAD="$lib" DAXKIT_DIR="$M" "${env[@]}" /bin/true
    got2=$(content "$M/sub/f")
    [ "$got2" = C ] || fail "$how: a start with the wider root $M after P2's acknowledged C left $got2, want C"
    [ "$got" = B ] && [ "$got2" = C ] && echo "ok: $how: the narrower start replayed B; C stands after the wider start"
done
[ $fails -eq 0 ] || exit 1
echo PASS
