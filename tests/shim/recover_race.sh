#!/usr/bin/env bash
# Description: two recoveries of one dead owner at once must not cut a live program's fsynced append
# (review 9, finding 2). A python3 process under daxkit (DAXKIT_APPEND=extend) publishes 1,000 bytes with
# fsync, appends 100 more and is SIGKILLed (kernel size: one extension step); the file is renamed (recovery
# searches for it by inode). Then tests/recover_race (recover_race.c) recovers the directory, held at a
# crash point inside the file's record while a second recovery and a live append + fsync run. Exit 0 pass,
# 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: recover_race.sh MEDIUM}
lib=$(dk_lib) || exit 1
dk_need_python
helper=$DAXKIT_BUILD/tests/recover_race
[ -x "$helper" ] || dk_fail "$helper not built"
dk_managed_dir "$medium" 512M >/dev/null
dir=$DK_DIR
mkdir -p "$dir/sub"
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_APPEND=extend python3 -c '
import os, signal, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"p" * 1000)
os.fsync(fd)
os.write(fd, b"u" * 100)
os.kill(os.getpid(), signal.SIGKILL)' "$dir/x"
rc=$?
[ $rc -eq 137 ] || dk_fail "the writer exited $rc, expected death by SIGKILL (137)"
size=$(stat -c %s "$dir/x")
[ "$size" -gt 1100 ] || dk_skip "the kernel size after the crash is $size, not an extension step: no record to race over"
mv "$dir/x" "$dir/sub/y"
"$helper" "$dir" "$dir/sub/y"
