#!/usr/bin/env bash
# Description: strict mode's delta records (session 29; docs/strict.md "Delta records"), huge tmpfs,
# DAXKIT_PERSIST=flush. ARGV[1]:
#   diff    differential: tests/strict/delta_prog.c `diff` (seeded 4 KiB page rewrites with a few bytes changed,
#           every byte, none; unaligned, 8 KiB; reads checked against a model; 1 and 2 threads on one file) on the
#           kernel and under strict mode (apply write, auto, checkpoint): every read and the file equal the model, the
#           two files are equal, and the strict write run logged delta records (its counters)
#   hazard  a crash and another process: writer A (strict) dies after its delta record and before its apply
#           (crash site strict.write.logged); then B, without daxkit, rewrites the whole page; `daxkit recover` must
#           leave B's page -- the record's segments over B's bytes do not give A's crc: not replayed, counted
#           strict_delta_stale -- not a mix. Controls: without B, recovery completes A's page (replayed); dead
#           between the apply's two parts (strict.write.half_applied): recovery completes it; and the mutant
#           recovery without the crc check (DAXKIT_TEST_STRICT_DELTA_MUTANT=2) must give the mix (the check sees it)
#   race    two strict processes rewrite the same page 400 times each: under a POSIX write lock every read is exactly
#           the page just written and the writes are delta records; without a lock none is (review29 #9: whole writes,
#           as before delta records) and every byte read is the base's, A's or B's
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
what=${1:?usage: delta.sh diff|hazard|race}
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
prog=$(dk_test_bin strict_delta_prog) || exit 1
dk_managed_dir hugetmpfs 512M >/dev/null
dir=$DK_DIR
strict() { env LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush "$@"; }
counter() { # JSON FILE NAME
    sed -n "s/.*\"$2\": *\([0-9]*\).*/\1/p" "$1" | head -1
}
fail=0

case $what in
diff)
    for threads in 1 2; do
        rm -f "$DK_MNT/k" && "$prog" diff "$DK_MNT/k" 7 1500 "$threads" || dk_fail "kernel run ($threads threads) failed"
        for apply in write auto checkpoint; do
            rm -f "$dir/s" "$DK_MNT/stats.json"
            strict env DAXKIT_STRICT_APPLY=$apply DELTA_STATS_CMD="env -u LD_PRELOAD $cli stats" \
                "$prog" diff "$dir/s" 7 1500 "$threads" > "$DK_MNT/stats.json" ||
                { cat "$DK_MNT/stats.json"; dk_fail "strict run ($threads threads, apply $apply) differs from the model"; }
            cmp -s "$DK_MNT/k" "$dir/s" || dk_fail "strict ($threads threads, apply $apply) and kernel files differ"
            d=$(counter "$DK_MNT/stats.json" strict_delta) m=$(counter "$DK_MNT/stats.json" strict_delta_miss)
            f=$(counter "$DK_MNT/stats.json" strict_delta_fallback) s=$(counter "$DK_MNT/stats.json" strict_staged)
            echo "ok: $threads thread(s), apply $apply: equal to the kernel's file; delta records $d, misses $m, fallbacks $f, staged $s"
            if [ "$apply" = write ] && [ "$threads" = 1 ] && [ "${d:-0}" -lt 750 ]; then
                dk_fail "the write run logged ${d:-0} delta records (expected most of its 1,500 overwrites)"
            fi
        done
    done ;;
hazard)
    page() { od -An -v -tx1 -j 0 -N 4096 "$dir/f" | tr -d ' \n'; }
    # want: A | B | mix ; how: logged | half ; other: B-after | none ; mutant
    one() {
        local site=$1 other=$2 mutant=$3 want=$4
        rm -rf "$dir/f" "$dir/.daxkit"
        "$prog" base "$dir/f" || dk_fail "base"
        strict env DAXKIT_TEST_CRASH="$site:1" "$prog" page "$dir/f" 0 A > /dev/null 2>&1
        [ -n "$(ls "$dir/.daxkit/"*.log 2>/dev/null)" ] || dk_fail "$site: the writer left no log (did it crash?)"
        [ "$other" = B ] && { printf 'B%.0s' $(seq 4096) | dd of="$dir/f" bs=4096 count=1 conv=notrunc status=none; }
        local out
        out=$(env DAXKIT_TEST_STRICT_DELTA_MUTANT="$mutant" "$cli" recover "$dir" --json) || dk_fail "recover: $out"
        local stale got
        stale=$(echo "$out" | sed -n 's/.*"strict_delta_stale":\([0-9]*\).*/\1/p')
        got=$(page)
        local wa wb
        cp "$dir/f" "$DK_MNT/g"
        "$prog" base "$DK_MNT/a" && "$prog" page "$DK_MNT/a" 0 A
        wa=$(od -An -v -tx1 -N 4096 "$DK_MNT/a" | tr -d ' \n')
        wb=$(printf 'B%.0s' $(seq 4096) | od -An -v -tx1 | tr -d ' \n')
        local is=mix
        [ "$got" = "$wa" ] && is=A
        [ "$got" = "$wb" ] && is=B
        "$prog" base "$DK_MNT/o" && [ "$got" = "$(od -An -v -tx1 -N 4096 "$DK_MNT/o" | tr -d ' \n')" ] && is=old
        echo "crash at $site, then ${other/none/nobody} writes the page, recovery${mutant:+ (mutant $mutant)}: page is $is (want $want), strict_delta_stale ${stale:-?}"
        [ "$is" = "$want" ] || { echo "FAIL: $site/$other/$mutant: page is $is, want $want"; fail=1; }
    }
    one strict.write.logged none "" A
    one strict.write.half_applied none "" A
    one strict.write.logged B "" B
    one strict.write.logged B 2 mix   # the mutant: the check must see the mix
    ;;
race)
    for lock in 1 0; do
        "$prog" base "$dir/r" || dk_fail base
        strict env DELTA_STATS_CMD="env -u LD_PRELOAD $cli stats" "$prog" race "$dir/r" 400 A $lock > "$DK_MNT/a.json" & pa=$!
        strict "$prog" race "$dir/r" 400 B $lock & pb=$!
        wait $pa; ra=$?; wait $pb; rb=$?
        [ $ra = 0 ] && [ $rb = 0 ] || { cat "$DK_MNT/a.json"; echo "FAIL: race with lock=$lock (A exit $ra, B exit $rb)"; fail=1; continue; }
        d=$(counter "$DK_MNT/a.json" strict_delta)
        echo "ok: two processes x 400 rewrites of one page, lock=$lock: A's delta records ${d:-?}"
        # review29 #9: a delta only under the program's record lock -- without one, whole writes as before
        if [ "$lock" = 1 ] && [ "${d:-0}" -lt 100 ]; then echo "FAIL: under the lock A logged ${d:-0} delta records"; fail=1; fi
        if [ "$lock" = 0 ] && [ "${d:-1}" != 0 ]; then echo "FAIL: without a lock A logged ${d:-?} delta records"; fail=1; fi
    done ;;
*) dk_fail "unknown case $what" ;;
esac
[ $fail = 0 ] || exit 1
echo "ok: delta $what"
