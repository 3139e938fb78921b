#!/usr/bin/env bash
# Description: errno after successful calls, with the .daxkit area left by an earlier process (review 9,
# finding 9). `shim_errno DIR kept` makes ~190 calls on managed files, each with errno = 4242 before and
# checked after; it runs twice on one managed directory in every variant below. The first run of a variant
# makes the area; the second finds it, and the staging pool's mkdirat (EEXIST), the reclaim's flock of live
# owners' locks and its fstatat probes, the size records and strict's log (made at the first write, fsync
# or create) set errno after a successful write / fsync / open(O_CREAT|O_TRUNC) until they saved it.
#
#   errno_twice.sh MEDIUM        (hugetmpfs | tmpfs | xfs)
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: errno_twice.sh MEDIUM}
lib=$(dk_lib) || exit 1
bin=$(dk_test_bin shim_errno) || exit 1
dk_media_mount "$medium" >/dev/null

variants=(
    ""
    "DAXKIT_MODE=sync"
    "DAXKIT_MODE=strict"
    "DAXKIT_MODE=strict DAXKIT_PERSIST=flush DAXKIT_STRICT_APPLY=checkpoint"
    "DAXKIT_ATOMIC=*"
    "DAXKIT_ATOMIC_MMAP=*"
    "DAXKIT_ADOPT_AFTER_IOS=4"
    "DAXKIT_APPEND=auto"
    "DAXKIT_APPEND=extend"
    "DAXKIT_STAGE_HEAP_BYTES=0"
)
set -f # DAXKIT_ATOMIC=* is a word, not a pattern
fails=0
n=0
for v in "${variants[@]}"; do
    n=$((n + 1))
    dir=$DK_MNT/v$n
    mkdir -p "$dir"
    for run in 1 2; do
        # shellcheck disable=SC2086 # $v is a list of K=V words
        out=$(env $v LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$bin" "$dir" kept 2>&1)
        rc=$?
        if [ $rc = 0 ]; then
            echo "ok   ${v:-default}, run $run: ${out##*$'\n'}"
        else
            echo "FAIL ${v:-default}, run $run (exit $rc):"
            echo "$out" | sed 's/^/     /'
            fails=$((fails + 1))
        fi
    done
done
[ "$fails" = 0 ] || dk_fail "$fails run(s) changed errno after a successful call ($medium)"
echo "errno_twice.sh: $medium: errno kept in ${#variants[@]} variants, each run twice on one directory"
