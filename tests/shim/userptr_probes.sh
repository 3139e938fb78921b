#!/usr/bin/env bash
# Description: what the library's readability check (common/userptr.h) costs for structs and names off the calling
# thread's stack (session 27, review 27 #2: every served pwritev with a heap iovec array made two system calls,
# 40 -> 533 ns). shim_userptr_probes makes 1,000 rounds of 5 such calls (heap iovec array, one across a page
# boundary, a heap struct flock's lock and unlock, fstatat's "" literal); strace counts the probes (a
# FUTEX_WAIT_PRIVATE of 0x5ca1ab1e): at most MAX (default 16) -- each page once, not 5,000.
# Usage: userptr_probes.sh MEDIUM. Env: MAX. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: userptr_probes.sh MEDIUM}
MAX=${MAX:-16}
dk_need_cmd strace
lib=$(dk_lib) || exit 1
prog=$(dk_test_bin shim_userptr_probes) || exit 1
dk_managed_dir "$medium" 64M >/dev/null
dir=$DK_DIR
trace=$(mktemp)
dk_on_exit rm -f "$trace"
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" strace -f -qq -e trace=futex -o "$trace" "$prog" "$dir" ||
    dk_fail "shim_userptr_probes failed"
probes=$(grep -c 'FUTEX_WAIT_PRIVATE, 1554098974' "$trace")
echo "userptr_probes: $probes probes for 5,000 calls with structs and names off the stack (max $MAX)"
[ "$probes" -le "$MAX" ] || dk_fail "$probes probes: the check probes at every call, not each page once"
echo "ok"
