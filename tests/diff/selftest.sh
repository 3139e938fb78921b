#!/usr/bin/env bash
# Description: the differential tester can pass and can fail.
#
# 1. Kernel against kernel (no preload): every sequence must agree -- the tester is deterministic.
# 2. Against libdk_flipread.so (flips the first byte of every pread on a managed file): the driver
#    must report mismatches, shrink one to at most 4 ops, and print the reproducing command line.
# Runs in a directory under /dev/shm (no mount, no root needed). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_python
dk_test_bin dk_difftest >/dev/null
flip=$(dk_test_bin libdk_flipread.so)
dir=$(mktemp -d /dev/shm/daxkit-diff-selftest.XXXXXX) || dk_fail "mktemp in /dev/shm failed"
dk_on_exit "rm -rf '$dir'"
out=$dir/out.txt

# A generated run and the replay of its printed op list must log the same thing (shrinking relies on it).
tester=$(dk_test_bin dk_difftest)
mkdir -p "$dir/replay"
for seed in 7 8 9; do
    "$tester" --seed $seed --ops 300 --print-ops > "$dir/ops.$seed" || dk_fail "--print-ops failed"
    "$tester" --dir "$dir/replay" --seed $seed --ops 300 > "$dir/gen.$seed" || dk_fail "generated run failed"
    "$tester" --dir "$dir/replay" --seed $seed --replay "$dir/ops.$seed" > "$dir/rep.$seed" || dk_fail "replay failed"
    cmp -s "$dir/gen.$seed" "$dir/rep.$seed" || dk_fail "seed $seed: the replayed op list logs differently: diff $dir/gen.$seed $dir/rep.$seed"
done

python3 "$here/run-diff.py" --build "$DAXKIT_BUILD" --medium "tmpfs=$dir" --lib none --seeds 200 --start 1000 \
    > "$out" 2>&1
rc=$?
cat "$out"
[ $rc = 0 ] || dk_fail "kernel against kernel disagreed (exit $rc): the tester is not deterministic"
grep -q '^200 passed, 0 failed$' "$out" || dk_fail "kernel against kernel: expected '200 passed, 0 failed'"

python3 "$here/run-diff.py" --build "$DAXKIT_BUILD" --medium "tmpfs=$dir" --lib "$flip" --seeds 20 --start 2000 \
    --shrink-max 1 --out "$dir/shrunk" > "$out" 2>&1
rc=$?
cat "$out"
[ $rc = 1 ] || dk_fail "the flip-read library was not detected (driver exit $rc, expected 1)"
grep -qE '^0 passed, 20 failed$' "$out" || dk_fail "expected every sequence to fail against the flip-read library"
n=$(sed -n 's/^  shrunk to \([0-9]*\) ops.*/\1/p' "$out" | head -1)
[ -n "$n" ] || dk_fail "no shrunk op sequence reported"
[ "$n" -le 4 ] || dk_fail "shrunk sequence has $n ops; the flip needs at most 4 (open, write, pread)"
grep -q -- '--replay' "$out" || dk_fail "no reproducing command line printed"
echo "selftest: deterministic against the kernel; flip-read caught and shrunk to $n ops"
