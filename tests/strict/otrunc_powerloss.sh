#!/usr/bin/env bash
# Description: strict mode rewrites a file in place -- open(O_TRUNC), a 100-byte write (durable when it
# returns: its record) -- and then the machine loses power, emulated by XFS's shutdown without a log flush
# (xfs_io -x -c shutdown, as xfstests' godown) and a remount. The truncate is no record: unless it is durable
# before the open returns, log recovery loses it and strict recovery replays the new bytes over the old
# content (review 9, finding 29: 8,192 bytes, new head and old tail). Want: exactly 100 bytes of 'N'.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
dk_need_python
dk_need_cmd xfs_io
dk_need_cmd mkfs.xfs
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
img=$(mktemp /dev/shm/dk-otrunc.XXXXXX) && truncate -s 512M "$img" || dk_skip "no image file"
loop=$(losetup --find --show "$img" 2>/dev/null) || { rm -f "$img"; dk_skip "no loop device"; }
mnt=$(mktemp -d)
dk_on_exit "umount -l '$mnt' 2>/dev/null; losetup -d '$loop'; rm -f '$img'; rmdir '$mnt'"
mkfs.xfs -q -f "$loop" && mount "$loop" "$mnt" && mkdir -p "$mnt/m" || dk_fail "mkfs/mount of XFS on $loop"
m=$mnt/m
head -c 8192 /dev/zero | tr '\0' O > "$m/config"
sync
env LD_PRELOAD="$lib" DAXKIT_DIR="$m" DAXKIT_MODE=strict python3 -c "
import os, time
o = os.open('$m/other', os.O_WRONLY | os.O_CREAT, 0o644); os.write(o, b'x' * 4096)  # strict's log exists now
time.sleep(1)
fd = os.open('$m/config', os.O_WRONLY | os.O_TRUNC)
os.write(fd, b'N' * 100)
os.kill(os.getpid(), 9)" 2>/dev/null
xfs_io -x -c shutdown "$mnt" || dk_skip "xfs_io shutdown refused"
umount "$mnt" && mount "$loop" "$mnt" || dk_fail "remount after the emulated power loss"
"$cli" recover "$m" | head -3
size=$(stat -c %s "$m/config")
content=$(tr -s NO < "$m/config" | head -c 8)
echo "after the power loss: $size bytes, '$content'"
[ "$size" = 100 ] && [ "$content" = N ] || dk_fail "the truncate was lost: $size bytes '$content' (want 100 bytes of N)"
echo "ok: the truncating open was durable before the writes that followed it"
