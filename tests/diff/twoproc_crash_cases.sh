#!/usr/bin/env bash
# Description: the two-process crash cases of tests/diff/cases/twoproc-*.ops (shrunk by the reviewer, review
# 13 finding 1), each replayed by dk_difftest_twoproc against the kernel and under the library in each mode
# of MODES (ARGV[2], comma-separated) on MEDIUM (ARGV[1]); the tester's arguments are the file's '# args:'
# line (--recover-cli gets the build's daxkit). A process is SIGKILLed between two acknowledged operations
# (holding the flock, or with no locks at all); the other one goes on; the victim's restart (or `daxkit
# recover` at once) recovers its log. Every acknowledged operation of both must be there, as with the
# kernel: strict recovery must not replay the dead process's completed records over the survivor's
# (before session 13 it did: the file held the dead process's bytes, 4097 bytes for 0, 0 bytes for 1).
# Also the two-process cases without a crash (twoproc-append-follow-*.ops: where a publish that finds another
# process's append moves this process's O_APPEND offsets -- review 15, finding 13).
# Extra environment for the library side: DIFF_LIB_ENV (e.g. DAXKIT_STRICT_MARKS=0, the negative control).
# ARGV[3]: a glob of the case names to run (default twoproc-*).
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: twoproc_crash_cases.sh MEDIUM [MODES] [GLOB]}
modes=${2:-strict,sync}
glob=${3:-twoproc-*} # which of tests/diff/cases/ (without .ops)
tester=$(dk_test_bin dk_difftest_twoproc) || exit 1
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_media_mount "$medium" >/dev/null
cases=("$here"/cases/$glob.ops)
[ -e "${cases[0]}" ] || dk_fail "no tests/diff/cases/$glob.ops"
failed=0 n=0
for ops in "${cases[@]}"; do
    args=()
    for a in $(sed -n 's/^# args: //p' "$ops"); do
        [ "$a" = --recover-cli ] && a=--recover-cli=$cli
        args+=("$a")
    done
    for mode in ${modes//,/ }; do
        d=$DK_MNT/case.$n; n=$((n + 1))
        mkdir -p "$d/k" "$d/m"
        "$tester" --dir "$d/k" --seed 1 --replay "$ops" "${args[@]}" > "$d/kernel.log" 2>&1 ||
            dk_fail "$(basename "$ops"): the kernel run failed: $d/kernel.log"
        env ${DIFF_LIB_ENV:-} LD_PRELOAD="$lib" DAXKIT_DIR="$d/m" DAXKIT_MODE="$mode" \
            "$tester" --dir "$d/m" --seed 1 --replay "$ops" "${args[@]}" > "$d/daxkit.log" 2>/dev/null
        if grep -q '^crash ' "$ops"; then
            grep -q 'crash p=. .*= died signal KILL' "$d/kernel.log" || dk_fail "$(basename "$ops"): no kill in the kernel run"
        fi
        if cmp -s "$d/kernel.log" "$d/daxkit.log"; then
            echo "ok: $(basename "$ops") $mode $medium"
        else
            echo "FAIL: $(basename "$ops") $mode $medium: differs from the kernel:"
            diff "$d/kernel.log" "$d/daxkit.log" | head -20
            failed=$((failed + 1))
        fi
    done
done
[ $failed = 0 ] || dk_fail "$failed case(s) differ from the kernel"
echo "PASS: $n runs equal to the kernel"
