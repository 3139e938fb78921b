#!/usr/bin/env bash
# Description: the daxkit command's edges (review 10, findings 3 and 4): `daxkit recover` of a directory that
# does not exist (a typo) fails and says so instead of reporting a clean recovery; `--json` output of recover
# and stats is valid JSON for names with '"' and '\'; `daxkit recover -- -d` takes a directory named -d;
# `daxkit stats 12abc` is a usage error, not pid 12. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
cli=$(dk_cli) || exit 1
lib=$(dk_lib) || exit 1
dk_need_cmd python3
dk_media_mount tmpfs >/dev/null
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

out=$("$cli" recover "$DK_MNT/no-such-dir" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "No such file or directory" <<<"$out" && echo "ok   recover of a missing directory: exit 1, said" ||
    bad "recover of a missing directory: exit $rc: $out"

weird=$DK_MNT/'a"b\c'
mkdir -p "$weird"
json=$("$cli" recover --json "$weird" 2>&1); rc=$?
if [ $rc -eq 0 ] && python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["dir"]==sys.argv[2], d' "$json" "$weird" 2>/dev/null; then
    echo "ok   recover --json names '$weird' in valid JSON"
else bad "recover --json of '$weird' (exit $rc): $json"; fi

mkdir -p "$DK_MNT/-d"
out=$(cd "$DK_MNT" && "$cli" recover -- -d 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "^-d: " <<<"$out" && echo "ok   recover -- -d" || bad "recover -- -d: exit $rc: $out"

out=$("$cli" stats 12abc 2>&1); rc=$?
[ $rc -eq 2 ] && echo "ok   stats 12abc: usage error" || bad "stats 12abc: exit $rc: $out"

export DAXKIT_STATS_DIR=$DK_MNT/stats
env LD_PRELOAD="$lib" DAXKIT_DIR="$weird" sleep 30 >/dev/null 2>&1 & p=$!
dk_on_exit 'kill -9 $p 2>/dev/null'
for _ in $(seq 100); do [ -s "$DAXKIT_STATS_DIR/stats.$p" ] && break; sleep 0.05; done # sized: mapped next
sleep 0.2
json=$("$cli" stats --json 2>&1)
if python3 -c 'import json,sys; l=json.loads(sys.argv[1]); assert any(d["dirs"]==sys.argv[2] for d in l), l' "$json" "$weird" 2>/dev/null; then
    echo "ok   stats --json names '$weird' in valid JSON"
else bad "stats --json with DAXKIT_DIR='$weird': $json"; fi
kill -9 $p 2>/dev/null; wait $p 2>/dev/null

[ $fails -eq 0 ] || dk_fail "$fails check(s) failed"
echo "cli_edges.sh: recover and stats edges as the kernel-free tools should behave"
