#!/usr/bin/env bash
# Application benchmarks on one medium, each run through the kernel and under daxkit in the same run,
# variants interleaved per repetition: fio (psync, 4 KiB), redis-benchmark SET against redis-server with
# appendonly yes + appendfsync always, RocksDB db_bench fillsync/overwrite/readrandom, sqlite3 insert and
# update transactions (WAL and rollback journal), and tar/rsync/git on a source tree.
# Appends rows "medium,app,variant,metric,value,unit,better,rep" to OUT_CSV (better: higher|lower).
# Usage: bench/apps.sh BUILD_DIR MEDIUM OUT_CSV
# Environment: QUICK=1 (smaller sizes), REPS, APP_VARIANTS, APPS (subset of: fio redis rocksdb sqlite tree).
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
MEDIUM=${2:?medium}
OUT=${3:?out csv}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    REPS=${REPS:-1}; FIO_S=2; REDIS_N=20000; SYNC_N=10000; ROCKS_N=50000; SQL_N=1000
    APP_VARIANTS=${APP_VARIANTS:-"kernel posix-stage-auto posix-extend-auto strict-stage-flush"}
else
    REPS=${REPS:-3}; FIO_S=5; REDIS_N=100000; SYNC_N=30000; ROCKS_N=200000; SQL_N=3000
    APP_VARIANTS=${APP_VARIANTS:-"kernel posix-stage-auto posix-extend-auto posix-extend-flush strict-stage-flush"}
fi
APPS=${APPS:-"fio redis rocksdb sqlite tree"}
TREE=${SRC_TREE:-/usr/include/linux}
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
CLI=$BUILD/bin/daxkit

# Huge tmpfs gives every small file a 2 MiB page: the source-tree copies need room.
dk_media_mount "$MEDIUM" 6G > /dev/null
ROOT=$DK_MNT

have() { command -v "$1" > /dev/null 2>&1; }
row() { echo "$MEDIUM,$1,$VARIANT,$2,$3,$4,$5,$REP" >> "$OUT"; }  # app metric value unit better
now_ns() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.4f", (b - a) / 1e9 }'; }

# Sets DIR (a fresh directory) and PFX (the command prefix: empty for the kernel).
setup_variant() {
    DIR=$ROOT/$VARIANT.$REP
    rm -rf "$DIR"
    mkdir -p "$DIR"
    PFX=()
    if [ "$VARIANT" != kernel ]; then
        local mode app persist
        IFS=- read -r mode app persist <<< "$VARIANT"
        PFX=("$CLI" run --mode "$mode" --dir "$DIR" --append "$app" --persist "$persist" --)
    fi
}

bench_fio() {
    have fio || { echo "apps: fio missing, skipped" >&2; return 0; }
    local rw json
    for rw in randwrite write randread; do
        json=$DIR/fio-$rw.json
        "${PFX[@]}" fio --name="$rw" --directory="$DIR" --ioengine=psync --bs=4k --size=128m --rw="$rw" \
            --fsync=10 --time_based --runtime="$FIO_S" --ramp_time=0 --randrepeat=1 --output-format=json \
            --output="$json" > /dev/null 2>&1 || { echo "apps: fio $rw ($VARIANT) failed" >&2; row fio "$rw" 0 FAILED higher; continue; }
        row fio "$rw-4k-fsync10" "$($PY -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print(round(j["write"]["iops"]+j["read"]["iops"]))' "$json")" iops higher
        rm -f "$DIR/$rw".*
    done
}

