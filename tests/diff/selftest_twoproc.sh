#!/usr/bin/env bash
# Description: the two-process differential tester (dk_difftest_twoproc) can pass and can fail.
#
# 1. A generated run and the replay of its printed op list log the same (shrinking relies on it).
# 2. Kernel against kernel (no preload), with and without --lock-at-switch: every sequence agrees -- the
#    turn-taking makes the interleaving deterministic.
# 2b. Crash mode (--crash=both): the replay of a generated list with crash ops logs the same, kills and
#    restarts show, and kernel against kernel agrees.
# 3. Against libdk_flipread.so (flips the first byte of every pread on a managed file): the driver reports
#    mismatches and shrinks one to a few ops.
# Runs in a directory under /dev/shm (no mount, no root needed). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_python
tester=$(dk_test_bin dk_difftest_twoproc) || exit 1
flip=$(dk_test_bin libdk_flipread.so) || exit 1
dir=$(mktemp -d /dev/shm/daxkit-diff2-selftest.XXXXXX) || dk_fail "mktemp in /dev/shm failed"
dk_on_exit "rm -rf '$dir'"
out=$dir/out.txt

mkdir -p "$dir/replay"
for seed in 7 8 9; do
    "$tester" --seed $seed --ops 300 --print-ops > "$dir/ops.$seed" || dk_fail "--print-ops failed"
    "$tester" --dir "$dir/replay" --seed $seed --ops 300 --lock-at-switch > "$dir/gen.$seed" || dk_fail "generated run failed"
    "$tester" --dir "$dir/replay" --seed $seed --replay "$dir/ops.$seed" --lock-at-switch > "$dir/rep.$seed" ||
        dk_fail "replay failed"
    cmp -s "$dir/gen.$seed" "$dir/rep.$seed" ||
        dk_fail "seed $seed: the replayed op list logs differently: diff $dir/gen.$seed $dir/rep.$seed"
    # the turn-taking is real: both processes ran ops, and a worker's death would show
    grep -q ' p=A .* = ' "$dir/gen.$seed" && grep -q ' p=B .* = ' "$dir/gen.$seed" || dk_fail "seed $seed: a process ran no op"
    ! grep -q 'worker' "$dir/gen.$seed" || dk_fail "seed $seed: a worker died or hung without a library: $dir/gen.$seed"
done

for seed in 11 12; do
    "$tester" --seed $seed --ops 200 --print-ops --crash=both > "$dir/ops.$seed" || dk_fail "--print-ops --crash failed"
    "$tester" --dir "$dir/replay" --seed $seed --ops 200 --crash=both --lock-at-switch > "$dir/gen.$seed" || dk_fail "crash run failed"
    "$tester" --dir "$dir/replay" --seed $seed --replay "$dir/ops.$seed" --lock-at-switch > "$dir/rep.$seed" ||
        dk_fail "crash replay failed"
    cmp -s "$dir/gen.$seed" "$dir/rep.$seed" ||
        dk_fail "seed $seed: the replayed crash op list logs differently: diff $dir/gen.$seed $dir/rep.$seed"
    grep -q '^[0-9]* crash p=. turn=0 = died signal KILL$' "$dir/gen.$seed" && grep -q '^~ restart p=. = started$' "$dir/gen.$seed" ||
        dk_fail "seed $seed: no kill and restart in a --crash=both run: $dir/gen.$seed"
done

for discipline in --lock-at-switch "" "--crash=both --lock-at-switch"; do
    targs=()
    for t in $discipline; do targs+=("--tester-arg=$t"); done
    python3 "$here/run-diff.py" --build "$DAXKIT_BUILD" --tester "$tester" "${targs[@]}" \
        --medium "tmpfs=$dir" --lib none --seeds 60 --start 1000 > "$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc = 0 ] || dk_fail "kernel against kernel disagreed (${discipline:-no discipline}, exit $rc): not deterministic"
    grep -q '^60 passed, 0 failed$' "$out" || dk_fail "kernel against kernel: expected '60 passed, 0 failed'"
done

python3 "$here/run-diff.py" --build "$DAXKIT_BUILD" --tester "$tester" --tester-arg=--lock-at-switch \
    --medium "tmpfs=$dir" --lib "$flip" --seeds 10 --start 2000 --shrink-max 1 --out "$dir/shrunk" > "$out" 2>&1
rc=$?
cat "$out"
[ $rc = 1 ] || dk_fail "the flip-read library was not detected (driver exit $rc, expected 1)"
failed=$(sed -n 's/^[0-9]* passed, \([0-9]*\) failed$/\1/p' "$out")
[ "${failed:-0}" -ge 8 ] || dk_fail "expected at least 8 of 10 sequences to fail against the flip-read library"
n=$(sed -n 's/^  shrunk to \([0-9]*\) ops.*/\1/p' "$out" | head -1)
[ -n "$n" ] || dk_fail "no shrunk op sequence reported"
[ "$n" -le 6 ] || dk_fail "shrunk sequence has $n ops; the flip needs few (open, write, pread)"
grep -q -- '--replay' "$out" || dk_fail "no reproducing command line printed"
echo "selftest_twoproc: deterministic against the kernel; flip-read caught ($failed of 10) and shrunk to $n ops"
