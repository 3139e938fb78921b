#!/usr/bin/env bash
# What the in-flight registry's check costs at a lock call (session 14, src/upath/inflight.c): two libraries
# side by side on SQLite commits under strict mode (journal_mode=OFF, synchronous=FULL, ~9 lock calls per
# transaction: sqlite3's fcntl locks on the database), in a directory on a huge tmpfs, DAXKIT_PERSIST=flush:
#   1. instructions (callgrind; Ir(2N txns) - Ir(N txns) over N: the set-up cancels out), whole process and
#      inside the shim's fcntl/fcntl64 (--toggle-collect='fcntl*': the lock calls with their kernel call's libc
#      wrapper; strace -c counts the fcntl calls per transaction) and inside the registry check alone
#      (up_inflight_after_lock; 0 for a library without it);
#   2. REPS interleaved runs (A, B, A, B, ...) of NW transactions: CPU time (perf stat task-clock) per
#      transaction, medians.
#   bench/inflight_lock_cost.sh BUILD_DIR LIB_A LIB_B     Env: N [2000], NW [20000], REPS [7], CALLGRIND [1]
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd); A=${2:?library A}; C=${3:?library B}
N=${N:-2000}; NW=${NW:-20000}; REPS=${REPS:-7}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$B DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
dk_need_cmd sqlite3 perf valgrind strace
dk_media_mount hugetmpfs 2G > /dev/null
CLI=$B/bin/daxkit
setup() { # N -> $DK_MNT/db with an empty table, $DK_MNT/i.sql with N inserts (one transaction each)
    rm -rf "$DK_MNT/db"; mkdir -p "$DK_MNT/db"
    printf 'PRAGMA journal_mode=off;\nCREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);\n' |
        DAXKIT_LIB=$A "$CLI" run --mode strict --dir "$DK_MNT/db" --persist flush -- sqlite3 "$DK_MNT/db/x.db" > /dev/null
    awk -v n="$1" 'BEGIN { print "PRAGMA journal_mode=off;"; print "PRAGMA synchronous=FULL;"
        for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$DK_MNT/i.sql"
}
under() { # LIB CMD...: CMD under daxkit strict with library LIB
    local lib=$1; shift
    DAXKIT_LIB=$lib "$CLI" run --mode strict --dir "$DK_MNT/db" --persist flush -- "$@"
}
echo "load: $(uptime)"
setup "$N"
locks=$(under "$A" strace -f -c -e trace=fcntl sqlite3 "$DK_MNT/db/x.db" < "$DK_MNT/i.sql" 2>&1 >/dev/null |
        awk '$NF == "fcntl" {print $4}')
echo "fcntl calls (all commands) for $N transactions: $locks"
for L in $([ "${CALLGRIND:-1}" = 1 ] && echo "$A $C"); do
    for scope in all fcntl check; do
        ir=()
        for n in $N $((2 * N)); do
            setup "$n"
            tg=(); [ $scope = fcntl ] && tg=(--toggle-collect='fcntl*')
            [ $scope = check ] && tg=(--toggle-collect=up_inflight_after_lock)
            ir+=("$(under "$L" valgrind --tool=callgrind --callgrind-out-file=/dev/null "${tg[@]}" sqlite3 "$DK_MNT/db/x.db" \
                    < "$DK_MNT/i.sql" 2>&1 >/dev/null | awk '/Collected/ {print $4}')")
        done
        echo "instructions_per_txn,$scope,$L,$(((ir[1] - ir[0]) / N))"
    done
done
declare -A cpu=(["$A"]="" ["$C"]="")
for rep in $(seq 1 "$REPS"); do
    for L in "$A" "$C"; do
        setup "$NW"
        ms=$(under "$L" perf stat -x, -e task-clock -- sqlite3 "$DK_MNT/db/x.db" < "$DK_MNT/i.sql" 2>&1 >/dev/null |
             awk -F, '$3 ~ /^task-clock/ {print $1}')
        cpu[$L]+="$ms "
        echo "run,$rep,$L,cpu_ms=$ms,load=$(cut -d' ' -f1 /proc/loadavg)"
    done
done
for L in "$A" "$C"; do
    echo "cpu_us_per_txn_median,$L,$(echo ${cpu[$L]} | tr ' ' '\n' | sort -g | awk -v n="$NW" '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)] * 1000 / n}')"
done
echo "load: $(uptime)"
