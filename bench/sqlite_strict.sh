#!/usr/bin/env bash
# SQLite commits under strict mode with SQLite's own journal off against SQLite WAL on the kernel path (issue
# 3, target 3), variants interleaved run by run on one huge tmpfs. Per run: the process's CPU time (perf stat
# -e task-clock: user + system of sqlite3 and everything it runs; also split into user_time and system_time)
# and wall time, per transaction.
#   kernel-wal   sqlite3 alone, journal_mode=WAL, synchronous=FULL
#   kernel-off   sqlite3 alone, journal_mode=OFF (no crash guarantee at all: reference only)
#   strict-off   daxkit run --mode strict --persist flush --append stage, journal_mode=OFF, both caches off
#                (DAXKIT_LOCK_CACHE=0 DAXKIT_ABSENT_CACHE=0; the absent-name cache is on by default since session 29)
#   strict-ab-off  strict-off with DAXKIT_ABSENT_CACHE=1 -- the defaults since session 29 (the lock cache opt-in)
#   strict-lc-off  strict-off with DAXKIT_LOCK_CACHE=1, DAXKIT_ABSENT_CACHE=0 (released record locks kept in the kernel: no lock system
#                call a transaction once warm; docs/design-lockcache.md)
#   strict-lcab-off  strict-lc-off with DAXKIT_ABSENT_CACHE=1 too (SQLite's stats of its absent -journal and -wal
#                answered from memory while an inotify watch saw nothing: upath/absent.c, session 28)
#   atomic-off   daxkit run --mode posix --persist flush --atomic 'DIR/*.db', journal_mode=OFF (each fsync-to-fsync
#                group of writes all or nothing: DAXKIT_ATOMIC, docs/atomic.md)
#   strict-atomic-off  daxkit run --mode strict --persist flush --atomic 'DIR/*.db' --atomic-commit fsync,
#                journal_mode=OFF (session 9: strict mode, the database committed as fsync-to-fsync groups --
#                the configuration with SQLite's crash guarantee, docs/strict.md)
# sync-*, atomic-* and strict-atomic-* run with the library's defaults (both caches on since session 29).
# The strict rows use DAXKIT_PERSIST=flush (emulated DAX persistence: every transaction durable and all or
# nothing when it commits); the kernel's fdatasync on tmpfs makes nothing durable -- say so when quoting.
# Usage: bench/sqlite_strict.sh BUILD_DIR [OUT_CSV]
# A variant named NAME@base runs NAME with the library BASE_LIB (DAXKIT_LIB), in the same interleaved run:
#   BASE_LIB=/path/libdaxkit.so VARIANTS="kernel-wal strict-off strict-off@base" bench/sqlite_strict.sh BUILD
# Environment: N (20000 transactions), REPS (3), VARIANTS ("kernel-wal kernel-off strict-off"),
#              LOCKING (normal | exclusive), STRACE=1 (also count system calls per transaction, 2,000 txns),
#              EXTRA_ENV (extra VAR=VALUE words for the daxkit variants, e.g. DAXKIT_STRICT_APPLY=write).
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
OUT=${2:-/dev/null}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
dk_need_cmd sqlite3 perf awk
N=${N:-20000}
REPS=${REPS:-3}
VARIANTS=${VARIANTS:-"kernel-wal kernel-off strict-off"}
LOCKING=${LOCKING:-normal}
CLI=$BUILD/bin/daxkit
dk_media_mount hugetmpfs 2G > /dev/null
[ -s "$OUT" ] || [ "$OUT" = /dev/null ] || echo "variant,locking,txns,cpu_ms,wall_ms,cpu_us_per_txn,rep,load1,user_us_per_txn,sys_us_per_txn" > "$OUT"

prefix() {  # VARIANT DIR -> the command prefix in PFX and its variables in ENVV (VARIANT@base: with BASE_LIB)
    # The variables are put in the environment of the measuring command (perf stat), not by an `env` exec in
    # front of `daxkit run`: that exec was the bench's, not the product's (~1.2 ms of CPU a run, session 29).
    PFX=()
    ENVV=()
    case $1 in *@base) ENVV=("DAXKIT_LIB=${BASE_LIB:?VARIANT@base needs BASE_LIB}") ;; esac
    case ${1%@base} in
    kernel-*) ;;
    strict-atomic-*) ENVV+=(${EXTRA_ENV:-}); PFX=("$CLI" run --mode strict --dir "$2" --append stage --persist flush
                          --atomic "$2/*.db" --atomic-commit fsync --) ;;
    strict-lcab-*) ENVV+=(DAXKIT_LOCK_CACHE=1 DAXKIT_ABSENT_CACHE=1 ${EXTRA_ENV:-})
                   PFX=("$CLI" run --mode strict --dir "$2" --append stage --persist flush --) ;;
    strict-ab-*) ENVV+=(DAXKIT_LOCK_CACHE=0 DAXKIT_ABSENT_CACHE=1 ${EXTRA_ENV:-})
                 PFX=("$CLI" run --mode strict --dir "$2" --append stage --persist flush --) ;;
    strict-lc-*) ENVV+=(DAXKIT_LOCK_CACHE=1 DAXKIT_ABSENT_CACHE=0 ${EXTRA_ENV:-}); PFX=("$CLI" run --mode strict --dir "$2" --append stage
                      --persist flush --) ;;
    strict-*) ENVV+=(DAXKIT_LOCK_CACHE=0 DAXKIT_ABSENT_CACHE=0 ${EXTRA_ENV:-}); PFX=("$CLI" run --mode strict --dir "$2" --append stage --persist flush --) ;;
    sync-*) ENVV+=(${EXTRA_ENV:-}); PFX=("$CLI" run --mode sync --dir "$2" --append stage --persist flush --) ;;
    atomic-*) ENVV+=(${EXTRA_ENV:-}); PFX=("$CLI" run --mode posix --dir "$2" --atomic "$2/*.db" --persist flush --) ;;
    *) dk_fail "unknown variant $1" ;;
    esac
}
journal() { case ${1%@base} in *-wal) echo wal ;; *) echo off ;; esac; }

