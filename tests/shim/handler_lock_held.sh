#!/usr/bin/env bash
# Description: sessions 22-23 -- a signal handler's publish point (fcntl lock or unlock, lseek SEEK_DATA or
# SEEK_HOLE, fchmod, close of a dup or of the descriptor itself) on a managed file whose mutex its thread holds (shim_handler_lock_held.c) returns
# instead of waiting for its own thread forever; the file keeps its bytes (checked again without the library).
# Usage: handler_lock_held.sh MEDIUM CALL (lock | unlock | seek_data | seek_hole | fchmod | close | close_same).
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: handler_lock_held.sh MEDIUM MODE}
mode=${2:?CALL: lock | unlock | seek_data | seek_hole | fchmod | close | close_same}
nth=1 size_want=8392
[ "$mode" = close_same ] && nth=2 size_want=300 # its unlock is the file's second publish
cli=$(dk_cli) || exit 1
prog=$(dk_test_bin shim_handler_lock_held) || exit 1
dk_managed_dir "$medium" 64M >/dev/null
dir=$DK_DIR
out=$(DAXKIT_TEST_CRASH=raise:10:publish.before_clear:$nth timeout 20 "$cli" run --mode posix --append stage \
      --dir "$dir" -- "$prog" "$dir" "$mode" 2>&1)
rc=$?
echo "$out"
[ $rc = 77 ] && exit 77
[ $rc = 124 ] && dk_fail "$mode: the program hung (20 s): the handler's call waited for its own thread"
[ $rc = 0 ] || dk_fail "$mode: the program ended with $rc"
size=$(stat -c %s "$dir/f")
[ "$size" = "$size_want" ] || dk_fail "$mode: the file holds $size bytes without the library ($size_want written)"
echo "ok: $mode"
