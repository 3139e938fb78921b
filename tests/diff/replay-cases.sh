#!/usr/bin/env bash
# Description: replays shrunk op lists (tests/diff/cases/*.ops) as fixed regression cases: each once on the
# kernel path and once under libdaxkit.so in fresh directories of one medium; the two logs must be equal.
#
#   replay-cases.sh MEDIUM MODE APPEND [--env K=V]... FILE...
#
# MEDIUM: a kind of tests/harness/media.sh (dir: $DK_MEDIA_DIR, e.g. a DAX mount in the FS-DAX guest);
# MODE: posix|sync|strict; APPEND: stage|extend. The seed of each run is the one named on the file's first
# line ("seed N"), 1 when none. Exit 0 every list agrees, 1 one differs (its first differences printed), 77
# skipped (reason printed).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: replay-cases.sh MEDIUM MODE APPEND [--env K=V]... FILE...}
mode=${2:?MODE missing}
append=${3:?APPEND missing}
shift 3
envs=()
while [ $# -gt 0 ] && [ "$1" = --env ]; do
    envs+=("$2")
    shift 2
done
[ $# -gt 0 ] || dk_fail "no op list given"
dk_need_root
lib=$(dk_lib) || exit 1
dt=$(dk_test_bin dk_difftest) || exit 1
dk_media_mount "$medium" >/dev/null

failed=0 n=0
for ops in "$@"; do
    [ -r "$ops" ] || dk_fail "op list $ops not readable"
    n=$((n + 1))
    seed=$(head -1 "$ops" | grep -oE 'seed [0-9]+' | grep -oE '[0-9]+' || true)
    seed=${seed:-1}
    k=$DK_MNT/kernel.$n m=$DK_MNT/managed.$n
    mkdir -p "$k" "$m"
    "$dt" --dir "$k" --seed "$seed" --replay "$ops" >"$DK_MNT/kernel.$n.log" 2>&1
    env "${envs[@]}" LD_PRELOAD="$lib" DAXKIT_DIR="$m" DAXKIT_MODE="$mode" DAXKIT_APPEND="$append" \
        "$dt" --dir "$m" --seed "$seed" --replay "$ops" >"$DK_MNT/daxkit.$n.log" 2>&1
    name=$(basename "$ops")
    if diff -u "$DK_MNT/kernel.$n.log" "$DK_MNT/daxkit.$n.log" >"$DK_MNT/diff.$n"; then
        echo "replay-cases: $name ($medium $mode $append, seed $seed): same as the kernel"
    else
        echo "FAIL: $name ($medium $mode $append, seed $seed) differs from the kernel:"
        grep -E '^[-+][^-+]' "$DK_MNT/diff.$n" | head -12 | sed 's/^/    /'
        failed=$((failed + 1))
    fi
done
echo "replay-cases: $((n - failed)) of $n op list(s) agree ($medium $mode $append${envs[*]:+ ${envs[*]}})"
[ $failed = 0 ]
