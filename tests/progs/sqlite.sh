#!/usr/bin/env bash
# Description: sqlite3 under daxkit (WAL and rollback journal): the same committed transactions run through
# the kernel and under daxkit must leave databases with identical content (.dump), integrity_check ok when
# read back both through the kernel and under daxkit; and two sqlite3 processes writing one database at
# once under daxkit (file locks are publish points) must lose no transaction.
# Usage: sqlite.sh MEDIUM (hugetmpfs|tmpfs|xfs|ext4)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dk_need_cmd sqlite3 awk sha256sum
dk_progs_setup "${1:?medium}"

TXNS=${TXNS:-400}
gen() {  # JOURNAL_MODE TXNS SEED
    awk -v mode="$1" -v n="$2" -v seed="$3" 'BEGIN {
        print "PRAGMA journal_mode=" mode ";"
        print "PRAGMA synchronous=FULL;"
        print "PRAGMA busy_timeout=20000;"
        print "CREATE TABLE IF NOT EXISTS kv(k INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
        s = seed
        for (t = 1; t <= n; t++) {
            s = (s * 1103515245 + 12345) % 2147483648; k = s % 300
            print "BEGIN IMMEDIATE;"
            printf "INSERT INTO kv VALUES(%d, \"%s-%d\", 1) ON CONFLICT(k) DO UPDATE SET n = n + 1, v = v || \"+\";\n", k, seed, t
            if (t % 7 == 0) printf "INSERT INTO kv VALUES(%d, zeroblob(%d), 0) ON CONFLICT(k) DO UPDATE SET v = randomblob(0) || v;\n", 1000 + t, 100 + (s % 9000)
            if (t % 50 == 0) printf "DELETE FROM kv WHERE k %% 11 = %d;\n", t % 11
            print "COMMIT;"
        }
    }'
}
digest() { sqlite3 "$1" 'PRAGMA integrity_check;' && sqlite3 "$1" .dump | sha256sum | cut -c1-32; }
digest_dk() { dkrun sqlite3 "$1" 'PRAGMA integrity_check;' && dkrun sqlite3 "$1" .dump | sha256sum | cut -c1-32; }

for mode in wal delete; do
    gen "$mode" "$TXNS" 1 > "$DK_MNT/w.sql"
    sqlite3 -bail "$K/$mode.db" < "$DK_MNT/w.sql" > /dev/null || dk_fail "kernel sqlite3 ($mode) failed"
    dkrun sqlite3 -bail "$D/$mode.db" < "$DK_MNT/w.sql" > /dev/null || dk_fail "sqlite3 ($mode) under daxkit failed"
    k=$(digest "$K/$mode.db" | tr '\n' ' ')
    dk_expect_eq "$mode: content read by the kernel" "$k" "$(digest "$D/$mode.db" | tr '\n' ' ')"
    dk_expect_eq "$mode: content read under daxkit" "$k" "$(digest_dk "$D/$mode.db" | tr '\n' ' ')"
done

# Two writers at once on one WAL database and one rollback-journal database, each under daxkit.
for mode in wal delete; do
    db=$D/shared-$mode.db
    dkrun sqlite3 "$db" "PRAGMA journal_mode=$mode; CREATE TABLE log(w INTEGER, i INTEGER, PRIMARY KEY(w, i));" > /dev/null
    for w in 1 2; do
        awk -v w=$w -v n="$TXNS" 'BEGIN { print "PRAGMA busy_timeout=30000;"
            for (i = 1; i <= n; i++) printf "INSERT INTO log VALUES(%d, %d);\n", w, i }' > "$DK_MNT/c$w.sql"
    done
    dkrun sqlite3 -bail "$db" < "$DK_MNT/c1.sql" > /dev/null & p1=$!
    dkrun sqlite3 -bail "$db" < "$DK_MNT/c2.sql" > /dev/null & p2=$!
    wait $p1 || dk_fail "$mode: concurrent writer 1 under daxkit failed"
    wait $p2 || dk_fail "$mode: concurrent writer 2 under daxkit failed"
    want="ok $(( 2 * TXNS )) $(( TXNS * (TXNS + 1) ))"
    dk_expect_eq "$mode: two concurrent writers (integrity, rows, sum)" "$want" \
        "$(sqlite3 "$db" 'PRAGMA integrity_check; SELECT count(*), sum(i) FROM log;' | tr '\n|' '  ' | sed 's/ $//')"
done
echo "PASS"
