#!/usr/bin/env bash
# Description: session 24 -- glibc's own open inside the library's strerror takes no number of the program's
# (shim_strerror_window.c says how). strace holds glibc's open of the French libc.mo for 400 ms after the kernel
# gave it its number, so the program's fstat and open meet it every run.
# Usage: strerror_window.sh. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

lib=$(dk_lib) || exit 1
prog=$(dk_test_bin shim_strerror_window) || exit 1
dk_need_cmd strace
catalog=/usr/share/locale/fr/LC_MESSAGES/libc.mo
[ -r "$catalog" ] || dk_skip "no $catalog (package libc-l10n): glibc has no French messages to load"
dk_managed_dir tmpfs 2M >/dev/null # too small for a staging file: the first append's message (stage.c)
dir=$DK_DIR
trace=$DK_MNT/trace
strace -f -o "$trace" -P "$catalog" -e trace=openat -e inject=openat:delay_exit=400000 \
    env LC_ALL=C.UTF-8 LANGUAGE=fr LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=posix DAXKIT_APPEND=stage \
    DAXKIT_STAGE_HEAP_BYTES=0 "$prog" "$dir"
rc=$?
cat "$trace"
exit $rc
