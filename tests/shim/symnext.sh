#!/usr/bin/env bash
# Description: shim_symnext under libdaxkit.so alone, then with a second library preloaded after it that
# redefines fsync and getpid: the library's own RTLD_NEXT lookup gives dlsym's answer for every name of every
# object after it, the second library's definitions first. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

lib=$(dk_lib) || exit 1
bin=$(dk_test_bin shim_symnext) || exit 1
next=$(dk_test_bin libshim_symnext_next.so) || exit 1
dk_managed_dir tmpfs >/dev/null
dir=$DK_DIR
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" "$bin" "$dir"; rc=$?
[ $rc = 0 ] || exit $rc
env LD_PRELOAD="$lib $next" DAXKIT_DIR="$dir" "$bin" "$dir" libshim_symnext_next.so
