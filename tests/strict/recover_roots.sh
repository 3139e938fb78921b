#!/usr/bin/env bash
# Description: recovery does not depend on the roots a program is given (review 10, finding 18). P1 leaves a
# record for /data/sub/f in the area of its root and is killed:
#   strict   a strict overwrite of 'B' logged, not applied (crash point strict.write.logged);
#   atomic   a DAXKIT_ATOMIC (journal) fsync of 'B' committed, not applied (crash point atomic.sync.after_epoch).
# above: P1 ran with the wider root /data. P2, run with the narrower root /data/sub, starts: its start must
#   replay P1's record ('B') before it writes 'C' and fsyncs; a start with the wider root afterwards must
#   leave 'C' (before: P2's start looked at /data/sub/.daxkit only, and that last start replayed P1's 'B'
#   over P2's acknowledged 'C').
# below: P1 ran with the narrower root /data/sub. P2, run with the wider root /data, opens f: that first
#   open must replay P1's record (P2 reads 'B') before P2 writes 'C' and fsyncs; a start with the narrower
#   root afterwards must leave 'C' (before: P2 read 'A', and that start replayed 'B' over 'C').
#   below-relative: the same, P2 opening f as "sub/f" from /data (a name relative to the working directory).
#   below-dirfd: P2 opens f as "sub/f" relative to a descriptor of /data (tar xf's opens; the directories of
#   such a name are remembered by the descriptor's verdict and the name, not read from the kernel per file).
#   below-dirfd-reused: first "sub/f" relative to a descriptor of /data/other (other/sub has no area), closed;
#   then a descriptor of /data with the same number: its "sub/f" must still have /data/sub's area looked at.
#   below-dirfd-link: "lnk/f" relative to a descriptor of /data, lnk -> sub (a symbolic link on the way).
#   below-dirfd-chain: rsync's sender -- "top" opened relative to a descriptor of /data (its areas looked at),
#   then "sub" opened as a directory relative to it, and "f" relative to that: the area of /data/sub is
#   looked at when "sub" is opened (the new descriptor counts as looked at, no readlink of f).
#   below-dirfd-plain: the chain with "sub" opened without O_DIRECTORY (tar cf opens each directory so, then
#   fdopendir): the open's own fstat shows a directory and it is looked at as the chain's (session 13).
#   below-dirfd-plainnf: the same with O_NOFOLLOW and the program's fstat of "sub" (tar cf's way: a plain child
#   of a looked-at directory counts as looked at when it has no area -- this one has: looked at; session 29).
#   below-dirabs: "f" relative to a descriptor of /data/sub opened by that absolute name (tar xf -C DIR: its
#   directories looked at by the name at that open, no readlink of the first file; session 29).
# lazy: P1 strict as above; P2 in posix mode with lazy adoption (DAXKIT_ADOPT_AFTER_IOS=4), whose first
#   reads pass to the kernel unadopted: the open itself must look at the areas by its name (session 14:
#   before, only the adoption did -- after the reads had passed -- and P2 read 'A').
# Usage: recover_roots.sh (huge tmpfs; test builds: crash points). Exit 0 pass, 1 fail, 77 skip.
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
# argv: path, letter, and how P2 names it: "cwd:DIR" (relative to the working directory DIR), or
# "dirfd:DIR:NAME[:OTHER]" (NAME relative to a descriptor of DIR; with OTHER, NAME relative to a descriptor of
# OTHER is opened and closed first, and that descriptor closed: DIR's gets its number), or
# "chain:DIR:FIRST:SUB:NAME" (FIRST opened and closed relative to a descriptor of DIR, then SUB as a directory
# relative to it, and NAME relative to that), or "plain:DIR:FIRST:SUB:NAME" (the same, SUB opened without
# O_DIRECTORY).
write_prog='
import os, sys
path = sys.argv[1]; how = sys.argv[3].split(":") if len(sys.argv) > 3 else [""]
if how[0] == "cwd": os.chdir(how[1]); path = os.path.relpath(path)   # a name relative to the cwd
dfd = None
if how[0] == "dirfd":
    path = how[2]
    if len(how) > 3:
        o = os.open(how[3], os.O_RDONLY); os.close(os.open(path, os.O_RDONLY, dir_fd=o)); os.close(o)
    dfd = os.open(how[1], os.O_RDONLY | os.O_DIRECTORY)
