#!/usr/bin/env bash
# Description: times, mode and owner a program sets while its appends are still staged stay as it set them
# (MEDIUM = ARGV[1]; ARGV[2]: append strategy, default stage). Through the kernel a write is in the file
# before the program's futimens; under daxkit it is published later (at close), and that publish -- a
# pwrite, or the cut of an extension -- sets mtime again and, for a caller without CAP_FSETID, clears the
# set-user-ID bit. tar xf (write, futimens, fchown, fchmod, close) dated every extracted file "now". Cases, each a fresh file with appends not yet published when the attribute is set:
#   fd    write + futimens(fd) + close                -> mtime as set
#   path  write + utimensat(path) + close (fd open)   -> mtime as set
#   at    write + utimensat(dirfd, name) + close      -> mtime as set
#   suid  as user nobody: write + fchmod(04755) + close -> the set-user-ID bit kept (the kernel keeps it:
#         the bit is cleared by writes *after* it is set, and there are none)
#   cap   write + fsetxattr(fd, security.capability) + close -> the file capability kept (every write
#         removes it, also root's: review 9, finding 6; a program setting it by descriptor before close,
#         as rpm and libcap's cap_set_fd users do)
#   cappath  write + setxattr(path, security.capability) + close (fd open) -> kept
#   xrm   write + fsetxattr(user.a) + fremovexattr(user.a) + fsetxattr(security.capability) + close -> kept
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: attr_publish.sh MEDIUM [stage|extend]}
append=${2:-stage}
lib=$(dk_lib) || exit 1
dk_need_root
dk_need_cmd python3 setpriv
dk_managed_dir "$medium" 1G >/dev/null
mkdir -p "$DK_MNT/nobody"
chown nobody:nogroup "$DK_MNT/nobody" # the suid case's own managed directory (its .daxkit is nobody's)

# Each case prints "name mtime mode" of its file after the program ended; run once through the kernel and
# once under daxkit, the lines must match.
prog='
import os, stat, struct, sys
d, case = sys.argv[1], sys.argv[2]
p = os.path.join(d, case)
t = 1234567890
fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"x" * 10000)
os.write(fd, b"y" * 3000)
if case == "fd":
    os.utime(fd, (t, t))                        # futimens
elif case == "path":
    os.utime(p, (t, t))                         # utimensat(AT_FDCWD, path)
elif case == "at":
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    os.utime(case, (t, t), dir_fd=dfd)          # utimensat(dirfd, name)
    os.close(dfd)
elif case == "suid":
    os.chmod(fd, 0o4755)                        # fchmod
cap = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)   # VFS_CAP_REVISION_2 | effective, CAP_NET_RAW
if case == "cap":
    os.setxattr(fd, "security.capability", cap) # fsetxattr
elif case == "cappath":
    os.setxattr(p, "security.capability", cap)  # setxattr
elif case == "xrm":
    os.setxattr(fd, "user.a", b"1")             # fsetxattr
    os.write(fd, b"z" * 100)
    os.removexattr(fd, "user.a")                # fremovexattr
    os.setxattr(fd, "security.capability", cap)
os.close(fd)
st = os.stat(p)
try:
    has = os.getxattr(p, "security.capability").hex()
except OSError as e:
    has = "none"
times = case in ("fd", "path", "at")
print(case, int(st.st_mtime) if times else "-", oct(stat.S_IMODE(st.st_mode)), st.st_size, has)
'
fails=0
for case in fd path at suid cap cappath xrm; do
    dir=$DK_DIR
    run=(python3 -c "$prog")
    if [ "$case" = suid ]; then # an interpreter user nobody can run (not one under /root)
        [ -x /usr/bin/python3 ] || { echo "skip suid: /usr/bin/python3 missing"; continue; }
        dir=$DK_MNT/nobody
        run=(setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c "$prog")
    fi
    rm -f "$dir/$case"
    k=$("${run[@]}" "$dir" "$case") || dk_fail "$case: the program failed through the kernel"
    rm -f "$dir/$case"
    d=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_APPEND="$append" "${run[@]}" "$dir" "$case") ||
        dk_fail "$case: the program failed under daxkit"
    if [ "$k" = "$d" ]; then
        echo "ok   $case: $d"
    else
        echo "FAIL $case: kernel '$k', daxkit '$d'"
        fails=$((fails + 1))
    fi
done
[ "$fails" = 0 ] || dk_fail "$fails case(s) differ from the kernel ($medium, $append)"
echo "attr_publish.sh: $medium $append: times and modes as the program set them"
