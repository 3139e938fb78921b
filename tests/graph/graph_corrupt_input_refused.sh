#!/usr/bin/env bash
# Description: a .sg/.wsg file (or a uring page image) whose neighbour entries are not vertices, whose
# weights are negative, or whose header claims more edges than the file holds is refused with a message
# naming the fix and exit 1 on every backend -- never an out-of-bounds access (review 10, finding 15: a
# neighbour id past the vertex count crashed bfs with SIGSEGV; one just past n gave silently wrong output).
set -u
B=${DAXKIT_BUILD:-build}/bin/daxkit-graph
T=$(mktemp -d "${DAXKIT_BUILD:-/tmp}/graph_corrupt.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

$B gen --kind urand --scale 9 --output "$T/g.sg" >/dev/null 2>&1 || fail "gen .sg"
$B gen --kind urand --scale 9 --weighted --output "$T/g.wsg" >/dev/null 2>&1 || fail "gen .wsg"
# corrupt.py IN OUT MODE: every7 (every 7th id far past n), justpast (one id = n), negid (one id -1),
# negweight (one weight -3), hugem (header edge count INT64_MAX), page (every word of an image's page 1).
cat > "$T/corrupt.py" <<'PY'
import struct, sys
src, dst, mode = sys.argv[1:4]
d = bytearray(open(src, 'rb').read())
if mode == 'page':
    for o in range(4096, 8192, 4): struct.pack_into('<i', d, o, 0x7ffffff0)
else:
    m, n = struct.unpack_from('<qq', d, 1)
    stride = 8 if src.endswith('.wsg') else 4
    base = 17 + (n + 1) * 8
    if mode == 'every7':
        for i in range(0, m, 7): struct.pack_into('<i', d, base + stride * i, 0x7ffffff0)
    elif mode == 'justpast': struct.pack_into('<i', d, base + stride * (m // 2), n)
    elif mode == 'negid': struct.pack_into('<i', d, base + stride * (m // 3), -1)
    elif mode == 'negweight': struct.pack_into('<i', d, base + stride * (m // 2) + 4, -3)
    elif mode == 'hugem': struct.pack_into('<q', d, 1, 0x7fffffffffffffff)
open(dst, 'wb').write(d)
PY
for mode in every7 justpast negid hugem; do python3 "$T/corrupt.py" "$T/g.sg" "$T/$mode.sg" $mode || fail "corrupt $mode"; done
for mode in negweight hugem; do python3 "$T/corrupt.py" "$T/g.wsg" "$T/w$mode.wsg" $mode || fail "corrupt w$mode"; done

uring_ok=1
# expect_refused DESCRIPTION ARGS...: exit 1 (not a signal, not 0) and a message that says what to do.
expect_refused() {
  local what=$1; shift
  local out rc
  out=$("$@" 2>&1); rc=$?
  if grep -q "O_DIRECT\|io_uring_queue_init" <<<"$out"; then echo "SKIP $what: uring unavailable"; uring_ok=0; return; fi
  [ $rc = 1 ] || fail "$what: exit $rc (want 1; 139 = SIGSEGV): $(tail -3 <<<"$out")"
  grep -q "regenerate\|not a GAP serialized graph" <<<"$out" || fail "$what: no message naming the fix: $(tail -3 <<<"$out")"
  echo "ok $what: $(grep 'daxkit graph' <<<"$out" | tail -1 | cut -c1-150)"
}

for be in dram emu mmap uring; do
  out=$($B bfs --input "$T/g.sg" --backend $be --trials 1 2>&1) || {
    grep -q "O_DIRECT\|io_uring_queue_init" <<<"$out" && [ $be = uring ] && { echo "SKIP uring: unavailable"; uring_ok=0; continue; }
    fail "intact .sg on $be exited non-zero: $(tail -2 <<<"$out")"; }
  for mode in every7 justpast negid; do
    rm -f "$T/$mode.sg.pages"
    expect_refused "bfs $mode on $be" $B bfs --input "$T/$mode.sg" --backend $be --trials 1
  done
  $B sssp --input "$T/g.wsg" --backend $be --trials 1 >/dev/null 2>&1 || fail "intact .wsg sssp on $be"
  rm -f "$T/wnegweight.wsg.pages"
  expect_refused "sssp negweight on $be" $B sssp --input "$T/wnegweight.wsg" --backend $be --trials 1
done
expect_refused "bfs hugem" $B bfs --input "$T/hugem.sg" --trials 1
expect_refused "sssp hugem" $B sssp --input "$T/whugem.wsg" --trials 1
expect_refused "convert every7 to a page image" $B convert --input "$T/every7.sg" --output "$T/x.pages"
# A page image corrupted after it was built from a good file: caught per piece, as it is read.
if [ $uring_ok = 1 ]; then
  python3 "$T/corrupt.py" "$T/g.sg.pages" "$T/bad.pages" page || fail "corrupt page image"
  expect_refused "bfs on a corrupt page image" $B bfs --input "$T/g.sg" --backend uring --image "$T/bad.pages" --trials 1
  # The mmap backend reads the .sg itself: corruption after a DRAM-validated load is not in play there.
fi
echo PASS
