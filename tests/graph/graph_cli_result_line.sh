#!/usr/bin/env bash
# Description: the daxkit-graph CLI end to end (also through `daxkit graph`): gen writes .sg/.wsg, convert round-trips them, each
# kernel on each backend ends with exactly one `result: kernel=K backend=B avg_s=S trials=N verified=yes`
# line, bad input fails with a message naming the fix, and no progress bar is drawn when stderr is
# not a terminal.
set -u
B=${DAXKIT_BUILD:-build}/bin/daxkit-graph
T=$(mktemp -d "${DAXKIT_BUILD:-/tmp}/graph_cli.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

$B gen --kind kron --scale 10 --output "$T/k.sg" >"$T/out" 2>"$T/err" || fail "gen kron: $(cat "$T/err")"
$B gen --kind urand --scale 10 --weighted --output "$T/u.wsg" >>"$T/out" 2>>"$T/err" || fail "gen urand"
grep -q $'\r' "$T/err" && fail "progress bar drawn while stderr is not a terminal"
$B convert --input "$T/k.sg" --output "$T/k.el" >/dev/null || fail "convert to .el"
$B convert --input "$T/k.el" --output "$T/k2.sg" >/dev/null || fail "convert from .el"
cmp -s "$T/k.sg" "$T/k2.sg" || fail ".sg -> .el -> .sg is not identical"
$B convert --input "$T/k.sg" --output "$T/kw.wsg" >/dev/null || fail "convert .sg -> .wsg"

for be in dram dram-prefetch emu mmap uring; do
  for k in bfs bc sssp; do
    in="$T/k.sg"; [ $k = sssp ] && in="$T/u.wsg"
    out=$($B $k --input "$in" --backend $be --threads 2 --contexts 16 --trials 2 --verify 2>&1)
    rc=$?
    if [ $be = uring ] && echo "$out" | grep -q "O_DIRECT\|io_uring_queue_init"; then
      echo "SKIP uring: $(echo "$out" | tail -1)"; continue
    fi
    [ $rc = 0 ] || fail "$k on $be exited $rc: $out"
    n=$(echo "$out" | grep -c '^result: ')
    [ "$n" = 1 ] || fail "$k on $be: $n result lines"
    echo "$out" | tail -1 | grep -Eq "^result: kernel=$k backend=$be avg_s=[0-9.]+ trials=2 verified=yes$" \
      || fail "$k on $be: bad result line: $(echo "$out" | tail -1)"
  done
done
# `daxkit graph ...` (the C launcher) execs daxkit-graph found next to it.
D=${DAXKIT_BUILD:-build}/bin/daxkit
out=$($D graph bfs --input "$T/k.sg" --trials 1 --verify 2>&1) || fail "daxkit graph bfs exited $?: $out"
echo "$out" | tail -1 | grep -Eq "^result: kernel=bfs backend=dram avg_s=[0-9.]+ trials=1 verified=yes$" \
  || fail "daxkit graph bfs: bad result line: $(echo "$out" | tail -1)"
out=$($B sssp --input "$T/k.sg" 2>&1) && fail "sssp on an unweighted graph must fail"
echo "$out" | grep -q "wsg" || fail "sssp error does not name the fix: $out"
out=$($B bfs --input "$T/k.sg" --backend nosuch 2>&1) && fail "unknown backend must fail"
echo "$out" | grep -q "dram-prefetch" || fail "backend error does not list the backends: $out"
echo PASS
