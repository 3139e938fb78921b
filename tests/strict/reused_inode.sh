#!/usr/bin/env bash
# Description: recovery never replays or rolls back a dead file's records into another file that got its
# inode number (review 9, finding 4). A program writes a scratch file, unlinks it while open (tmpfile()
# style) and is killed: the kernel frees the inode, and XFS/ext4 give the number to the next file created.
# A plain shell (no daxkit: a reboot, a program without LD_PRELOAD) then creates files of 'D' until one
# gets the number; `daxkit recover` must leave it alone.
#   strict: DAXKIT_MODE=strict, an inline write (8 KiB), a staged one (64 KiB: > the 12 KiB inline limit)
#           and an ftruncate of the scratch file; a second file `kept` written the same way and not unlinked
#           is the control: its records must still be replayed (the identity matches its own file).
#   extend: DAXKIT_APPEND=extend (published-size record: 1,000 bytes published, 100 appended, kernel size a
#           step ahead); the new file's size lies in the record's window, which alone let recovery cut it.
# Before the fix: strict wrote the scratch bytes into the new file; extend truncated it to 1,000 bytes.
# Usage: reused_inode.sh MEDIUM (xfs|ext4). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: reused_inode.sh MEDIUM}
dk_need_python
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_media_mount "$medium" 512M >/dev/null
dir=$DK_MNT/managed

strict_prog='
import os, signal, sys
d = sys.argv[1]
k = os.open(d + "/kept", os.O_RDWR | os.O_CREAT, 0o644)
os.write(k, b"K" * 8192)
os.pwrite(k, b"k" * 65536, 8192)
fd = os.open(d + "/scratch", os.O_RDWR | os.O_CREAT, 0o600)
os.write(fd, b"S" * 8192)
os.pwrite(fd, b"s" * 65536, 8192)
os.ftruncate(fd, 70000)
print(os.fstat(fd).st_ino)
os.unlink(d + "/scratch")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
'
extend_prog='
import os, signal, sys
d = sys.argv[1]
fd = os.open(d + "/scratch", os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, b"p" * 1000)
os.fsync(fd)
os.write(fd, b"u" * 100)
print(os.fstat(fd).st_ino)
os.unlink(d + "/scratch")
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
'
fails=0
for variant in strict extend; do
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ $variant = strict ]; then
        # DAXKIT_STRICT_MARKS=0: the log as after a reboot (the scenario), where completion marks never count;
        # in this boot they would say every record was applied, and recovery would replay none of them.
        ino=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_STRICT_MARKS=0 python3 -c "$strict_prog" "$dir")
    else
        ino=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_APPEND=extend python3 -c "$extend_prog" "$dir")
    fi
    [ -n "$ino" ] || dk_fail "$variant: the program printed no inode number"
    found=
    for i in $(seq 200); do
        head -c 8192 /dev/zero | tr '\0' D > "$dir/data.$i"
        if [ "$(stat -c %i "$dir/data.$i")" = "$ino" ]; then found=$dir/data.$i; break; fi
    done
    [ -n "$found" ] || dk_skip "$medium did not give the freed inode number $ino to any of 200 new files: nothing to check"
    sync
    out=$("$cli" recover --json "$dir" 2>&1) || { echo "FAIL: $variant: daxkit recover failed: $out"; fails=$((fails + 1)); continue; }
    size=$(stat -c %s "$found")
    bad=$(tr -d D < "$found" | head -c 8 | od -An -c | tr -d ' \n')
    if [ "$size" != 8192 ] || [ -n "$bad" ]; then
        echo "FAIL: $variant on $medium: $(basename "$found") (inode $ino, never written under daxkit) is $size bytes, bytes other than 'D': '$bad'; recover said: $out"
        fails=$((fails + 1))
        continue
    fi
    if [ $variant = strict ]; then
        # The control: kept's records replayed (its identity matched), the scratch file's counted as reused.
        res=$(grep -m1 '^{' <<<"$out" | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
print(r["strict_replayed"], r["strict_files_reused"])') || res="-1 -1"
        read -r replayed reused <<<"$res"
        kept=$(head -c 8192 "$dir/kept" | tr -d K | wc -c)
        if [ "$replayed" -lt 2 ] || [ "$reused" -lt 3 ] || [ "$kept" != 0 ] || [ "$(stat -c %s "$dir/kept")" != 73728 ]; then
            echo "FAIL: strict on $medium: want kept's 2 records replayed and the scratch file's 3 counted as reused, got replayed=$replayed reused=$reused (kept: $(stat -c %s "$dir/kept") bytes); recover said: $out"
            fails=$((fails + 1))
            continue
        fi
    else
        reused=$(grep -m1 '^{' <<<"$out" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["reused"])') || reused=-1
        if [ "$reused" != 1 ]; then
            echo "FAIL: extend on $medium: want the size record counted as reused, got $reused; recover said: $out"
            fails=$((fails + 1))
            continue
        fi
    fi
    echo "ok: $variant on $medium: $(basename "$found") got the dead file's inode $ino and kept its 8192 bytes of 'D'"
done
[ $fails -eq 0 ] || exit 1
