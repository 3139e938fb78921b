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
# One program run does every case of a user (root's six, nobody's suid), through the kernel and then under
# daxkit: 4 python3 start-ups, not 14 -- they were all of the test's time (0.1 s of CPU each; the test once
# took 57 s of its 60 under load, pt24 in session 24).
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
dk_need_python
dk_need_cmd setpriv
dk_managed_dir "$medium" 1G >/dev/null
mkdir -p "$DK_MNT/nobody"
chown nobody:nogroup "$DK_MNT/nobody" # the suid case's own managed directory (its .daxkit is nobody's)

# Each case prints "name mtime mode" of its file after the program ended; run once through the kernel and
# once under daxkit, the lines must match.
prog='
import os, stat, struct, sys
def one(d, case):
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
for case in sys.argv[2:]:
    one(sys.argv[1], case)
'
fails=0
for user in root nobody; do
    dir=$DK_DIR cases=(fd path at cap cappath xrm)
    run=(python3 -c "$prog")
    if [ $user = nobody ]; then # an interpreter user nobody can run (not one under /root)
        [ -x /usr/bin/python3 ] || { echo "skip suid: /usr/bin/python3 missing"; continue; }
        dir=$DK_MNT/nobody cases=(suid)
        run=(setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c "$prog")
    fi
    (cd "$dir" && rm -f "${cases[@]}")
    k=$("${run[@]}" "$dir" "${cases[@]}") || dk_fail "${cases[*]}: the program failed through the kernel"
    (cd "$dir" && rm -f "${cases[@]}")
    d=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_APPEND="$append" "${run[@]}" "$dir" "${cases[@]}") ||
        dk_fail "${cases[*]}: the program failed under daxkit"
    mapfile -t kl <<< "$k"
    mapfile -t dl <<< "$d"
    for i in "${!cases[@]}"; do
        if [ "${kl[$i]:-}" = "${dl[$i]:-}" ] && [ "${kl[$i]%% *}" = "${cases[$i]}" ]; then
            echo "ok   ${cases[$i]}: ${dl[$i]}"
        else
            echo "FAIL ${cases[$i]}: kernel '${kl[$i]:-}', daxkit '${dl[$i]:-}'"
            fails=$((fails + 1))
        fi
    done
done
[ "$fails" = 0 ] || dk_fail "$fails case(s) differ from the kernel ($medium, $append)"
echo "attr_publish.sh: $medium $append: times and modes as the program set them"
