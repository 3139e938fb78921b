#!/usr/bin/env bash
# Description: a directory renamed to a name the process looked at before has its area looked at again
# (session 18: the recovery scope's directories are remembered by name -- a set of name hashes, and the
# last directory opened through a descriptor -- and the names moved by the program's own rename/rmdir forget
# them). P1, run with the root /data/moved, leaves a record for /data/moved/f and is killed (strict: an
# overwrite of 'B' logged, not applied; atomic: a DAXKIT_ATOMIC journal fsync of 'B' committed, not applied).
# P2, run with the root /data, first opens /data/sub/g (sub has no area: remembered as looked at), then renames
# sub away and moved to sub, and opens sub/f: that open must replay P1's record (P2 reads 'B') before P2
# writes 'C' and fsyncs, and a start with the root /data/sub afterwards must leave 'C'. Before session 18,
# P2's second open found sub in the set and read 'A', and that last start replayed 'B' over the acknowledged
# 'C'. How P2 names the files:
#   dirfd   "sub/g", "sub/f" relative to a descriptor of /data (tar xf's opens: the last-directory cache)
#   abs     "/data/sub/g", "/data/sub/f" (the set of path hashes)
#   cwd     "sub/g", "sub/f" relative to the working directory /data
#   xchg    as dirfd, the two directories exchanged by renameat2(RENAME_EXCHANGE)
#   bind    as dirfd, /data/moved bind-mounted on /data/sub (mount(2); unmounted by P2 before it exits)
# Usage: recover_moved.sh (huge tmpfs; test builds: crash points). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_python
lib=$(dk_lib) || exit 1
dk_media_mount hugetmpfs 256M >/dev/null
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
content() { tr -s 'ABC' < "$1"; }
p1_prog='
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR); os.pwrite(fd, b"B" * 8192, 0); os.fsync(fd); os.close(fd)'
# argv: root, how. Opens sub/g, moves sub away and moved in, then reads sub/f, writes C and fsyncs.
p2_prog='
import ctypes, os, sys
root, how = sys.argv[1], sys.argv[2]
dfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY) if how in ("dirfd", "xchg", "bind") else None
if how == "cwd": os.chdir(root)
name = lambda n: root + "/" + n if how == "abs" else n
os.close(os.open(name("sub/g"), os.O_RDONLY, dir_fd=dfd))
libc = ctypes.CDLL(None, use_errno=True)
if how == "xchg":
    if libc.renameat2(-100, (root + "/sub").encode(), -100, (root + "/moved").encode(), 2) != 0:
        sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
elif how == "bind":
    if libc.mount((root + "/moved").encode(), (root + "/sub").encode(), None, 4096, None) != 0:  # MS_BIND
        print("skip: mount --bind: " + os.strerror(ctypes.get_errno())); sys.exit(0)
else:
    os.rename(root + "/sub", root + "/old"); os.rename(root + "/moved", root + "/sub")
fd = os.open(name("sub/f"), os.O_RDWR, dir_fd=dfd); print("read " + os.pread(fd, 1, 0).decode())
os.pwrite(fd, b"C" * 8192, 0); os.fsync(fd); os.close(fd)
if how == "bind" and libc.umount2((root + "/sub").encode(), 0) != 0: sys.exit("umount: " + os.strerror(ctypes.get_errno()))'
for variant in strict:dirfd atomic:dirfd strict:abs strict:cwd strict:xchg strict:bind; do
    how=${variant%%:*} name=${variant#*:}
    M=$DK_MNT/${variant/:/-}
    mkdir -p "$M/sub" "$M/moved"
    : > "$M/sub/g"
    head -c 8192 /dev/zero | tr '\0' A > "$M/moved/f"
    if [ $how = strict ]; then
        env=(DAXKIT_MODE=strict)
        crash=strict.write.logged:1
    else
        env=(DAXKIT_ATOMIC='*' DAXKIT_ATOMIC_POLICY=journal DAXKIT_ATOMIC_PACE=0 DAXKIT_PERSIST=flush)
        crash=atomic.sync.after_epoch:1
    fi
    (env LD_PRELOAD="$lib" DAXKIT_DIR="$M/moved" "${env[@]}" DAXKIT_TEST_CRASH=$crash python3 -c "$p1_prog" \
        "$M/moved/f"; :) >/dev/null 2>&1
    [ "$(content "$M/moved/f")" = A ] ||
        { fail "$variant: after P1's crash the file holds $(content "$M/moved/f"), want A (crash points compiled out?)"; continue; }
    fails0=$fails
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$M" "${env[@]}" python3 -c "$p2_prog" "$M" "$name" 2>&1)
    mountpoint -q "$M/sub" && umount -l "$M/sub" # P2 failed before its umount
    grep -q '^skip: ' <<<"$out" && { echo "note: $variant not run ($out)"; continue; }
    grep -q '^read B$' <<<"$out" ||
        fail "$variant: P2 (root $M) read $out after moving $M/moved to $M/sub; want 'read B' (P1's record replayed first)"
    p1dir=$M/sub
    [ "$name" = bind ] && p1dir=$M/moved # unmounted again: P1's directory where it was
    env LD_PRELOAD="$lib" DAXKIT_DIR="$p1dir" "${env[@]}" /bin/true
    got=$(content "$p1dir/f")
    [ "$got" = C ] || fail "$variant: a start with P1's root (now $p1dir) after P2's acknowledged C left $got, want C"
    [ $fails = "$fails0" ] && echo "ok: $variant: P2 saw B through the moved directory; C stands"
done
[ $fails -eq 0 ] || exit 1
echo PASS
