#!/usr/bin/env bash
# Description: runs one tests/shim program under libdaxkit.so on a fresh medium.
#
#   run.sh MEDIUM [--size SIZE] [--env K=V]... [--plain] [--root] PROGRAM [ARGS...]
#
# Mounts MEDIUM (hugetmpfs|tmpfs|xfs|ext4) with tests/harness/media.sh, makes a managed directory on it
# (--root: the mount root itself is the managed directory),
# and runs $DAXKIT_BUILD/tests/PROGRAM DIR ARGS... with LD_PRELOAD=libdaxkit.so and DAXKIT_DIR=DIR (plus
# the --env settings). --plain runs PROGRAM without the library (it then preloads what it needs itself).
# The program's exit status is the test's: 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: run.sh MEDIUM [--size SIZE] [--env K=V]... [--plain] [--root] PROGRAM [ARGS...]}
shift
size=
plain=
root=
envs=()
while [ $# -gt 0 ]; do
    case $1 in
    --size) size=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --plain) plain=1; shift ;;
    --root) root=1; shift ;;
    *) break ;;
    esac
done
prog=${1:?PROGRAM missing}
shift
lib=$(dk_lib) || exit 1
bin=$(dk_test_bin "$prog") || exit 1
dk_test_bin shim_check >/dev/null || exit 1

dk_media_mount "$medium" $size >/dev/null
dir=$DK_MNT/managed
[ -n "$root" ] && dir=$DK_MNT
mkdir -p "$dir"
echo "run.sh: $prog on $medium ($DK_MNT)${envs[*]:+ with ${envs[*]}}"
if [ -n "$plain" ]; then
    env "${envs[@]}" DAXKIT_DIR="$dir" DAXKIT_LIB="$lib" "$bin" "$dir" "$@"
else
    env "${envs[@]}" LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$bin" "$dir" "$@"
fi
rc=$?
case $rc in
0) echo "run.sh: $prog on $medium: pass" ;;
77) echo "run.sh: $prog on $medium: skipped" ;;
*) echo "run.sh: $prog on $medium: FAIL (exit $rc)" ;;
esac
exit $rc
