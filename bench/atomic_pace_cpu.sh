#!/usr/bin/env bash
# CPU per write (all threads) of DAXKIT_ATOMIC's journal through the POSIX path: pacing (DAXKIT_ATOMIC_PACE=1)
# against the checkpoint thread (=0), for this build and optionally another (A/B), interleaved in every
# repetition; with strict mode once at 128 B / fsync every 10 (issue 4's 3x-strict target). On a fresh
# huge-page tmpfs with DAXKIT_PERSIST=flush (the dax code path: an EMULATION of persistent memory).
#   bench/atomic_pace_cpu.sh BUILD [BASE_BUILD]   Env: REPS [3], SIZES [128 1024 4096 65536], EVERY [1 10]
# Prints one line per repetition, size and fsync interval: CPU ns per write of each build x pacing, as
# PASS/CLOSE: the pass only (dk_bench_fsync_writes' column 6) / the pass through the close (column 15: the
# records the pass left unapplied -- the journal applies 128 B records only at a quarter full or at the close --
# applied and counted). Every run waits for the process's CPU to settle first (DK_BENCH_SETTLE=1: the 64 MiB
# written to make the file are applied by background threads -- atomic's checkpoint thread, strict's -- which
# before session 11 ran into the measured pass at random: strict 476-798 ns per 128 B write in the lead's
# session-10 run, 488-693 unsettled against 494-553 settled in one of ours). Print `uptime` with it (it is
# printed before and after). STRICT_WARM_OPS [none]: strict runs a second time ("strictN"), first making N writes unmeasured
# (DK_BENCH_WARM_OPS): its log's first lap is populated 2 MiB at a time inside the writes that reach each step,
# which on this VM cost 0.1-0.4 ms or 5-30 ms per step (session 19: strict's bimodal 668 vs 1,200+ ns per
# write); 100000 puts the pass past that lap (records of 128 B take 256 B of the 16 MiB log: a lap is ~65,000)
# and its second lap's end (one checkpoint) inside the pass. The journal's log is populated at its open.
# NOCLOCK [1]: at 128 B / fsync every 10 each build's journal (pace 1) and strict (each warm setting) run once
# more with DK_BENCH_NO_OP_CLOCK=1 -- the pass without the benchmark's two clock reads per write and per fsync,
# which the figures above include for every variant --, printed as "noclock: PASS/CLOSE CPU ns per write, writes
# per second from the pass's start through the close"; then one "T2" line per repetition: strict's CPU through the
# close over the journal's (the last strict setting's, the target's measure), with and without the clock reads,
# and the no-clock writes/s ratio. `0` leaves them out.
set -euo pipefail
BUILD=$(cd "${1:?usage: atomic_pace_cpu.sh BUILD [BASE_BUILD]}" && pwd)
BASE=${2:+$(cd "$2" && pwd)}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_SRC=$SRC DAXKIT_BUILD=$BUILD
. "$SRC/tests/harness/media.sh"
dk_need_root
dk_media_mount hugetmpfs 2G >/dev/null
export DAXKIT_PERSIST=flush
dir=$DK_MNT/bench
builds="new=$BUILD${BASE:+ base=$BASE}"
echo "load before: $(uptime)"
# One run: BUILD VARIANT BS OPS EVERY [ENV...] -> "PASS/CLOSE" CPU ns per write; with DK_BENCH_NO_OP_CLOCK=1
# in ENV also " N/s" (writes per second through the close). BUILD's library under this build's benchmark binary:
# the libraries are what is compared (an older build's binary may not know DK_BENCH_NO_OP_CLOCK).
run() {
    local b=$1 v=$2 bs=$3 n=$4 every=$5
    shift 5
    rm -rf "$dir" && mkdir -p "$dir"
    env DK_BENCH_SETTLE=1 "$@" LD_PRELOAD="$b/lib/libdaxkit.so" DAXKIT_DIR="$dir" "$BUILD/bin/dk_bench_fsync_writes" \
        "$dir" "$v" "$bs" "$n" "$every" 64 "$rep" 2>/dev/null |
        awk -F, -v nc="$(printf '%s\n' "$@" | grep -c '^DK_BENCH_NO_OP_CLOCK=1$' || true)" \
            '{ printf "%s/%s%s\n", $6, $15, (nc > 0 ? " " $17 "/s" : "") }'
}
close_cpu() { sed 's/^[^/]*\///; s/ .*//' <<<"$1"; } # "PASS/CLOSE[ N/s]" -> CLOSE
ratios() { # STRICT JOURNAL STRICT_NOCLOCK JOURNAL_NOCLOCK (run's outputs) -> the T2 ratios
    awk -v s="$(close_cpu "$1")" -v j="$(close_cpu "$2")" -v sn="$(close_cpu "$3")" -v jn="$(close_cpu "$4")" \
        -v sr="${3##* }" -v jr="${4##* }" 'BEGIN { printf "CPU through the close %.2fx, no clock %.2fx, writes/s no clock %.2fx",
                                                   s / j, sn / jn, (jr + 0) / (sr + 0) }'
}
declare -A paced noclock
for rep in $(seq 1 "${REPS:-3}"); do
    for bs in ${SIZES:-128 1024 4096 65536}; do
        for every in ${EVERY:-1 10}; do
            ops=50000
            [ "$bs" -lt 65536 ] || ops=10000
            line="rep $rep bs $bs every $every"
            for b in $builds; do
                for pace in 1 0; do
                    r=$(run "${b#*=}" posix-atomic "$bs" $ops "$every" DAXKIT_ATOMIC_PACE=$pace "DAXKIT_ATOMIC=$dir/*")
                    line="$line | ${b%%=*} pace $pace: $r"
                    [ $pace = 0 ] || paced[${b%%=*}]=$r
                done
            done
            if [ "$bs" = 128 ] && [ "$every" = 10 ]; then
                for warm in 0 ${STRICT_WARM_OPS:-}; do
                    strict=$(run "$BUILD" posix-strict "$bs" $ops "$every" DK_BENCH_WARM_OPS=$warm DAXKIT_MODE=strict)
                    line="$line | new strict${warm#0}: $strict"
                done
                if [ "${NOCLOCK:-1}" = 1 ]; then
                    for b in $builds; do
                        noclock[${b%%=*}]=$(run "${b#*=}" posix-atomic "$bs" $ops "$every" DK_BENCH_NO_OP_CLOCK=1 \
                            DAXKIT_ATOMIC_PACE=1 "DAXKIT_ATOMIC=$dir/*")
                        line="$line | ${b%%=*} pace 1 noclock: ${noclock[${b%%=*}]}"
                    done
                    for warm in 0 ${STRICT_WARM_OPS:-}; do
                        strict_nc=$(run "$BUILD" posix-strict "$bs" $ops "$every" DK_BENCH_NO_OP_CLOCK=1 \
                            DK_BENCH_WARM_OPS=$warm DAXKIT_MODE=strict)
                        line="$line | new strict${warm#0} noclock: $strict_nc"
                    done
                    line="$line
T2 rep $rep, strict${STRICT_WARM_OPS:-} over the journal (pace 1):"
                    for b in $builds; do
                        line="$line ${b%%=*}: $(ratios "$strict" "${paced[${b%%=*}]}" "$strict_nc" "${noclock[${b%%=*}]}");"
                    done
                fi
            fi
            echo "$line"
        done
    done
done
echo "load after: $(uptime)"
