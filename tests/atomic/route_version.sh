#!/usr/bin/env bash
# Description: DAXKIT_ATOMIC and a log of a newer format (session 20, review 19 finding 4). A writer under
# `daxkit run --atomic` is SIGKILLed mid-transaction (route_rename.c), its log marked version 3 (as a newer
# daxkit would leave it). This library must never format it anew nor serve the file past it:
# (1) library start-up recovery says "written by a newer daxkit (log format 3 ..." and leaves the log as it was
#     (same bytes, same name: not set aside as an orphan);
# (2) an open of the file through the route fails with EPROTONOSUPPORT (served plain, the program's writes
#     would go under the log's committed ones), the file and the log unchanged;
# (3) `daxkit recover` says the same, counts it failed (exit 1) and changes nothing;
# (4) the log marked version 2 again, `daxkit recover` recovers the committed state: nothing was lost.
# route_version.sh   (exit 0/1/77)
set -euo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
prog=$(dk_test_bin route_rename) || exit 1
daxkit=$DAXKIT_BUILD/bin/daxkit
dir=/dev/shm/dk_route_version.$$
trap 'rm -rf "$dir"' EXIT
rm -rf "$dir" && mkdir -p "$dir/sub"

out=$dir/.out
"$daxkit" run --dir "$dir" --atomic "$dir/*" -- "$prog" write "$dir/a" "$dir/sub/b" > "$out" &
pid=$!
for i in $(seq 1 500); do grep -q ready "$out" 2>/dev/null && break; sleep 0.02; done
grep -q ready "$out" || dk_fail "the writer never got ready"
kill -9 $pid
wait $pid 2>/dev/null || true
log=$(ls "$dir/.daxkit/atomic/"*.alog 2>/dev/null | head -1)
[ -n "$log" ] || dk_fail "no log in $dir/.daxkit/atomic"
if "$prog" check "$dir/sub/b" > /dev/null; then
    dk_fail "the unrecovered kernel file already equals the committed state: the test proves nothing"
fi
set_version() { printf "\\x$(printf %02x "$1")\\x00\\x00\\x00" | dd of="$log" bs=1 seek=8 conv=notrunc status=none; }
set_version 3
cp "$log" "$dir/log.before" && cp "$dir/sub/b" "$dir/file.before"
same() {  # WHAT: the log (same name) and the file unchanged
    cmp -s "$log" "$dir/log.before" || dk_fail "$1: the log changed"
    cmp -s "$dir/sub/b" "$dir/file.before" || dk_fail "$1: the file changed"
}
said='written by a newer daxkit (log format 3, this library reads 1-2)'

"$daxkit" run --dir "$dir" -- true 2> "$dir/err" || dk_fail "start-up: true failed"
grep -qF "$said" "$dir/err" || dk_fail "start-up recovery did not say \"$said\": $(cat "$dir/err")"
same "(1) start-up recovery"
echo "route_version: (1) start-up: $(head -1 "$dir/err")"

if DAXKIT_ATOMIC_RECOVER_START=0 "$daxkit" run --dir "$dir" --atomic "$dir/*" -- \
    bash -c 'exec 3<>"$1" && echo opened' _ "$dir/sub/b" > "$dir/out2" 2> "$dir/err"; then
    dk_fail "the route opened the file past a newer log: $(cat "$dir/out2")"
fi
grep -q "Protocol not supported" "$dir/err" || dk_fail "the open did not fail with EPROTONOSUPPORT: $(cat "$dir/err")"
grep -qF "$said" "$dir/err" || dk_fail "the route's open did not say \"$said\""
same "(2) the route's open"
echo "route_version: (2) the open failed: $(grep 'Protocol' "$dir/err" | head -1)"

if "$daxkit" recover "$dir" > "$dir/out3" 2> "$dir/err"; then dk_fail "daxkit recover exited 0 with a refused log"; fi
grep -qF "$said" "$dir/err" || dk_fail "daxkit recover did not say \"$said\": $(cat "$dir/err")"
grep -q "1 failed (1 of them logs of a format this daxkit does not read" "$dir/out3" ||
    dk_fail "daxkit recover's report: $(cat "$dir/out3")"
same "(3) daxkit recover"
echo "route_version: (3) $(cat "$dir/out3")"

set_version 2
"$daxkit" recover "$dir" > /dev/null || dk_fail "daxkit recover of the log marked version 2 again"
"$prog" check "$dir/sub/b" > /dev/null || dk_fail "the file after recovery is not the committed state"
echo "route_version: (4) marked 2 again, recovered to the committed state: PASS"
