#!/usr/bin/env bash
# Issue 4 T3 swept finely: the C API's sync after N 128 B copies into N blocks (dk_bench_atomic_synccost,
# median ns of SYNCS syncs) for many N, this build against another (and against itself under test-build
# variables), interleaved in every round, on a fresh huge-page tmpfs with DAXKIT_PERSIST=flush (the dax code
# path: an EMULATION of persistent memory). Session 21: the table's 1 / 10 / 100 / 1,000 blocks missed the
# journal's peak (2.37x at 29 blocks) and sample 1,000 at one phase of the owed-line hand-outs (997 and 1,001
# were 1.3-1.4x where 1,000 was 1.05x).
#   bench/atomic_sync_curve.sh BUILD [BASE_BUILD]
# Env: ROUNDS [3], POLICY [journal] (undo, redo, kernel; a list, e.g. "undo redo kernel": each variant runs
# each, cells named variant/policy), BYTES [128] (the copies' size; 4096: whole blocks), SYNCS [300], NS [the list below], VARIANTS: more runs of BUILD,
# "name:VAR=V,VAR=V ..." (e.g. "from1024:DAXKIT_TEST_ATOMIC_JOWED_FROM=1024"), CONTROL=1: every cell also
# runs as CELL~ctl with DK_BENCH_SYNC_CONTROL=1 -- a 1-block sync after the same N copies, N - 1 of them into
# another file: the same cache state (session 22; the T3 row of docs/atomic.md says what each ratio means).
# Prints one line per round and N, then the median per cell and N, and each cell's worst N against its
# 1-block figure (the first N: the raw ratio); with CONTROL, each cell's N-block figure against its ~ctl
# one at the same N (the sync's own growth). Print `uptime` with it (it is printed before and after).
set -euo pipefail
BUILD=$(cd "${1:?usage: atomic_sync_curve.sh BUILD [BASE_BUILD]}" && pwd)
BASE=${2:+$(cd "$2" && pwd)}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_SRC=$SRC DAXKIT_BUILD=$BUILD
. "$SRC/tests/harness/media.sh"
dk_need_root
dk_media_mount hugetmpfs 1G >/dev/null
export DAXKIT_PERSIST=flush
NS=${NS:-1 2 4 8 10 11 12 16 20 24 29 32 64 100 997 998 999 1000 1001 1002 1003}
variants="new:${BASE:+ base:} ${VARIANTS:-}"
policies=${POLICY:-journal}
controls="0${CONTROL:+ 1}"
[ -z "$BASE" ] || [ "${BYTES:-128}" = 128 ] || dk_fail "BYTES: BASE_BUILD's binary may copy 128 B whatever it says"
[ "${CONTROL:-0}" = 0 ] && controls=0
out=$(mktemp /tmp/atomic_sync_curve.XXXXXX)
dk_on_exit "rm -f '$out'"
echo "load before: $(uptime)"
for round in $(seq 1 "${ROUNDS:-3}"); do
    for n in $NS; do
        line="round $round N $n"
        for v in $variants; do
            for policy in $policies; do
                for ctl in $controls; do
                    name=${v%%:*} vars=${v#*:}
                    [ "$name:$ctl" = base:1 ] && continue # BASE_BUILD's binary may predate the control
                    b=$BUILD
                    [ "$name" = base ] && b=$BASE
                    cell=$name
                    [ "$policies" = "${policies% *}" ] || cell=$name/$policy
                    [ "$ctl" = 0 ] || cell=$cell~ctl
                    rm -rf "$DK_MNT/d" && mkdir -p "$DK_MNT/d"
                    ns=$(env ${vars//,/ } DK_BENCH_SYNCS="${SYNCS:-300}" DK_BENCH_SYNC_CONTROL="$ctl" DK_BENCH_SYNC_BYTES="${BYTES:-128}" \
                        "$b/bin/dk_bench_atomic_synccost" "$DK_MNT/d" "$n" "$policy" | awk '{ print $NF }')
                    line="$line | $cell $ns"
                done
            done
        done
        echo "$line" | tee -a "$out"
    done
done
echo "load after: $(uptime)"
python3 - "$out" <<'PY'
import collections, statistics, sys
runs, names, ns = collections.defaultdict(list), [], []
for line in open(sys.argv[1]):
    head, *cells = line.strip().split(' | ')
    n = int(head.split()[3])
    ns += [n] if n not in ns else []
    for cell in cells:
        name, v = cell.split()
        names += [name] if name not in names else []
        runs[name, n].append(float(v))
med = {k: statistics.median(v) for k, v in runs.items()}
print('N       ' + ''.join(f'{x:>10}' for x in names))
for n in ns:
    print(f'{n:<8}' + ''.join(f'{med[x, n]:10.0f}' for x in names))
for x in names:
    worst = max(ns, key=lambda n: med[x, n])
    print(f'{x}: worst {med[x, worst] / med[x, ns[0]]:.2f}x of N={ns[0]}, at N={worst}')
def ratio(a, b):  # median of the per-round ratios (both cells ran in every round, side by side)
    return statistics.median(x / y for x, y in zip(runs[a], runs[b]))
for x in names:  # with CONTROL: raw (N-block over 1-block) and own (N-block over the 1-block sync in its cache state)
    if x + '~ctl' not in names:
        continue
    print(f'{x}: N raw own -- raw: N blocks over {ns[0]}, own: N blocks over {x}~ctl at N (medians of per-round ratios): ' +
          '; '.join(f'{n} {ratio((x, n), (x, ns[0])):.2f}x {ratio((x, n), (x + "~ctl", n)):.2f}x' for n in ns))
PY
