#!/usr/bin/env bash
# Description: SSSP's buckets do not grow with distance / delta (review 13, finding 4): a graph whose edges
# are heavy against delta (one edge of weight 300,000,000 with the default delta 1; weights in metres or ns)
# runs in bounded memory -- under a 1 GiB address-space limit, where one bucket per distance value aborted
# with std::bad_alloc -- and its distances agree with the reference (--verify), with 1 and 2 threads and
# heavy edges mixed with light ones (a path with a shortcut). Exit 0 pass, 1 fail.
set -u
B=${DAXKIT_BUILD:-build}/bin/daxkit-graph
T=$(mktemp -d "${DAXKIT_BUILD:-/tmp}/graph_heavy.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf '0 1 300000000\n1 2 1\n' > "$T/big.wel"
# 0 -> 1 -> 2 -> ... -> 9 light (weight 7), 0 -> 9 heavy (1e8), 3 -> 5 heavier than the path, 9 -> 10 1e9
{ for i in $(seq 0 8); do echo "$i $((i + 1)) 7"; done; echo "0 9 100000000"; echo "3 5 200000000"; echo "9 10 1000000000"; } > "$T/mix.wel"
for g in big mix; do
  $B convert --input "$T/$g.wel" --output "$T/$g.wsg" > /dev/null 2>"$T/err" || fail "convert $g: $(cat "$T/err")"
  for t in 1 2; do
    out=$( (ulimit -v 1048576; $B sssp --input "$T/$g.wsg" --source 0 --trials 1 --threads $t --verify) 2>&1 ); rc=$?
    [ $rc = 0 ] || fail "sssp of $g with $t thread(s) under a 1 GiB limit exited $rc: $(echo "$out" | tail -3)"
    echo "$out" | grep -q '^result: .*verified=yes' || fail "sssp of $g with $t thread(s): not verified: $(echo "$out" | tail -2)"
    echo "ok   sssp of $g, $t thread(s): verified, within 1 GiB"
  done
done
echo "graph_sssp_heavy_edges.sh: heavy edges cost buckets by count, not by distance"
