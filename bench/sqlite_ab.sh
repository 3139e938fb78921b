#!/usr/bin/env bash
# SQLite commits, the CPU of sqlite3 alone: the kernel's path against one or more daxkit libraries, interleaved
# run by run (REPS rounds, each variant once a round, in the listed order) on one fresh directory of one medium
# per run -- issue 2's "sqlite3 commits" row. Per run: `perf stat -e task-clock` of sqlite3 itself (user + system,
# the library inside it; no launcher process: LD_PRELOAD and DAXKIT_DIR are set directly), N single-INSERT
# transactions with synchronous=FULL. The estimator of session 25 (wal25's ab.sh), made a script in session 26:
# a run's CPU on a loaded machine is noisy by tens of percent, a round's variants see the same load, and the
# first quartile and the mean of the lowest quarter of each variant resolve ~1% where medians of a few runs do not.
#
#   kernel          sqlite3 alone on the kernel's path
#   PATH.so         sqlite3 with that library (DAXKIT_MODE, default posix; EXTRA_ENV added)
#   NAME=PATH.so    the same, named NAME in the tables (e.g. base=/work/notes/s26/base-8195f1d-libdaxkit.so)
#
# Usage: bench/sqlite_ab.sh BUILD_DIR [OUT_DIR]
#   OUT_DIR (default bench/results/sqlite_ab, as `make bench` PARTS=sqlite_ab): sqlite_ab.csv (one row a run),
#   summary.md (bench/sqlite_ab_summary.py: per variant n, min, first quartile, median, mean of the lowest quarter, us a
#   transaction, and each one's ratio to the kernel's), sqlite_ab.png (the runs' us a transaction by variant, when
#   matplotlib is installed).
# Environment: REPS (15), N (2000), VARIANTS ("kernel daxkit=BUILD_DIR/lib/libdaxkit.so"), MEDIUM (hugetmpfs:
#   tests/harness/media.sh's names), JOURNAL (wal | delete | truncate | off ...: wal), MODE (posix),
#   EXTRA_ENV (VAR=VALUE words for the daxkit variants), STRACE=1 (then system calls a transaction per variant,
#   one more run each), KEEP_CSV=1 (append to an existing CSV instead of starting it again).
# Example (session 26, the before/after figure): base library, this build's, the kernel:
#   REPS=21 VARIANTS="kernel base=/work/notes/s26/base-8195f1d-libdaxkit.so daxkit=BUILD/lib/libdaxkit.so" \
#     bench/sqlite_ab.sh BUILD
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${2:-$SRC/bench/results/sqlite_ab}
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
dk_need_cmd sqlite3 perf awk
REPS=${REPS:-15}
N=${N:-2000}
VARIANTS=${VARIANTS:-"kernel daxkit=$BUILD/lib/libdaxkit.so"}
MEDIUM=${MEDIUM:-hugetmpfs}
JOURNAL=${JOURNAL:-wal}
MODE=${MODE:-posix}
mkdir -p "$OUT"
CSV=$OUT/sqlite_ab.csv
[ "${KEEP_CSV:-0}" = 1 ] && [ -s "$CSV" ] ||
    echo "variant,lib,medium,journal,mode,txns,rep,cpu_ms,us_per_txn,load1" > "$CSV"

names=() libs=()
for v in $VARIANTS; do
    case $v in
    kernel) names+=(kernel) libs+=("") ;;
    *=*) names+=("${v%%=*}") libs+=("${v#*=}") ;;
    *) names+=("$(basename "$v" .so)") libs+=("$v") ;;
    esac
    lib=${libs[${#libs[@]}-1]}
    [ -z "$lib" ] || [ -f "$lib" ] || dk_fail "no library $lib (variant $v)"
done
dk_media_mount "$MEDIUM" 1G > /dev/null

SQL=$DK_MNT/commits.sql
awk -v n="$N" -v j="$JOURNAL" 'BEGIN { print "PRAGMA journal_mode=" j ";"; print "PRAGMA synchronous=FULL;"
    print "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
    for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$SQL"

envs() {  # LIB DIR -> the environment of a run in ENVS
    ENVS=()
    [ -n "$1" ] && ENVS=(LD_PRELOAD="$1" DAXKIT_DIR="$2" DAXKIT_MODE="$MODE" ${EXTRA_ENV:-})
    return 0
}

check() {  # NAME DIR: every row committed, the database intact
    local got
    got=$(sqlite3 "$2/t.db" 'PRAGMA integrity_check; SELECT count(*) FROM t;' | tr '\n' ' ')
    [ "$got" = "ok $N " ] || dk_fail "$1: after the run the database says '$got' (expected 'ok $N')"
}

echo "bench/sqlite_ab: N=$N REPS=$REPS MEDIUM=$MEDIUM JOURNAL=$JOURNAL MODE=$MODE variants: ${names[*]}; $(uptime)" >&2
for rep in $(seq 1 "$REPS"); do
    for i in "${!names[@]}"; do
        d=$DK_MNT/run
        rm -rf "$d" && mkdir -p "$d"
        envs "${libs[$i]}" "$d"
        load=$(cut -d' ' -f1 /proc/loadavg)
        cpu=$(env "${ENVS[@]}" perf stat -x, -e task-clock -- sqlite3 "$d/t.db" < "$SQL" 2>&1 > /dev/null |
              awk -F, '$3 ~ /^task-clock/ { print $1 }')
        [ -n "$cpu" ] || dk_fail "${names[$i]}: perf stat gave no task-clock"
        check "${names[$i]}" "$d"
        echo "${names[$i]},${libs[$i]:-kernel},$MEDIUM,$JOURNAL,$MODE,$N,$rep,$cpu,$(awk -v c="$cpu" -v n="$N" \
              'BEGIN { printf "%.3f", c * 1000 / n }'),$load" >> "$CSV"
    done
    printf '  round %d of %d done (load %s)\n' "$rep" "$REPS" "$(cut -d' ' -f1 /proc/loadavg)" >&2
done
rm -rf "$DK_MNT/run"

if [ "${STRACE:-0}" = 1 ]; then
    dk_need_cmd strace
    for i in "${!names[@]}"; do
        d=$DK_MNT/run
        rm -rf "$d" && mkdir -p "$d"
        envs "${libs[$i]}" "$d"
        env "${ENVS[@]}" strace -f -c -o "$OUT/strace-${names[$i]}.txt" sqlite3 "$d/t.db" < "$SQL" > /dev/null
        echo "== ${names[$i]}: system calls a transaction ($N transactions, start-up included)" >&2
        awk -v n="$N" '$1 ~ /^[0-9.]+$/ && $NF ~ /^[a-z_0-9]+$/ && $NF != "total" && $4 / n >= 0.05 {
            printf "  %-16s %7.2f\n", $NF, $4 / n }' "$OUT/strace-${names[$i]}.txt" >&2
    done
    rm -rf "$DK_MNT/run"
fi

PY=/usr/bin/python3
[ -x $PY ] || PY=python3
$PY "$SRC/bench/sqlite_ab_summary.py" "$CSV" "$OUT/sqlite_ab.png" | tee "$OUT/summary.md"
