#!/usr/bin/env bash
# Description: strict overwrites on a full medium (review 9, finding 27's update: they failed with EIO). An
# overwrite of allocated blocks needs no new block; strict mode needs its log, and a staged write a block of
# staging. On a 16 MiB tmpfs with a 1 MiB file of 'o', filled by something else (a file outside the managed
# directory), each case under daxkit strict:
#   log     a process whose log exists (made by a 100-byte write before the medium filled) overwrites 4 KiB
#           (staged on this medium: its staging file has no block yet): served as an inline record -- ok, the
#           bytes in the file; then 64 KiB (too big for one record's inline data): ENOSPC, the file unchanged;
#           then a crash after a 4 KiB overwrite: recovery (once space is freed) keeps it.
#   nolog   a new process (no log can be made: its log and staging need space) overwrites 4 KiB: ENOSPC,
#           the kernel's errno for a medium without space (it was EIO), the file unchanged.
# Usage: full_writes.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_python
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_media_mount tmpfs 16M >/dev/null
dir=$DK_MNT/managed
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
prog='
import errno, os, signal, sys
d, case, filler = sys.argv[1], sys.argv[2], sys.argv[3]
fd = os.open(d + "/f", os.O_RDWR)
def fill():
    with open(filler, "wb", buffering=0) as w:
        try:
            while True: w.write(b"\0" * (1 << 20))
        except OSError as e:
            if e.errno != errno.ENOSPC: raise
        try:
            while True: w.write(b"\0" * 4096)
        except OSError as e:
            if e.errno != errno.ENOSPC: raise
    s = os.statvfs(d)
    print("free after fill: %d KiB" % (s.f_bavail * s.f_frsize // 1024))
def try_write(n, c, off):
    try:
        w = os.pwrite(fd, c * n, off)
        return "ok %d" % w
    except OSError as e:
        return errno.errorcode[e.errno]
if case == "nolog":
    print("4k", try_write(4096, b"N", 0))
else:
    os.pwrite(fd, b"L" * 100, 8192)   # the log exists now (an inline record); no staging block yet
    fill()
    print("4k", try_write(4096, b"S", 0))
    print("64k", try_write(65536, b"B", 65536))
    if case == "crash":
        print("4k2", try_write(4096, b"K", 4096))
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
'
run() { # CASE -> the program's output
    rm -rf "$dir" "$DK_MNT/filler"; mkdir -p "$dir"
    head -c 1048576 /dev/zero | tr '\0' o > "$dir/f"
    [ "$1" = nolog ] && { dd if=/dev/zero of="$DK_MNT/filler" bs=1M 2>/dev/null; dd if=/dev/zero of="$DK_MNT/filler2" bs=4k 2>/dev/null; }
    env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict python3 -c "$prog" "$dir" "$1" "$DK_MNT/filler" 2>&1
    rm -f "$DK_MNT/filler2"
}
out=$(run log)
echo "$out" | sed 's/^/  log: /'
grep -q '^4k ok 4096$' <<<"$out" || fail "log: a 4 KiB overwrite on the full medium, want ok (inline record): $out"
grep -q '^64k ENOSPC$' <<<"$out" || fail "log: a 64 KiB overwrite on the full medium, want ENOSPC: $out"
[ "$(head -c 4096 "$dir/f" | tr -d S | wc -c)" = 0 ] || fail "log: the 4 KiB overwrite is not in the file"
[ "$(tail -c +65537 "$dir/f" | head -c 65536 | tr -d o | wc -c)" = 0 ] || fail "log: the refused 64 KiB overwrite changed the file"
out=$(run crash)
echo "$out" | sed 's/^/  crash: /'
grep -q '^4k2 ok 4096$' <<<"$out" || fail "crash: the second 4 KiB overwrite, want ok: $out"
rm -f "$DK_MNT/filler"
rout=$("$cli" recover "$dir" 2>&1) || fail "crash: daxkit recover failed: $rout"
[ "$(head -c 8192 "$dir/f" | tr -d SK | wc -c)" = 0 ] && [ "$(head -c 8192 "$dir/f" | tail -c 4096 | tr -d K | wc -c)" = 0 ] ||
    fail "crash: after recovery the acknowledged overwrites are not in the file: $(head -c 8192 "$dir/f" | tr -s 'SKo')"
[ "$(stat -c %s "$dir/f")" = 1048576 ] || fail "crash: the file is $(stat -c %s "$dir/f") bytes after recovery"
out=$(run nolog)
echo "$out" | sed 's/^/  nolog: /'
grep -q '^4k ENOSPC$' <<<"$out" || fail "nolog: a 4 KiB overwrite by a process that cannot make its log, want ENOSPC: $out"
[ "$(head -c 4096 "$dir/f" | tr -d o | wc -c)" = 0 ] || fail "nolog: the refused overwrite changed the file"
[ $fails = 0 ] || exit 1
echo "full_writes.sh: strict overwrites on a full medium: small ones inline, others ENOSPC, never EIO"
