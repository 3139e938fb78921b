#!/usr/bin/env bash
# Description: process crashes (SIGKILL right after writes return) on MEDIUM (ARGV[1]) in MODE (ARGV[2]:
# posix|sync) with append strategy ARGV[3] (stage|extend). Runs shim_crash self (one crash at a known point,
# file compared with the acceptable images) and shim_crash loop with 3 seeds (killed at random moments,
# acknowledged records checked), all checked without the library. Prints what it observed for posix mode
# (whether the unpublished appends were dropped or kept). Recovery runs between crash and check: the library's
# start-up for `self`, `daxkit recover` for `loop`. Further arguments (KEY=VALUE) join the library's
# environment, e.g. DAXKIT_EXTEND_SYNC=keep. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: crash.sh MEDIUM posix|sync stage|extend}
mode=${2:?mode}
append=${3:?append}
lib=$(dk_lib) || exit 1
bin=$(dk_test_bin shim_crash) || exit 1
check=$(dk_test_bin shim_check) || exit 1
dk_managed_dir "$medium" 1G >/dev/null
dir=$DK_DIR
tmp=$(mktemp -d) && dk_on_exit "rm -rf '$tmp'"
envs=(LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE="$mode" DAXKIT_APPEND="$append" DAXKIT_STAGING_BYTES=8M
      DAXKIT_STAGING_FILES=1 DK_RECOVER="$DAXKIT_BUILD/bin/daxkit" "${@:4}")
fails=0
extra_env=""
for kv in "${@:4}"; do extra_env+=" --env $kv"; done

env "${envs[@]}" "$bin" "$dir" self "$tmp/img"
rc=$?
# Recovery the way a user gets it: the next daxkit program that starts in the directory.
env "${envs[@]}" /bin/true
[ $rc -eq 137 ] || { echo "FAIL: shim_crash self exited $rc, expected death by SIGKILL (137)"; fails=$((fails + 1)); }
if [ $rc -eq 137 ]; then
    size=$(stat -c %s "$dir/crash_self")
    if "$check" image "$dir/crash_self" "$tmp/img.all" 2>/dev/null; then
        echo "observed ($mode, $append): after SIGKILL the file holds every write, unpublished appends included (size $size)"
    elif [ "$mode" = posix ] && "$check" image "$dir/crash_self" "$tmp/img.pub" 2>/dev/null; then
        echo "observed ($mode, $append): after SIGKILL the unpublished appends are gone as a whole; overwrites present (size $size)"
    else
        "$check" image "$dir/crash_self" "$tmp/img.all"
        [ "$mode" = posix ] && "$check" image "$dir/crash_self" "$tmp/img.pub"
        echo "FAIL: $mode/$append: after SIGKILL the file (size $size) is neither acceptable image" \
             "(sync: every acknowledged byte; posix: overwrites + all or none of the unpublished appends)"
        fails=$((fails + 1))
    fi
fi

for seed in 1 2 3; do
    env "${envs[@]}" "$bin" "$dir" loop $seed || {
        echo "FAIL: shim_crash loop seed $seed ($mode, $append ${*:4}) -- reproduce: tests/shim/run.sh $medium" \
             "--env DAXKIT_MODE=$mode --env DAXKIT_APPEND=$append$extra_env shim_crash loop $seed"
        fails=$((fails + 1))
    }
done
echo "crash.sh: $medium $mode $append: $fails failure(s)"
[ $fails -eq 0 ]
