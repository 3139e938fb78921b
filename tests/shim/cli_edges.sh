#!/usr/bin/env bash
# Description: the daxkit command's edges (review 10, findings 3 and 4): `daxkit recover` of a directory that
# does not exist (a typo) fails and says so instead of reporting a clean recovery; `--json` output of recover
# and stats is valid JSON for names with '"' and '\'; `daxkit recover -- -d` takes a directory named -d;
# `daxkit stats 12abc` is a usage error, not pid 12. Review 13: `--json` is valid JSON for a name that is not
# UTF-8 (finding 2); `daxkit run` with a relative DAXKIT_LIB keeps the library in programs started after a
# cd (finding 6); `daxkit doctor` names the mount that holds the path when the device is mounted twice
# (finding 7). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
cli=$(dk_cli) || exit 1
lib=$(dk_lib) || exit 1
dk_need_python
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
# (a managed file opened: the library makes a process's stats file at its first one)
env LD_PRELOAD="$lib" DAXKIT_DIR="$weird" python3 -c 'import os, sys, time
open(os.path.join(sys.argv[1], "f"), "w").close()
time.sleep(30)' "$weird" >/dev/null 2>&1 & p=$!
dk_on_exit 'kill -9 $p 2>/dev/null'
names_weird() { python3 -c 'import json,sys; l=json.loads(sys.argv[1]); assert any(d["dirs"]==sys.argv[2] for d in l), l' "$1" "$weird" 2>/dev/null; }
# the stats file made, sized and filled by the process: asked again until it is listed (20 s), no fixed sleep
for _ in $(seq 400); do json=$("$cli" stats --json 2>&1); names_weird "$json" && break; sleep 0.05; done
if names_weird "$json"; then
    echo "ok   stats --json names '$weird' in valid JSON"
else bad "stats --json with DAXKIT_DIR='$weird': $json"; fi
kill -9 $p 2>/dev/null; wait $p 2>/dev/null

notutf8=$DK_MNT/$'r13-\xff\xfe-\xc3\xa9'
mkdir -p "$notutf8"
json=$("$cli" doctor --json --quick "$notutf8" 2>/dev/null); rc=$?
if python3 -c 'import json,sys; d=json.loads(sys.stdin.buffer.read().decode("utf-8")); assert "\u00ff\u00fe-\u00e9" in json.dumps(d, ensure_ascii=False), d' <<<"$json" 2>/dev/null; then
    echo "ok   doctor --json of a name that is not UTF-8: valid JSON, bytes as U+0080-U+00FF, UTF-8 kept"
else bad "doctor --json of a name that is not UTF-8 (exit $rc): $json"; fi
json=$("$cli" recover --json "$notutf8" 2>&1)
python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <<<"$json" 2>/dev/null &&
    echo "ok   recover --json of a name that is not UTF-8: valid JSON" || bad "recover --json of a name that is not UTF-8: $json"

libdir=$(dirname "$lib")
out=$(cd "$libdir/.." && DAXKIT_LIB=$(basename "$libdir")/$(basename "$lib") "$cli" run --dir "$DK_MNT" -- \
      sh -c 'cd /; grep -c libdaxkit /proc/self/maps' 2>&1); rc=$?
[ $rc -eq 0 ] && [ "${out##*$'\n'}" -gt 0 ] 2>/dev/null && echo "ok   run with a relative DAXKIT_LIB: the library stays after a cd" ||
    bad "run with a relative DAXKIT_LIB, a program after cd / (exit $rc): $out"

bindsrc=$DK_MNT/bindsrc; bindto=$(mktemp -d /tmp/dk_cli_bind.XXXXXX)
mkdir -p "$bindsrc/sub"
if mount --bind "$bindsrc/sub" "$bindto" 2>/dev/null; then
    dk_on_exit "umount '$bindto'; rmdir '$bindto'"
    out=$("$cli" doctor --json --quick "$DK_MNT" 2>/dev/null)
    python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["fs"]["mount_point"]==sys.argv[1], d["fs"]' "$DK_MNT" <<<"$out" 2>/dev/null &&
        echo "ok   doctor names $DK_MNT, not the bind mount of a subdirectory at $bindto" ||
        bad "doctor of $DK_MNT with a bind mount of its subdirectory at $bindto: $(grep -o '"mount_point"[^,]*' <<<"$out")"
else
    echo "note: mount --bind refused here: the doctor's bind-mount case not checked"; rmdir "$bindto"
fi

[ $fails -eq 0 ] || dk_fail "$fails check(s) failed"
echo "cli_edges.sh: recover and stats edges as the kernel-free tools should behave"
