#!/usr/bin/env bash
# Description: session 23 -- glibc's own open inside the library's free() takes no number of the program's
# (shim_heap_free_window.c says how). strace holds glibc's open of /proc/sys/vm/overcommit_memory for 400 ms
# after the kernel gave it its number, so the program's fstat and open meet it every run.
# Usage: heap_free_window.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

lib=$(dk_lib) || exit 1
prog=$(dk_test_bin shim_heap_free_window) || exit 1
dk_need_cmd strace
dk_managed_dir tmpfs 64M >/dev/null
dir=$DK_DIR
trace=$DK_MNT/trace
strace -f -o "$trace" -P /proc/sys/vm/overcommit_memory -e trace=openat -e inject=openat:delay_exit=400000 \
    env GLIBC_TUNABLES=glibc.malloc.tcache_count=0 LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=posix DAXKIT_APPEND=stage "$prog" "$dir"
rc=$?
cat "$trace"
exit $rc
