#!/usr/bin/env bash
# Description: the stats directory (DAXKIT_STATS_DIR, /dev/shm/daxkit by default) is made with mode 01777
# exactly, whatever the umask of the process that makes it, so that every user's daxkit processes can keep
# their stats.PID there (review 11, finding 19: mkdir's 01777 minus the umask 022 gave drwxr-xr-t, and a
# process of another user had no stats file). The program's umask stays as it was. Needs root (setpriv to
# nobody). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
dk_need_cmd setpriv
lib=$(dk_lib) || exit 1
dk_managed_dir tmpfs >/dev/null
chmod 755 "$DK_MNT"
dir=$DK_DIR
chmod 1777 "$dir"
fails=0
for um in 022 077 002; do
    S=$DK_MNT/stats-$um
    # (a managed file opened: the stats file, and so its directory, is made at a process's first one)
    got=$(umask $um && env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_STATS=1 DAXKIT_STATS_DIR="$S" \
        sh -c 'umask; : > "$0/u$1.$$"' "$dir" $um)
    mode=$(stat -c %a "$S" 2>/dev/null)
    echo "umask $um: $S made with mode ${mode:-none} (want 1777); the program's umask after: $got"
    [ "$mode" = 1777 ] || { echo "FAIL: umask $um: mode ${mode:-none}"; fails=$((fails + 1)); }
    [ "$got" = 0$um ] || { echo "FAIL: umask $um: the program saw umask $got"; fails=$((fails + 1)); }
    # a process of another user keeps its own stats file there ($$ of sh -c: the process under the library)
    if setpriv --reuid=nobody --regid=nogroup --clear-groups env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_STATS=1 \
        DAXKIT_STATS_DIR="$S" sh -c ': > "$1/n$2.$$"; test -e "$0/stats.$$"' "$S" "$dir" $um; then
        echo "umask $um: nobody's process has its stats file in $S"
    else
        echo "FAIL: umask $um: nobody's process has no stats file in $S"; fails=$((fails + 1))
    fi
done
# a directory that exists is left as it is (an administrator's choice)
S=$DK_MNT/stats-given
mkdir -m 700 "$S"
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_STATS=1 DAXKIT_STATS_DIR="$S" true
mode=$(stat -c %a "$S")
[ "$mode" = 700 ] || { echo "FAIL: an existing 0700 stats directory was changed to $mode"; fails=$((fails + 1)); }
[ "$fails" = 0 ] || dk_fail "$fails check(s) failed"
echo "stats_dir_mode.sh: the stats directory is made 01777 under every umask; other users' processes use it"
