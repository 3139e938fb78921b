#!/usr/bin/env bash
# Description: DAXKIT_LOCK_CACHE=1 (docs/design-lockcache.md) with real SQLite contention. Two sqlite3 processes
# under daxkit insert into one database at once (rollback-mode locking, journal_mode=OFF in strict mode, DELETE
# in posix mode), each pausing 2 ms between transactions (its locks released -- kept in the kernel), with an age
# drop of 10 s: every row of both is there, integrity_check ok, neither hit SQLITE_BUSY past its busy_timeout
# (sqlite3 -bail), and both made progress while the other ran -- each writer has rows written while the other
# was part-way, which only the handoff (the board, the cacher's drop) allows: without it the first writer keeps
# its locks until it ends. Then a sqlite3 without daxkit writes the same database while a daxkit writer (age
# drop 1 ms) runs: it gets the lock within its busy_timeout.
# Usage: sqlite_lockcache.sh MEDIUM [strict|posix]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dk_need_cmd sqlite3 awk
export DK_PROGS_MODE=${2:-strict}
dk_progs_setup "${1:?medium}"
export DAXKIT_LOCK_CACHE=1 DAXKIT_PERSIST=flush
TXNS=${TXNS:-200}
jm=off
[ "$DK_PROGS_MODE" = strict ] || jm=delete

db=$D/lc.db
dkrun sqlite3 "$db" "PRAGMA journal_mode=$jm; CREATE TABLE log(w INTEGER, i INTEGER, at INTEGER, PRIMARY KEY(w, i));" > /dev/null
# each insert records how many rows the other writer had when it ran: progress of both, interleaved
# (both start together: each waits at .shell for the file "go")
for w in 1 2; do
    awk -v w=$w -v n="$TXNS" -v jm=$jm -v go="$DK_MNT/go" 'BEGIN { print "PRAGMA busy_timeout=30000;"; print "PRAGMA journal_mode=" jm ";"
        printf ".shell while [ ! -e %s ]; do sleep 0.01; done\n", go
        for (i = 1; i <= n; i++) printf "INSERT INTO log VALUES(%d, %d, (SELECT count(*) FROM log WHERE w <> %d));\n.shell sleep 0.002\n", w, i, w }' \
        > "$DK_MNT/c$w.sql"
done
DAXKIT_LOCK_CACHE_US=10000000 dkrun sqlite3 -bail "$db" < "$DK_MNT/c1.sql" > /dev/null & p1=$!
DAXKIT_LOCK_CACHE_US=10000000 dkrun sqlite3 -bail "$db" < "$DK_MNT/c2.sql" > /dev/null & p2=$!
sleep 0.5
touch "$DK_MNT/go"
wait $p1 || dk_fail "writer 1 under daxkit failed (SQLITE_BUSY past busy_timeout?)"
wait $p2 || dk_fail "writer 2 under daxkit failed (SQLITE_BUSY past busy_timeout?)"
want="ok $(( 2 * TXNS )) $(( TXNS * (TXNS + 1) ))"
dk_expect_eq "two writers with the lock cache (integrity, rows, sum)" "$want" \
    "$(sqlite3 "$db" 'PRAGMA integrity_check; SELECT count(*), sum(i) FROM log;' | tr '\n|' '  ' | sed 's/ $//')"
# interleaving: rows of each writer taken while the other had some but not all of its rows
for w in 1 2; do
    inter=$(sqlite3 "$db" "SELECT count(*) FROM log WHERE w = $w AND at > 0 AND at < $TXNS;")
    echo "writer $w: $inter of $TXNS rows written while the other writer was part-way"
    [ "$inter" -gt 0 ] || dk_fail "writer $w never ran while the other was part-way: one ran whole first (no handoff?)"
done

# a writer without daxkit, against a daxkit writer that keeps its locks
awk -v n="$TXNS" -v jm=$jm 'BEGIN { print "PRAGMA busy_timeout=30000;"; print "PRAGMA journal_mode=" jm ";"
    for (i = 1; i <= n; i++) printf "INSERT INTO log VALUES(3, %d, 0);\n", i }' > "$DK_MNT/c3.sql"
awk -v n="$TXNS" -v jm=$jm 'BEGIN { print "PRAGMA busy_timeout=30000;"; print "PRAGMA journal_mode=" jm ";"
    for (i = 1; i <= n; i++) printf "INSERT INTO log VALUES(4, %d, 0);\n", i }' > "$DK_MNT/c4.sql"
dkrun sqlite3 -bail "$db" < "$DK_MNT/c4.sql" > /dev/null & p4=$!
t0=$(date +%s%N)
sqlite3 -bail "$db" < "$DK_MNT/c3.sql" > /dev/null || dk_fail "the writer without daxkit failed (SQLITE_BUSY past 30 s)"
t1=$(date +%s%N)
wait $p4 || dk_fail "the daxkit writer beside the kernel writer failed"
echo "the writer without daxkit: $TXNS transactions in $(( (t1 - t0) / 1000000 )) ms"
want="ok $(( 4 * TXNS ))"
dk_expect_eq "with a writer without daxkit (integrity, rows)" "$want" \
    "$(sqlite3 "$db" 'PRAGMA integrity_check; SELECT count(*) FROM log;' | tr '\n|' '  ' | sed 's/ $//')"

# WAL (posix mode): the -shm file's locks take the untracked path (shim/fd.c untracked_lock), cached too
# (review26b #13): two daxkit writers and a reader at once, age drop 1 ms
if [ "$DK_PROGS_MODE" = posix ]; then
    wdb=$D/wal.db
    dkrun sqlite3 "$wdb" "PRAGMA journal_mode=WAL; CREATE TABLE log(w INTEGER, i INTEGER, PRIMARY KEY(w, i));" > /dev/null
    rm -f "$DK_MNT/go"
    for w in 1 2; do
        awk -v w=$w -v n="$TXNS" -v go="$DK_MNT/go" 'BEGIN { print "PRAGMA busy_timeout=30000;"
            printf ".shell while [ ! -e %s ]; do sleep 0.01; done\n", go
            for (i = 1; i <= n; i++) printf "INSERT INTO log VALUES(%d, %d);\n", w, i }' > "$DK_MNT/w$w.sql"
    done
    dkrun sqlite3 -bail "$wdb" < "$DK_MNT/w1.sql" > /dev/null & p1=$!
    dkrun sqlite3 -bail "$wdb" < "$DK_MNT/w2.sql" > /dev/null & p2=$!
    sleep 0.3
    touch "$DK_MNT/go"
    for i in 1 2 3 4 5; do dkrun sqlite3 "$wdb" "PRAGMA busy_timeout=30000; SELECT count(*) FROM log;" > /dev/null; done
    wait $p1 || dk_fail "WAL writer 1 under daxkit failed"
    wait $p2 || dk_fail "WAL writer 2 under daxkit failed"
    dk_expect_eq "two WAL writers with the lock cache (integrity, rows, sum)" "ok $(( 2 * TXNS )) $(( TXNS * (TXNS + 1) ))" \
        "$(sqlite3 "$wdb" 'PRAGMA integrity_check; SELECT count(*), sum(i) FROM log;' | tr '\n|' '  ' | sed 's/ $//')"
fi
echo "PASS"