REDIS_PID=
stop_redis() {
    if [ -n "$REDIS_PID" ]; then
        kill -9 "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
    fi
    REDIS_PID=
}
dk_on_exit stop_redis
bench_redis() {
    have redis-server && have redis-benchmark || { echo "apps: redis missing, skipped" >&2; return 0; }
    local port i rps
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
    "${PFX[@]}" redis-server --bind 127.0.0.1 --port "$port" --dir "$DIR" --appendonly yes --appendfsync always \
        --save "" --daemonize no --logfile "$DIR/redis.log" > /dev/null 2>&1 < /dev/null &
    REDIS_PID=$!
    for i in $(seq 1 200); do
        [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && break
        sleep 0.05
    done
    rps=$(redis-benchmark -h 127.0.0.1 -p "$port" -t set -n "$REDIS_N" -c 4 -r 100000 -d 64 --csv 2>/dev/null |
          awk -F'"' '$2 == "SET" { print $4 }')
    row redis "set-aof-always" "${rps:-0}" rps higher
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave > /dev/null 2>&1 || true
    stop_redis
}

bench_rocksdb() {
    local db=${DB_BENCH:-$(command -v db_bench || true)} out=$DIR/db_bench.txt
    [ -n "$db" ] || { echo "apps: db_bench missing, skipped" >&2; return 0; }
    # db_bench 7.8's own "fillsync" reports "(num/1000 ops)" but ops/s per nominal key and ran 267 s for
    # --num=10M on /dev/shm here (27 ms per reported op); fillrandom --sync=1 is the synced-put workload with
    # a figure per put.
    "${PFX[@]}" "$db" --db="$DIR/syncdb" --benchmarks=fillrandom --sync=1 --num="$SYNC_N" --value_size=100 \
        --compression_type=none --seed=1 --stats_interval_seconds=0 > "$out.sync" 2>&1 || true
    sed -n 's/^fillrandom /fillsync /p' "$out.sync" > "$out"
    "${PFX[@]}" "$db" --db="$DIR/db" --benchmarks=fillrandom,overwrite,readrandom --num="$ROCKS_N" \
        --value_size=100 --compression_type=none --seed=1 --stats_interval_seconds=0 >> "$out" 2>&1 || true
    local b v
    for b in fillsync overwrite readrandom; do
        v=$(awk -v b="$b" '$1 == b && $2 == ":" { for (i = 1; i <= NF; i++) if ($i == "ops/sec") print $(i - 1) }' "$out")
        row rocksdb "$b" "${v:-0}" ops/s higher
    done
}

bench_sqlite() {
    have sqlite3 || { echo "apps: sqlite3 missing, skipped" >&2; return 0; }
    local mode t modes="wal delete"
    # Strict mode makes every write atomic and durable: SQLite may drop its own journal (issue 3).
    [[ $VARIANT == strict-* ]] && modes="wal delete off"
    for mode in $modes; do
        awk -v m=$mode 'BEGIN { print "PRAGMA journal_mode=" m ";"; print "PRAGMA synchronous=FULL;"
            print "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);" }' > "$DIR/c.sql"
        # journal_mode=OFF and synchronous are per connection (only WAL persists in the file): every script sets them.
        awk -v m=$mode -v n="$SQL_N" 'BEGIN { print "PRAGMA journal_mode=" m ";"; print "PRAGMA synchronous=FULL;"
            for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$DIR/i.sql"
        awk -v m=$mode -v n="$SQL_N" 'BEGIN { print "PRAGMA journal_mode=" m ";"; print "PRAGMA synchronous=FULL;"
            for (i = 1; i <= n; i++) printf "UPDATE t SET n = n + 1, v = hex(randomblob(50)) WHERE id = %d;\n", (i * 7919) % n + 1 }' > "$DIR/u.sql"
        "${PFX[@]}" sqlite3 "$DIR/$mode.db" < "$DIR/c.sql" > /dev/null
        t=$(now_ns); "${PFX[@]}" sqlite3 "$DIR/$mode.db" < "$DIR/i.sql" > /dev/null; row sqlite "insert-txn-$mode" "$(awk -v n="$SQL_N" -v s="$(secs_since "$t")" 'BEGIN { printf "%.0f", n / s }')" txn/s higher
        t=$(now_ns); "${PFX[@]}" sqlite3 "$DIR/$mode.db" < "$DIR/u.sql" > /dev/null; row sqlite "update-txn-$mode" "$(awk -v n="$SQL_N" -v s="$(secs_since "$t")" 'BEGIN { printf "%.0f", n / s }')" txn/s higher
    done
}

bench_tree() {
    [ -d "$TREE" ] || { echo "apps: $TREE missing, tree benchmarks skipped" >&2; return 0; }
    local t
    t=$(now_ns); "${PFX[@]}" tar -cf "$DIR/a.tar" -C "$(dirname "$TREE")" "$(basename "$TREE")"; row tree tar-create "$(secs_since "$t")" s lower
    mkdir -p "$DIR/x"
    t=$(now_ns); "${PFX[@]}" tar -xf "$DIR/a.tar" -C "$DIR/x"; row tree tar-extract "$(secs_since "$t")" s lower
    t=$(now_ns); "${PFX[@]}" rsync -a "$DIR/x/" "$DIR/r/"; row tree rsync-copy "$(secs_since "$t")" s lower
    export GIT_CONFIG_NOSYSTEM=1 HOME=$ROOT GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b
    t=$(now_ns)
    "${PFX[@]}" git -C "$DIR/r" init -q && "${PFX[@]}" git -C "$DIR/r" add -A && "${PFX[@]}" git -C "$DIR/r" commit -q -m x
    row tree git-init-add-commit "$(secs_since "$t")" s lower
}

for REP in $(seq 1 "$REPS"); do
    for app in $APPS; do
        for VARIANT in $APP_VARIANTS; do
            setup_variant
            echo "apps: $MEDIUM rep $REP $app $VARIANT" >&2
            "bench_$app"
            rm -rf "$DIR"
        done
    done
done
