#!/usr/bin/env bash
# Description: session 24 -- a pass-through call on a descriptor the library does not manage (a socket, a
# device, a file outside the managed directories) costs at most MAX (default 32) user-space instructions more
# than libc's (shim.h: dk_pt_none; before, ~155 a call: two up_serving looks with their call-record stores,
# dk_pt_begin(_change), the vacated and pending looks, pthread_testcancel). Session 26: 36 -> 27 a call (the
# library's globals read RIP-relative, dk.h DK_HIDDEN; libc's table without the ready look, libc.h
# DK_REAL_ON; 128-byte entries), MAX 60 -> 32. Callgrind counts shim_pt_cost's
# 9 calls an iteration with and without the library, for N and 2N iterations (the set-up cancels out).
# Deterministic: instruction counts, not time.
#   pt_cost.sh [threads]      Env: N [2000], MAX [32]. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

mode=${1:-}
N=${N:-2000}; MAX=${MAX:-32}; calls=9
lib=$(dk_lib) || exit 1
prog=$(dk_test_bin shim_pt_cost) || exit 1
dk_need_cmd valgrind
dk_managed_dir tmpfs 64M >/dev/null
dir=$DK_DIR
ir() { # PRELOAD ITERS: instructions of one run
    local out
    out=$(env ${1:+LD_PRELOAD="$1"} DAXKIT_DIR="$dir" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        "$prog" "$2" $mode 2>&1) || { echo "$out" >&2; dk_fail "shim_pt_cost $2 $mode failed"; }
    echo "$out" | awk '/Collected/ {print $4}'
}
a0=$(ir "" "$N"); a1=$(ir "" $((2 * N)))
b0=$(ir "$lib" "$N"); b1=$(ir "$lib" $((2 * N)))
[ -n "$a0" ] && [ -n "$a1" ] && [ -n "$b0" ] && [ -n "$b1" ] || dk_fail "no instruction counts from callgrind"
libc=$(((a1 - a0) / N)); with=$(((b1 - b0) / N)); per=$(((with - libc) / calls))
echo "instructions an iteration of $calls calls: libc $libc, with the library $with: +$per a call (max $MAX)${mode:+, $mode}"
[ "$per" -le "$MAX" ] || dk_fail "a pass-through call costs $per instructions over libc's (max $MAX)"
exit 0
