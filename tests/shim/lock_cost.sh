#!/usr/bin/env bash
# Description: session 26 -- a POSIX lock call on a file the program maps (SQLite's -shm; the lock set no longer
# followed: upath/reclock.c untracked) costs at most MAX (default 270) user-space instructions more than libc's
# fcntl. Guards the untracked lock's own way (80a87ec: before fcntl_full's looks and frame; with 7541348's count,
# daec801's branch, 3f28598's early return of a release that publishes nothing): +227 a call as committed, +315
# with fcntl_common's untracked way removed, +381 on main 978b31a's library (session 25's start). Callgrind counts
# shim_lock_cost's lock + unlock pairs with and without the library, for N and 2N iterations (the set-up cancels
# out). Deterministic: instruction counts, not time.
# Session 27, `lock_cost.sh sqlite [posix|strict]`: the nine lock calls of a SQLite transaction without a WAL on an
# unmapped database file (its lock set followed: served_lock -> up_lock_done; strict: DAXKIT_PERSIST=flush, the
# releases with nothing to checkpoint) -- at most MAX (posix 360, strict 425) instructions a call more than
# libc's: +325 and +377 as committed; main ced5f12's library +401 and +507.
#   lock_cost.sh [mapped|sqlite] [posix|strict]   Env: N [2000; sqlite 500], MAX. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

kind=${1:-mapped} mode=${2:-posix}
case $kind:$mode in
mapped:posix) N=${N:-2000}; MAX=${MAX:-270}; calls=2; args=() ;;
sqlite:posix) N=${N:-500}; MAX=${MAX:-360}; calls=9; args=(sqlite) ;;
sqlite:strict) N=${N:-500}; MAX=${MAX:-425}; calls=9; args=(sqlite) ;;
*) echo "usage: lock_cost.sh [mapped|sqlite] [posix|strict] (not $kind $mode)" >&2; exit 1 ;;
esac
# (the lock cache off: this bounds the path of a lock call that reaches the kernel -- explicit, whatever the
# default (opt-in; on by default for an hour in session 29), and a cached call makes none)
menv=(DAXKIT_MODE="$mode" DAXKIT_LOCK_CACHE=0); [ "$mode" = strict ] && menv+=(DAXKIT_PERSIST=flush)
lib=$(dk_lib) || exit 1
prog=$(dk_test_bin shim_lock_cost) || exit 1
dk_need_cmd valgrind
dk_managed_dir tmpfs 64M >/dev/null
dir=$DK_DIR
env "${menv[@]}" LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$prog" "$dir" 20 "${args[@]}" check ||
    dk_fail "shim_lock_cost check failed"
ir() { # PRELOAD ITERS: instructions of one run
    local out
    out=$(env "${menv[@]}" ${1:+LD_PRELOAD="$1"} DAXKIT_DIR="$dir" valgrind --tool=callgrind \
        --callgrind-out-file=/dev/null "$prog" "$dir" "$2" "${args[@]}" 2>&1) ||
        { echo "$out" >&2; dk_fail "shim_lock_cost $2 failed"; }
    echo "$out" | awk '/Collected/ {print $4}'
}
a0=$(ir "" "$N"); a1=$(ir "" $((2 * N)))
b0=$(ir "$lib" "$N"); b1=$(ir "$lib" $((2 * N)))
[ -n "$a0" ] && [ -n "$a1" ] && [ -n "$b0" ] && [ -n "$b1" ] || dk_fail "no instruction counts from callgrind"
libc=$(((a1 - a0) / N)); with=$(((b1 - b0) / N)); per=$(((with - libc) / calls))
what="on a mapped file"; [ "$kind" = sqlite ] && what="of a SQLite transaction ($mode)"
echo "instructions an iteration of $calls lock calls $what: libc $libc, with the library $with: +$per a call (max $MAX)"
[ "$per" -le "$MAX" ] || dk_fail "a lock call $what costs $per instructions over libc's (max $MAX)"
exit 0
