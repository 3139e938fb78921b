#!/usr/bin/env bash
# Description: `daxkit run --mode strict` starts the program accelerated in strict mode (the launcher once
# refused strict mode and ran programs unaccelerated, which benchmarks then reported as strict): the
# library's banner names the mode, nothing says "without acceleration", and a write while the program runs
# leaves the strict operation log in the directory's .daxkit area. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
cli=$(dk_cli) || exit 1
dk_need_python
dk_managed_dir hugetmpfs 1G >/dev/null
dir=$DK_DIR
out=$(DAXKIT_VERBOSE=1 "$cli" run --mode strict --dir "$dir" -- python3 -c '
import os, sys
d = sys.argv[1]
fd = os.open(d + "/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"x" * 100)
print("LOGS", " ".join(sorted(e for e in os.listdir(d + "/.daxkit") if e.endswith(".log"))))
' "$dir" 2>&1)
rc=$?
echo "$out" | tail -5
[ $rc -eq 0 ] || dk_fail "daxkit run --mode strict exited $rc"
grep -q "without acceleration" <<<"$out" && dk_fail "daxkit run --mode strict ran the program unaccelerated"
grep -q "loaded: .*DAXKIT_MODE=strict" <<<"$out" || dk_fail "no banner naming DAXKIT_MODE=strict"
grep -q "^LOGS .*\.log" <<<"$out" || dk_fail "no operation log in $dir/.daxkit while the strict program ran"
[ "$(cat "$dir/f")" = "$(printf 'x%.0s' $(seq 100))" ] || dk_fail "the file does not hold the 100 bytes written"
echo "launcher.sh: daxkit run --mode strict runs the program in strict mode"
