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
for rep in $(seq 1 "${REPS:-3}"); do
    for bs in ${SIZES:-128 1024 4096 65536}; do
        for every in ${EVERY:-1 10}; do
            ops=50000
            [ "$bs" -lt 65536 ] || ops=10000
            line="rep $rep bs $bs every $every"
            for b in $builds; do
                for pace in 1 0; do
                    rm -rf "$dir" && mkdir -p "$dir"
                    cpu=$(env DK_BENCH_SETTLE=1 DAXKIT_ATOMIC_PACE=$pace LD_PRELOAD="${b#*=}/lib/libdaxkit.so" DAXKIT_DIR="$dir" \
                        "DAXKIT_ATOMIC=$dir/*" "${b#*=}/bin/dk_bench_fsync_writes" "$dir" posix-atomic "$bs" $ops \
                        "$every" 64 "$rep" 2>/dev/null | awk -F, '{ print $6 "/" $15 }')
                    line="$line | ${b%%=*} pace $pace: $cpu"
                done
            done
            if [ "$bs" = 128 ] && [ "$every" = 10 ]; then
                for warm in 0 ${STRICT_WARM_OPS:-}; do
                    rm -rf "$dir" && mkdir -p "$dir"
                    cpu=$(env DK_BENCH_SETTLE=1 DK_BENCH_WARM_OPS=$warm LD_PRELOAD="$BUILD/lib/libdaxkit.so" DAXKIT_DIR="$dir" \
                        DAXKIT_MODE=strict "$BUILD/bin/dk_bench_fsync_writes" "$dir" posix-strict "$bs" $ops "$every" 64 "$rep" \
                        2>/dev/null | awk -F, '{ print $6 "/" $15 }')
                    line="$line | new strict${warm#0}: $cpu"
                done
            fi
            echo "$line"
        done
    done
done
echo "load after: $(uptime)"
