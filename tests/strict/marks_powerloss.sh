#!/usr/bin/env bash
# Description: strict mode's completion marks count for nothing after a power loss (MEDIUM = ARGV[1]: xfs;
# on ext4 the marks' fsync writes the applied bytes too: skip). A program under the library (strict) writes a file of '.', fsyncs it, overwrites 8
# ranges of 4 KiB with 'A'..'H' (applied into the page cache, each record durable, each marked applied) and
# is killed (SIGKILL, no checkpoint: the applied bytes are not fdatasync'ed). Then only the marks file
# (<log>.done) is fsynced -- the marks on the device, the applied bytes not: what a write-back that took
# the marks' pages and not the file's leaves -- and the device image is put back under the loop device and
# mounted again (tests/strict/powerloss.sh's power loss: same boot, a new mount). Want: before recovery the
# file lacks the writes (else the test proves nothing: skip), and `daxkit recover` replays all 8 (the marks'
# header names another mount: strict_done_skipped 0) -- the file holds 'A'..'H'. Control first, without
# the power loss: recovery replays none of them (done_skipped 9, with the first append) and the file holds them already.
# Exit 0 pass, 1 fail, 77 skip (not root, no loop devices, a kernel without STATX_MNT_ID_UNIQUE).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: marks_powerloss.sh xfs|ext4}
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_need_python
dk_need_cmd losetup cp
dk_media_mount "$medium" >/dev/null
[ -n "$DK_MEDIA_IMAGE" ] && [ -n "$DK_MEDIA_LOOP" ] || dk_fail "no loop medium for $medium"

prog='
import os, signal, sys
fd = os.open(sys.argv[1] + "/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"." * (1 << 20))
os.fsync(fd)
for i in range(8):
    os.pwrite(fd, bytes([65 + i]) * 4096, i * 65536 + 512)
os.kill(os.getpid(), signal.SIGKILL)
'
check='
import sys
data = open(sys.argv[1] + "/f", "rb").read()
want = bytearray(b"." * (1 << 20))
for i in range(8):
    want[i * 65536 + 512:i * 65536 + 4608] = bytes([65 + i]) * 4096
sys.exit(0 if data == want else 1)
'
done_skipped() { python3 -c 'import json, sys; print(json.loads(sys.argv[1].splitlines()[0]).get("strict_done_skipped", -1))' "$1"; }

# The device's content now, as the medium from here on (the old mount's page cache is gone).
power_loss() {
    local state=$DK_MEDIA_IMAGE.state out try
    cp --sparse=always "$DK_MEDIA_IMAGE" "$state" || dk_fail "cp of the device image failed"
    umount "$DK_MNT" || dk_fail "umount $DK_MNT failed"
    mv -f "$state" "$DK_MEDIA_IMAGE" || dk_fail "mv of the state image failed"
    losetup -d "$DK_MEDIA_LOOP" || dk_fail "losetup -d $DK_MEDIA_LOOP failed"
    for try in 1 2 3 4 5 6 7 8 9 10; do
        out=$(losetup "$DK_MEDIA_LOOP" "$DK_MEDIA_IMAGE" 2>&1) && break
        sleep 0.2
    done
    [ "$try" -lt 10 ] || dk_skip "cannot attach the state image to $DK_MEDIA_LOOP again: $out"
    out=$(mount -t "$medium" "$DK_MEDIA_LOOP" "$DK_MNT" 2>&1) || dk_fail "mount of the power-loss state failed: $out"
}

run() { # DIR
    mkdir -p "$1" && sync
    (env LD_PRELOAD="$lib" DAXKIT_DIR="$1" DAXKIT_MODE=strict python3 -c "$prog" "$1" & wait $!) 2>/dev/null
    [ $? -eq 137 ] || dk_fail "the program did not die by SIGKILL"
    ls "$1"/.daxkit/*.done > /dev/null 2>&1 || dk_skip "no completion marks file: the kernel gives no unique mount id (Linux < 6.8)?"
}

# Control: a process crash (same mount): the 8 writes are in the file; none replayed.
run "$DK_MNT/control"
out=$("$cli" recover --json "$DK_MNT/control" 2>/dev/null) || dk_fail "daxkit recover (control) failed: $out"
python3 -c "$check" "$DK_MNT/control" || dk_fail "control: the file lacks the 8 writes after a process crash: $out"
[ "$(done_skipped "$out")" = 9 ] || dk_fail "control: want 9 records applied before the crash (the 1 MiB append, the 8 overwrites: not replayed), got: $out"
echo "ok: control (process crash): the 8 writes in the file, 9 records (with the append) not replayed"

run "$DK_MNT/p"
for m in "$DK_MNT"/p/.daxkit/*.done; do python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$m"; done
power_loss
ls "$DK_MNT"/p/.daxkit/*.done > /dev/null 2>&1 || dk_fail "the fsynced marks file is not on the device"
python3 -c "$check" "$DK_MNT/p" && dk_skip "the applied bytes reached the device before the power loss (write-back): nothing to check"
echo "before recovery the file lacks the applied writes (as a power loss leaves it)"
out=$("$cli" recover --json "$DK_MNT/p" 2>/dev/null) || dk_fail "daxkit recover failed: $out"
python3 -c "$check" "$DK_MNT/p" ||
    dk_fail "after the power loss the file lacks acknowledged writes: recovery trusted marks of another mount? $out"
[ "$(done_skipped "$out")" = 0 ] || dk_fail "want no record taken as applied after the power loss, got: $out"
echo "ok: $medium: after a power loss (a new mount, same boot) the marks count for nothing; all 8 writes replayed"
