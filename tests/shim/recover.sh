#!/usr/bin/env bash
# Description: crash recovery of extend-strategy files on MEDIUM (ARGV[1]). A bash process under daxkit
# (posix mode, DAXKIT_APPEND=extend) publishes 1000 bytes to three files, appends 500 more to each (the
# kernel file is now one extension step long, zero-filled past the appends) and is SIGKILLed. Then: b is
# renamed (recovery must find it by inode), c is grown past the recorded extension by a program without
# daxkit (recovery must leave it alone; a resize to a size within the extension cannot be told apart). `daxkit recover` must roll a and b back to 1000 bytes, report what it did, leave nothing of
# the dead process in .daxkit, and find nothing to do when run again. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: recover.sh MEDIUM}
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_need_python
dk_managed_dir "$medium" 1G >/dev/null
dir=$DK_DIR

# The crashing writer: one python3 process served by daxkit (os.write is libc's write).
env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=posix DAXKIT_APPEND=extend python3 -c '
import os, signal, sys
d = sys.argv[1]
for f in "abc":
    fd = os.open(d + "/" + f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"p" * 1000)
    os.close(fd)                                   # published
fds = [os.open(d + "/" + f, os.O_WRONLY | os.O_APPEND) for f in "abc"]
for fd in fds:
    os.write(fd, b"7" * 500)                       # appended, not published
os.kill(os.getpid(), signal.SIGKILL)' "$dir"
rc=$?
[ $rc -eq 137 ] || dk_fail "the writer exited $rc, expected death by SIGKILL (137)"

size() { stat -c %s "$1"; }
for f in a b c; do
    s=$(size "$dir/$f")
    [ "$s" -gt 1500 ] || dk_fail "$f: size $s after the crash: expected an extension step (> 1500); the test proves nothing"
done
echo "after the crash: a=$(size "$dir/a") b=$(size "$dir/b") c=$(size "$dir/c") bytes (zero-filled tails)"
grep -q '\.sizes$' <<<"$(ls "$dir/.daxkit")" || dk_fail "no published-size record file in $dir/.daxkit: $(ls "$dir/.daxkit")"

mv "$dir/b" "$dir/b-renamed"
truncate -s 9M "$dir/c"   # grown past the recorded extension by someone else

out=$("$cli" recover --json "$dir") || dk_fail "daxkit recover failed: $out"
echo "recover: $out"
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$out" "$1"; }
[ "$(field rolled_back)" = 2 ] || dk_fail "rolled_back=$(field rolled_back), expected 2 (a and the renamed b)"
[ "$(field untouched)" = 1 ] || dk_fail "untouched=$(field untouched), expected 1 (c, resized after the crash)"
[ "$(field bytes_dropped)" -gt 0 ] || dk_fail "bytes_dropped=0"
[ "$(field owners_gone)" = 1 ] || dk_fail "owners_gone=$(field owners_gone), expected 1"
[ "$(size "$dir/a")" = 1000 ] || dk_fail "a: size $(size "$dir/a") after recovery, expected its published 1000"
[ "$(size "$dir/b-renamed")" = 1000 ] || dk_fail "b-renamed: size $(size "$dir/b-renamed"), expected 1000"
[ "$(size "$dir/c")" = 9437184 ] || dk_fail "c: size $(size "$dir/c"): recovery touched a file resized since the crash"
[ "$(head -c 1000 "$dir/a" | tr -d p | wc -c)" = 0 ] || dk_fail "a: published bytes changed"
left=$(ls -A "$dir/.daxkit")
[ -z "$left" ] || dk_fail "files of the dead process left in .daxkit: $left"

out2=$("$cli" recover --json "$dir") || dk_fail "second daxkit recover failed: $out2"
[ "$(field2() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])["owners_gone"])' "$out2"; }; field2)" = 0 ] ||
    dk_fail "second recover found work again: $out2"
[ "$(size "$dir/a")" = 1000 ] || dk_fail "a changed by the second recovery"
echo "recover.sh: $medium: rolled back 2 files, left the resized one alone, idempotent"
