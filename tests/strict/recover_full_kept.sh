#!/usr/bin/env bash
# Description: a strict log kept for want of space is not applied in part while the medium stays full
# (review 10, finding 14). P1 (strict) appends 4 KiB of 'a', overwrites 'B' at 0 (so both are records of
# its log) and logs a 1 MiB append it never applies (crash point strict.write.logged); the 16 MiB tmpfs then
# fills. Recovery cannot store the 1 MiB and keeps the log. P2 (the kernel's write, then daxkit in posix
# mode) overwrites the first 4 KiB with 'C' and fsyncs; then a program starts under daxkit (start-up
# recovery) while the medium is still full: the file must still start with P2's 'C' -- before, every start
# applied the log's records up to the one that failed again ('B' over P2's acknowledged 'C').
# (Once space is back the kept log is replayed whole, over P2's bytes: documented, not checked here.)
# Usage: recover_full_kept.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_python
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for who in kernel daxkit; do
    dk_managed_dir tmpfs 16M >/dev/null
    dir=$DK_DIR
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_TEST_CRASH=strict.write.logged:3 python3 -c "
import os
fd = os.open('$dir/f', os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
os.write(fd, b'a' * 4096)
g = os.open('$dir/f', os.O_RDWR); os.pwrite(g, b'B', 0)
os.write(fd, b'b' * 1048576)" 2>/dev/null
    [ "$(head -c 2 "$dir/f")" = Ba ] && [ "$(stat -c %s "$dir/f")" = 4096 ] ||
        dk_fail "$who: before recovery want 4096 bytes starting 'Ba', got $(stat -c %s "$dir/f") '$(head -c 2 "$dir/f")' (crash points compiled out?)"
    dd if=/dev/zero of="$DK_MNT/filler" bs=1M 2>/dev/null
    "$cli" recover "$dir" >/dev/null 2>&1
    [ "$(ls "$dir/.daxkit" | grep -c '\.log$')" = 1 ] || fail "$who: the log was not kept by the recovery on the full medium"
    pre=()
    [ $who = daxkit ] && pre=(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir")
    "${pre[@]}" python3 -c "
import os
fd = os.open('$dir/f', os.O_RDWR); os.pwrite(fd, b'C' * 4096, 0); os.fsync(fd)" ||
        { fail "$who: P2's overwrite failed"; continue; }
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" /bin/true 2>/dev/null
    got=$(head -c 4096 "$dir/f" | tr -s 'aBC')
    [ "$got" = C ] || fail "$who: after a start under daxkit on the still-full medium the file's first 4 KiB are '$got', want P2's fsynced 'C'"
    "$cli" recover "$dir" >/dev/null 2>&1
    got2=$(head -c 4096 "$dir/f" | tr -s 'aBC')
    [ "$got2" = C ] || fail "$who: after a second recovery on the still-full medium the file's first 4 KiB are '$got2', want 'C'"
    [ "$got" = C ] && [ "$got2" = C ] && echo "ok: $who: P2's fsynced write stays while the kept log waits for space"
done
[ $fails -eq 0 ] || exit 1