if how[0] == "dirabs": dfd = os.open(how[1], os.O_RDONLY | os.O_DIRECTORY); path = how[2]
if how[0] in ("chain", "plain", "plainnf"):
    top = os.open(how[1], os.O_RDONLY | os.O_DIRECTORY); os.close(os.open(how[2], os.O_RDONLY, dir_fd=top))
    dflags = os.O_RDONLY | (os.O_DIRECTORY if how[0] == "chain" else 0) | (os.O_NOFOLLOW if how[0] == "plainnf" else 0)
    dfd = os.open(how[3], dflags, dir_fd=top); path = how[4]
    if how[0] == "plainnf": os.fstat(dfd)
fd = os.open(path, os.O_RDWR, dir_fd=dfd); print("read " + os.pread(fd, 1, 0).decode())
os.pwrite(fd, sys.argv[2].encode() * 8192, 0); os.fsync(fd); os.close(fd)'
for variant in strict:above atomic:above strict:below atomic:below strict:below-relative strict:below-dirfd \
    atomic:below-dirfd strict:below-dirfd-reused strict:below-dirfd-link strict:below-dirfd-chain atomic:below-dirfd-chain strict:below-dirfd-plain \
    lazy:below lazy:below-dirfd lazy:below-dirfd-chain strict:below-dirabs lazy:below-dirabs lazy:below-dirfd-plainnf; do
    how=${variant%%:*} dir=${variant#*:} name=
    M=$DK_MNT/${variant/:/-}
    case $dir in
    below-relative) name=cwd:$M ;;
    below-dirfd) name=dirfd:$M:sub/f ;;
    below-dirfd-reused) name=dirfd:$M:sub/f:$M/other ;;
    below-dirfd-link) name=dirfd:$M:lnk/f ;;
    below-dirfd-chain) name=chain:$M:top:sub:f ;;
    below-dirfd-plain) name=plain:$M:top:sub:f ;;
    below-dirfd-plainnf) name=plainnf:$M:top:sub:f ;;
    below-dirabs) name=dirabs:$M/sub:f ;;
    esac
    [ "$name" ] && dir=below
    p1root=$M p2root=$M/sub
    [ $dir = below ] && p1root=$M/sub p2root=$M
    mkdir -p "$M/sub"
    mkdir -p "$M/other/sub" && : > "$M/other/sub/f" && : > "$M/top"
    ln -sfn sub "$M/lnk"
    head -c 8192 /dev/zero | tr '\0' A > "$M/sub/f"
    p2env=()
    if [ $how = strict ] || [ $how = lazy ]; then
        env=(DAXKIT_MODE=strict)
        crash=strict.write.logged:1
        [ $how = lazy ] && p2env=(DAXKIT_MODE=posix DAXKIT_ADOPT_AFTER_IOS=4)
    else
        env=(DAXKIT_ATOMIC='*' DAXKIT_ATOMIC_POLICY=journal DAXKIT_ATOMIC_PACE=0 DAXKIT_PERSIST=flush)
        crash=atomic.sync.after_epoch:1
    fi
    env LD_PRELOAD="$lib" DAXKIT_DIR="$p1root" "${env[@]}" DAXKIT_TEST_CRASH=$crash python3 -c "$write_prog" "$M/sub/f" B \
        >/dev/null 2>&1
    [ "$(content "$M/sub/f")" = A ] ||
        { fail "$variant: after P1's crash the file holds $(content "$M/sub/f"), want A (crash points compiled out?)"; continue; }
    fails0=$fails
    if [ $dir = above ]; then # P2's start (root below P1's) must replay P1's record
        env LD_PRELOAD="$lib" DAXKIT_DIR="$p2root" "${env[@]}" /bin/true
        got=$(content "$M/sub/f")
        [ "$got" = B ] || fail "$variant: a start with the narrower root $p2root (P2's) left $got, want B (P1's record replayed)"
    fi
    [ ${#p2env[@]} -gt 0 ] || p2env=("${env[@]}")
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$p2root" "${p2env[@]}" python3 -c "$write_prog" "$M/sub/f" C $name 2>&1)
    grep -q '^read B$' <<<"$out" || fail "$variant: P2 (root $p2root) read before its write: $out; want 'read B' (P1's record replayed first)"
    env LD_PRELOAD="$lib" DAXKIT_DIR="$p1root" "${env[@]}" /bin/true
    got2=$(content "$M/sub/f")
    [ "$got2" = C ] || fail "$variant: a start with P1's root $p1root after P2's acknowledged C left $got2, want C"
    [ $fails = "$fails0" ] && echo "ok: $variant: P2 (root $p2root) saw B before writing; C stands after a start with root $p1root"
done
[ $fails -eq 0 ] || exit 1
echo PASS