setup() {  # VARIANT N -> $DK_MNT/VARIANT with an empty table and the insert script
    local v=$1 n=$2 d=$DK_MNT/$1 j
    j=$(journal "$v")
    rm -rf "$d" && mkdir -p "$d"
    prefix "$v" "$d"
    printf 'PRAGMA journal_mode=%s;\nCREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);\n' "$j" |
        env "${ENVV[@]}" "${PFX[@]}" sqlite3 "$d/x.db" > /dev/null
    awk -v m="$j" -v n="$n" -v l="$LOCKING" 'BEGIN { print "PRAGMA journal_mode=" m ";"
        print "PRAGMA synchronous=FULL;"; print "PRAGMA locking_mode=" l ";"
        for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$d/i.sql"
}

check() {  # VARIANT N: every row committed, the database intact
    local d=$DK_MNT/$1 got
    got=$(sqlite3 "$d/x.db" 'PRAGMA integrity_check; SELECT count(*) FROM t;' | tr '\n' ' ')
    [ "$got" = "ok $2 " ] || dk_fail "$1: after the run the database says '$got' (expected 'ok $2')"
}

echo "bench/sqlite_strict: N=$N REPS=$REPS LOCKING=$LOCKING variants: $VARIANTS; $(uptime)" >&2
printf '%-17s %4s %10s %10s %12s %12s %6s %10s %10s\n' variant rep cpu_ms wall_ms cpu_us/txn wall_us/txn load user_us sys_us >&2
for rep in $(seq 1 "$REPS"); do
    for v in $VARIANTS; do
        setup "$v" "$N"
        d=$DK_MNT/$v
        prefix "$v" "$d"
        load=$(cut -d' ' -f1 /proc/loadavg)
        t0=$(date +%s%N)
        read -r cpu usr sys < <(env "${ENVV[@]}" perf stat -x, -e task-clock,user_time,system_time -- "${PFX[@]}" sqlite3 "$d/x.db" \
              < "$d/i.sql" 2>&1 > /dev/null | awk -F, '$3 ~ /^task-clock/ { c = $1 } $3 ~ /^user_time/ { u = $1 }
              $3 ~ /^system_time/ { s = $1 } END { print c, (u == "" ? -1 : u / 1e6), (s == "" ? -1 : s / 1e6) }')
        t1=$(date +%s%N)
        check "$v" "$N"
        wall=$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", ns / 1e6 }')
        awk -v v="$v" -v r="$rep" -v c="$cpu" -v w="$wall" -v n="$N" -v l="$load" -v u="$usr" -v s="$sys" 'BEGIN {
            printf "%-17s %4d %10.1f %10.1f %12.2f %12.2f %6s %10.2f %10.2f\n", v, r, c, w, c * 1000 / n, w * 1000 / n, l,
                   u * 1000 / n, s * 1000 / n }' >&2
        echo "$v,$LOCKING,$N,$cpu,$wall,$(awk -v c="$cpu" -v n="$N" -v u="$usr" -v s="$sys" 'BEGIN {
            printf "%.2f", c * 1000 / n }'),$rep,$load,$(awk -v u="$usr" -v s="$sys" -v n="$N" 'BEGIN {
            printf "%.2f,%.2f", u * 1000 / n, s * 1000 / n }')" >> "$OUT"
    done
done

if [ "${STRACE:-0}" = 1 ]; then
    dk_need_cmd strace
    sn=2000
    for v in $VARIANTS; do
        setup "$v" "$sn"
        d=$DK_MNT/$v
        prefix "$v" "$d"
        env "${ENVV[@]}" "${PFX[@]}" strace -f -c -o "$d/strace.txt" sqlite3 "$d/x.db" < "$d/i.sql" > /dev/null
        echo "== $v: system calls per transaction ($sn transactions, start-up included)" >&2
        awk -v n="$sn" '$NF ~ /^[a-z_0-9]+$/ && $1 ~ /^[0-9.]+$/ && $NF != "total" {
            calls = ($5 ~ /^[0-9]+$/ && NF == 6) ? $4 : $4; err = (NF == 6) ? $5 : 0
            if (calls / n >= 0.01) printf "  %-16s %7.2f  (errors %.2f)\n", $NF, calls / n, err / n }' "$d/strace.txt" >&2
    done
fi
