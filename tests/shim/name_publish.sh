#!/usr/bin/env bash
# Description: a name given to a file that is still open -- the "write the whole file, then name it" idiom --
# names the complete file (review 9, finding 26; MEDIUM = ARGV[1]). Under daxkit the appends are staged
# until a publish point; rename and linkat were none, so another process found the name on an empty file
# (kernel 53 bytes, daxkit 0). Each case writes 53 bytes to a file it keeps open, names it, then tells a
# process forked before (by a pipe) to stat the name without the library:
#   linkat-proc   O_TMPFILE + linkat(/proc/self/fd/N, name, AT_SYMLINK_FOLLOW)
#   linkat-empty  O_TMPFILE + linkat(fd, "", name, AT_EMPTY_PATH)
#   link          a temporary name + link(tmp, name)
#   rename        a temporary name + rename(tmp, name)
#   renameat2     a temporary name + renameat2(dirfd, tmp, dirfd, name, 0)
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: name_publish.sh MEDIUM}
lib=$(dk_lib) || exit 1
dk_need_root
dk_need_python
dk_need_cmd stat
dk_managed_dir "$medium" 1G >/dev/null
dir=$DK_DIR

# The calls go through ctypes with the global namespace (CDLL(None)): the preloaded library's symbols.
prog='
import ctypes, os, sys
d, case = sys.argv[1], sys.argv[2]
c = ctypes.CDLL(None, use_errno=True)
name, tmp = os.path.join(d, "published"), os.path.join(d, ".tmp-" + case)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w); os.read(r, 1)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    os.execve("/usr/bin/stat", ["stat", "-c", "%s", name], env)
os.close(r)
if case.startswith("linkat"):
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o644)
else:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"the whole content, visible atomically under its name\n")
AT_FDCWD, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = -100, 0x400, 0x1000
if case == "linkat-proc":
    rc = c.linkat(AT_FDCWD, ("/proc/self/fd/%d" % fd).encode(), AT_FDCWD, name.encode(), AT_SYMLINK_FOLLOW)
elif case == "linkat-empty":
    rc = c.linkat(fd, b"", AT_FDCWD, name.encode(), AT_EMPTY_PATH)
elif case == "link":
    rc = c.link(tmp.encode(), name.encode())
elif case == "rename":
    rc = c.rename(tmp.encode(), name.encode())
else:
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    rc = c.renameat2(dfd, os.path.basename(tmp).encode(), dfd, b"published", 0)
if rc != 0:
    sys.exit("%s: %s" % (case, os.strerror(ctypes.get_errno())))
sys.stdout.flush()
os.write(w, b"x")
_, st = os.waitpid(pid, 0)
os.close(fd)
sys.exit(1 if st else 0)
'
fails=0
for case in linkat-proc linkat-empty link rename renameat2; do
    rm -rf "${dir:?}"/* "$dir/.tmp-"*
    k=$(python3 -c "$prog" "$dir" "$case") || dk_fail "$case: the program failed through the kernel"
    rm -rf "${dir:?}"/* "$dir/.tmp-"*
    d=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" python3 -c "$prog" "$dir" "$case") ||
        dk_fail "$case: the program failed under daxkit"
    if [ "$k" = 53 ] && [ "$k" = "$d" ]; then
        echo "ok   $case: another process sees $d bytes under the name"
    else
        echo "FAIL $case: another process sees kernel '$k', daxkit '$d' bytes under the name"
        fails=$((fails + 1))
    fi
done
[ "$fails" = 0 ] || dk_fail "$fails case(s) name an incomplete file ($medium)"
echo "name_publish.sh: $medium: a name given to an open file names its whole content"
