#!/usr/bin/env bash
# Description: review 21, finding 02 -- a publish point (MODE: flock, other, close) made while another thread's
# publish of the file can still be rolled back must wait for it; if it returns, a crash then cuts appends made
# before it. shim_publish_window (posix mode, stage strategy) is killed when its publish point returned inside
# the window; then `daxkit recover` and the file must hold the 8,292 appended bytes.
# Usage: publish_window.sh MEDIUM MODE. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: publish_window.sh MEDIUM MODE}
mode=${2:?MODE: flock | other | close}
cli=$(dk_cli) || exit 1
prog=$DAXKIT_BUILD/tests/shim_publish_window
[ -x "$prog" ] || dk_fail "missing $prog"
dk_managed_dir "$medium" 64M >/dev/null
dir=$DK_DIR
out=$(DAXKIT_TEST_CRASH=raise:10:publish.before_clear:1 "$cli" run --mode posix --append stage --dir "$dir" -- \
      "$prog" "$dir" "$mode" 2>&1)
rc=$?
echo "$out"
[ $rc = 77 ] && exit 77
"$cli" recover "$dir" > /dev/null 2>&1
size=$(stat -c %s "$dir/f")
echo "publish_window: $mode: program exit $rc, size after recovery $size (8292 appended before the publish point)"
[ "$size" = 8292 ] || dk_fail "$mode: the 8,292 bytes appended before the publish point are gone after the crash ($size left)"
[ $rc = 0 ] || dk_fail "$mode: the program ended with $rc"
echo "ok: $mode"
