#!/usr/bin/env bash
# Description: strict mode logs a truncate before the kernel runs it; when the kernel refuses it (EPERM:
# an append-only file), the record must be taken back, or recovery after a crash applies a truncate that
# never happened (review 8, finding 4: the file came back with 0 bytes). A Python program under the library
# appends a line to an append-only file (chattr +a), fsyncs, has ftruncate(0) refused and kills itself;
# after the flag is cleared, `daxkit recover` must leave the file as the program left it, with the refusal
# counted (strict_retracts). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: refused_truncate.sh MEDIUM}
dk_need_python
dk_need_cmd chattr
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
if [ "$medium" = xfs4k ]; then
    # XFS over a loop device with 4 KiB logical sectors: the log's direct records fill 4 KiB (64 lines), and
    # so must the retraction's zeros (review 9, finding 16: a 1 KiB buffer trapped).
    dk_need_root
    dk_need_cmd mkfs.xfs
    img=$(mktemp /dev/shm/dk-refused-4k.XXXXXX) && truncate -s 512M "$img" || dk_skip "no image file"
    loop=$(losetup --find --show --sector-size 4096 "$img" 2>/dev/null) || { rm -f "$img"; dk_skip "losetup --sector-size 4096 refused"; }
    mnt=$(mktemp -d)
    dk_on_exit "umount -l '$mnt' 2>/dev/null; losetup -d '$loop'; rm -f '$img'; rmdir '$mnt'"
    mkfs.xfs -q -f "$loop" && mount "$loop" "$mnt" || dk_fail "mkfs/mount of the 4 KiB-sector XFS"
    [ "$(blockdev --getss "$loop")" = 4096 ] || dk_fail "the loop device does not have 4 KiB sectors"
    DK_MNT=$mnt
else
    dk_media_mount "$medium" 512M >/dev/null
fi
dir=$DK_MNT/managed
mkdir -p "$dir"
printf 'line one\nline two\n' > "$dir/log"
chattr +a "$dir/log" 2>/dev/null || dk_skip "chattr +a is refused on $medium"
dk_on_exit "chattr -a '$dir/log' 2>/dev/null"
out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_STATS=1 python3 - "$dir/log" <<'PY' 2>&1
import os, signal, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"line three\n"); os.fsync(fd)
try:
    os.ftruncate(fd, 0); print("ftruncate succeeded")
except OSError as e:
    print("ftruncate refused: %s" % e.strerror)
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
PY
)
echo "$out"
grep -q "^ftruncate refused: Operation not permitted$" <<<"$out" ||
    dk_fail "the refused ftruncate did not come back with EPERM, as the kernel's does"
before=$(stat -c %s "$dir/log")
chattr -a "$dir/log"
"$cli" recover "$dir" | head -5
after=$(stat -c %s "$dir/log")
echo "size before recovery $before, after $after"
[ "$before" = 29 ] || dk_fail "the file was $before bytes before recovery (want 29)"
[ "$after" = 29 ] || dk_fail "recovery applied the refused truncate: $after bytes (want 29)"
[ "$(tail -n1 "$dir/log")" = "line three" ] || dk_fail "the appended line is gone"
echo "ok: the refused truncate was never replayed"
