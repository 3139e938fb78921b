#!/usr/bin/env bash
# Description: a managed file opened by a second name outside DAXKIT_DIR -- a hard link (rsync --link-dest,
# cp -al, git's object links) or a bind mount of the directory elsewhere -- is the same inode, and the process
# must see its own writes through either name (review 9, finding 28: the outside name was kernel-served, and
# a pread through it saw 0 of the 100 bytes the process had just appended through the managed name). On
# MEDIUM (ARGV[1]), for posix, sync and strict: append through the managed name, read through the link;
# append again, read again; overwrite through the link, read through the managed name; the file as another
# process without the library reads it at the end; posix-lazy: the same with lazy adoption
# (DAXKIT_ADOPT_AFTER_IOS=4: the link's descriptor is pending first). Control: an unrelated file outside
# stays the kernel's.
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
medium=${1:?usage: hardlink_outside.sh MEDIUM}
lib=$(dk_lib) || exit 1
dk_need_python
dk_managed_dir "$medium" 512M >/dev/null
dir=$DK_DIR out=$DK_MNT/outside
mkdir -p "$out"
fails=0
for variant in posix sync strict posix-lazy; do
    mode=${variant%-lazy}
    lazy=$([ $variant = posix-lazy ] && echo 4 || echo 0) # lazy adoption: the link's descriptor pending first
    rm -rf "$dir"/* "$dir"/.daxkit "$out"/*
    : > "$dir/x" && ln "$dir/x" "$out/x" && echo plain > "$out/other"
    res=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=$mode DAXKIT_PERSIST=flush DAXKIT_ADOPT_AFTER_IOS=$lazy python3 - "$dir/x" "$out/x" "$out/other" $variant <<'PY'
import os, sys
managed, link, other, mode = sys.argv[1:5]
def t(name, got, want):
    if got != want: print("FAIL: %s: %s: %r (the kernel's answer: %r)" % (mode, name, got, want))
fd = os.open(managed, os.O_RDWR | os.O_APPEND)
os.write(fd, b"a" * 100)                                  # staged: not in the kernel's file yet
fd2 = os.open(link, os.O_RDWR)
t("pread through the link after an append", os.pread(fd2, 200, 0), b"a" * 100)
os.write(fd, b"b" * 50)
t("pread through the link after a second append", os.pread(fd2, 200, 0), b"a" * 100 + b"b" * 50)
os.pwrite(fd2, b"C" * 10, 0)
t("pread through the managed name after a write through the link", os.pread(fd, 12, 0), b"C" * 10 + b"aa")
t("fstat through the link", os.fstat(fd2).st_size, 150)
o = os.open(other, os.O_RDWR); os.write(o, b"X"); os.close(o)
os.close(fd2); os.close(fd)
PY
)
    [ -n "$res" ] && { echo "$res"; fails=1; }
    want="CCCCCCCCCC$(printf 'a%.0s' $(seq 90))$(printf 'b%.0s' $(seq 50))"
    got=$(cat "$out/x")
    if [ "$got" = "$want" ] && [ "$(cat "$out/other")" = Xlain ]; then
        [ -z "$res" ] && echo "ok: $variant: the process sees its own writes through a hard link outside DAXKIT_DIR"
    else echo "FAIL: $variant: the file reads '$got' without the library (want 10 C, 90 a, 50 b), other '$(cat "$out/other")'"; fails=1; fi
done
[ $fails -eq 0 ] || dk_fail "a hard link outside DAXKIT_DIR does not show the process's own writes (above)"
echo "ok: all modes"
