#!/usr/bin/env bash
# Per-file costs of short-lived, file-creating programs (issue 2's metadata-heavy targets): rsync -a of a
# source tree, git init + add + commit of it, and sqlite3 transactions with a rollback journal; and, as CPU
# rather than wall time, the write-heavy ones of bench/apps.sh (sqlite3 in WAL mode, db_bench fillsync,
# redis-server with appendfsync always: the server's CPU per run of redis-benchmark) -- each run
# through the kernel, with the library loaded and nothing managed ("preload"), and under `daxkit run --dir`
# ("daxkit"), variants interleaved per repetition. The figure is CPU time (user + system, children
# included: perf stat -e task-clock), which another engineer's build on the other core disturbs far less
# than wall time; the summary gives medians, the ratio to the kernel's median (> 1: daxkit used more CPU) and
# each median's range (largest minus smallest repetition, in % of the median).
# With INSN=1 each variant runs once under callgrind instead (instruction counts of every process, summed:
# noise-free, but user space only -- the kernel's work in system calls is not counted).
# Each repetition runs every workload ROUNDS times per variant (each round in a fresh directory) and records
# the mean CPU and wall time of one round: a figure with the meaning it had before ROUNDS (one run of the
# workload, the sessions 11-13 figures), over 4x the work -- tar cf + xf of /usr/include/linux takes ~26 ms
# of CPU, where the scheduler's noise was ~10% of a single run (session 14).
# Usage: bench/perfile.sh BUILD_DIR [MEDIUM] [OUT_CSV]   (MEDIUM: tmpfs (default) | hugetmpfs | xfs | ext4)
# Environment: REPS (5), ROUNDS (4; 1 = the sessions 11-13 measurement), WORKLOADS ("rsync git sqlite"; also tar sqlitewal sqlitewalx fillsync redis), VARIANTS ("kernel
#              preload daxkit"), SQL_N (1000), SYNC_N (5000 synced puts), REDIS_N (20000 SETs),
#              SRC_TREE (/usr/include/linux), INSN (0); variant "base" runs daxkit with BASE_LIB (another
#              build's libdaxkit.so: before/after in one interleaved run); "nocache" runs daxkit with the lock
#              and absent-name caches off (DAXKIT_LOCK_CACHE=0 DAXKIT_ABSENT_CACHE=0; the absent-name cache is on by
#              default since session 29); "daxkit-auto" runs daxkit with
#              DAXKIT_APPEND=auto (a log fsynced per record moves to extend with keep), "base-auto" the same with
#              BASE_LIB, "auto-flush" the same with DAXKIT_PERSIST=flush (the issue's setting); "aof-keep" runs daxkit
#              with DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep (README's configuration for an AOF a
#              server keeps to itself: redis's, opened O_APPEND, which auto leaves on stage), "aof-keep-flush" the
#              same with DAXKIT_PERSIST=flush, "base-aof-keep" aof-keep with BASE_LIB; "eager" runs daxkit
#              with DAXKIT_ADOPT_AFTER_IOS=0 (every managed file adopted at its open: no lazy adoption), "lazy"
#              with DAXKIT_ADOPT_AFTER_IOS=4; "flush" (and "base-flush") with DAXKIT_PERSIST=flush -- the issue's
#              targets' setting: every mapping treated as DAX (cache lines written back, fsync reaching the
#              kernel when sizes moved), where "daxkit" on tmpfs persists as the medium is (volatile: nothing,
#              as the kernel's tmpfs fsync).
# Rows: medium,workload,variant,metric,value,rep  (metric cpu_s, wall_s, or insn; and free_2m: the machine's free
#       2 MiB blocks (/proc/buddyinfo, orders 9 and up, all zones) just before the variant's rounds -- what a new
#       huge page costs moves with it: a new file's first write on a huge tmpfs takes one, kernel and daxkit alike).
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
MEDIUM=${2:-tmpfs}
OUT=${3:-/dev/null}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-4}
WORKLOADS=${WORKLOADS:-"rsync git sqlite"}
VARIANTS=${VARIANTS:-"kernel preload daxkit"}
SQL_N=${SQL_N:-1000}
SYNC_N=${SYNC_N:-5000}
REDIS_N=${REDIS_N:-20000}
TREE=${SRC_TREE:-/usr/include/linux}
INSN=${INSN:-0}
LIB=$(dk_lib) || exit 1
dk_need_cmd rsync git sqlite3 perf
[ "$INSN" = 1 ] && { dk_need_cmd valgrind; REPS=1; ROUNDS=1; }
case $ROUNDS in '' | *[!0-9]* | 0) echo "perfile: ROUNDS must be a positive integer" >&2; exit 2 ;; esac
[ -d "$TREE" ] || dk_skip "$TREE missing"

echo "start load: $(uptime | sed 's/.*load average: //')" >&2
dk_media_mount "$MEDIUM" 2G > /dev/null
ROOT=$DK_MNT
ROWS=$(mktemp)
dk_on_exit rm -f "$ROWS"
cp -a "$TREE" "$ROOT/src" # copied into each run's directory, untimed: the source is managed too (bench/apps.sh)
export GIT_CONFIG_NOSYSTEM=1 HOME=$ROOT GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b \
    GIT_COMMITTER_EMAIL=b@b

# Free 2 MiB blocks now: every free block of order 9 or more, counted in 2 MiB units (/proc/buddyinfo: the
# counts per order start at field 5).
free_2m() {
    awk '{ for (o = 9; o + 5 <= NF; o++) n += $(o + 5) * 2 ^ (o - 9) } END { print n + 0 }' /proc/buddyinfo
}

# Runs "$@" with the variant's environment, adding its CPU and wall time (or instructions) to CPU_S/WALL_S.
run() {
    local env=(env -u DAXKIT_DIR -u LD_PRELOAD)
    case $VARIANT in
    preload) env+=(LD_PRELOAD="$LIB") ;;
    daxkit) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR") ;;
    nocache) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_LOCK_CACHE=0 DAXKIT_ABSENT_CACHE=0) ;;
    daxkit-auto) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND=auto) ;;
    auto-flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND=auto DAXKIT_PERSIST=flush) ;;
    flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_PERSIST=flush) ;;
    aof-keep) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep) ;;
    aof-keep-flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep DAXKIT_PERSIST=flush) ;;
    base-flush) env+=(LD_PRELOAD="${BASE_LIB:?variant base-flush needs BASE_LIB}" DAXKIT_DIR="$DIR" DAXKIT_PERSIST=flush) ;;
    eager) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_ADOPT_AFTER_IOS=0) ;;
    lazy) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_ADOPT_AFTER_IOS=4) ;;
    base) env+=(LD_PRELOAD="${BASE_LIB:?variant base needs BASE_LIB}" DAXKIT_DIR="$DIR") ;;
    base-auto) env+=(LD_PRELOAD="${BASE_LIB:?variant base-auto needs BASE_LIB}" DAXKIT_DIR="$DIR" DAXKIT_APPEND=auto) ;;
    base-aof-keep) env+=(LD_PRELOAD="${BASE_LIB:?variant base-aof-keep needs BASE_LIB}" DAXKIT_DIR="$DIR"
                         DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep) ;;
    esac
    if [ "$INSN" = 1 ]; then
        local cg
        cg=$(mktemp -d)
        "${env[@]}" valgrind -q --tool=callgrind --trace-children=yes --callgrind-out-file="$cg/cg.%p" "$@" \
            > /dev/null
        INSNS=$((INSNS + $(cat "$cg"/cg.* | awk '$1 == "summary:" { s += $2 } END { print s + 0 }')))
        rm -rf "$cg"
        return
    fi
    local t t0 cpu
    t=$(mktemp)
    t0=$(date +%s%N)
    # task-clock of the command and every child (perf stat inherits); ms, far finer than time(1)'s 10 ms
    perf stat -x, -e task-clock -o "$t" -- "${env[@]}" "$@" > /dev/null
    cpu=$(awk -F, '$3 == "task-clock" { print $1 / 1000 }' "$t")
    rm -f "$t"
    CPU_S=$(awk -v a="$CPU_S" -v c="$cpu" 'BEGIN { printf "%.4f", a + c }')
    WALL_S=$(awk -v a="$WALL_S" -v t0="$t0" -v t1="$(date +%s%N)" 'BEGIN { printf "%.4f", a + (t1 - t0) / 1e9 }')
}

work_rsync() {
    cp -a "$ROOT/src" "$DIR/s"
    run rsync -a "$DIR/s/" "$DIR/r/"
}
# tar cf of the tree, then tar xf of the archive (bench/apps.sh's tar-create and tar-extract).
work_tar() {
    cp -a "$ROOT/src" "$DIR/t"
    run tar -C "$DIR" -cf "$DIR/t.tar" t
    mkdir -p "$DIR/x"
    run tar -C "$DIR/x" -xf "$DIR/t.tar"
}
work_git() {
    cp -a "$ROOT/src" "$DIR/g"
    run git -C "$DIR/g" init -q
    run git -C "$DIR/g" add -A
    run git -C "$DIR/g" commit -q -m x
}
# Autocommit inserts: each transaction creates, writes, syncs and deletes the -journal file.
work_sqlite() {
    awk -v n="$SQL_N" 'BEGIN { print "PRAGMA journal_mode=delete;"
        print "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
        for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$ROOT/i.sql"
    run sh -c "sqlite3 '$DIR/t.db' < '$ROOT/i.sql'"
}
# The same inserts in WAL mode, synchronous=FULL (bench/apps.sh's insert-txn-wal).
work_sqlitewal() {
    awk -v n="$SQL_N" 'BEGIN { print "PRAGMA journal_mode=wal;"; print "PRAGMA synchronous=FULL;"
        print "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
        for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$ROOT/w.sql"
    run sh -c "sqlite3 '$DIR/t.db' < '$ROOT/w.sql'"
}
# The same in WAL mode with locking_mode=EXCLUSIVE: no -shm, no lock released per transaction (its only
# publish points are the WAL's fdatasyncs: DAXKIT_APPEND=auto's rule for bursts of appends, session 24).
work_sqlitewalx() {
    awk -v n="$SQL_N" 'BEGIN { print "PRAGMA locking_mode=EXCLUSIVE;"; print "PRAGMA journal_mode=wal;"
        print "PRAGMA synchronous=FULL;"; print "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
        for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$ROOT/x.sql"
    run sh -c "sqlite3 '$DIR/t.db' < '$ROOT/x.sql'"
}
# Every put synced (bench/apps.sh's fillsync).
work_fillsync() {
    run sh -c "db_bench --db='$DIR/syncdb' --benchmarks=fillrandom --sync=1 --num=$SYNC_N --value_size=100 \
        --compression_type=none --seed=1 --stats_interval_seconds=0 2> /dev/null"
}
# The server's CPU (task-clock of redis-server alone) for REDIS_N SETs with appendfsync always; the client
# runs without the library.
work_redis() {
    [ "$INSN" = 1 ] && { echo "perfile: redis is measured by CPU time only (INSN=1 skips it)" >&2; return 0; }
    local port t t0 i
    port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 12000 ))
    local env=(env -u DAXKIT_DIR -u LD_PRELOAD)
    case $VARIANT in
    preload) env+=(LD_PRELOAD="$LIB") ;;
    daxkit) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR") ;;
    nocache) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_LOCK_CACHE=0 DAXKIT_ABSENT_CACHE=0) ;;
    daxkit-auto) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND=auto) ;;
    auto-flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND=auto DAXKIT_PERSIST=flush) ;;
    flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_PERSIST=flush) ;;
    aof-keep) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep) ;;
    aof-keep-flush) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep DAXKIT_PERSIST=flush) ;;
    eager) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_ADOPT_AFTER_IOS=0) ;;
    lazy) env+=(LD_PRELOAD="$LIB" DAXKIT_DIR="$DIR" DAXKIT_ADOPT_AFTER_IOS=4) ;;
    base) env+=(LD_PRELOAD="${BASE_LIB:?variant base needs BASE_LIB}" DAXKIT_DIR="$DIR") ;;
    base-flush) env+=(LD_PRELOAD="${BASE_LIB:?variant base-flush needs BASE_LIB}" DAXKIT_DIR="$DIR" DAXKIT_PERSIST=flush) ;;
    base-auto) env+=(LD_PRELOAD="${BASE_LIB:?variant base-auto needs BASE_LIB}" DAXKIT_DIR="$DIR" DAXKIT_APPEND=auto) ;;
    base-aof-keep) env+=(LD_PRELOAD="${BASE_LIB:?variant base-aof-keep needs BASE_LIB}" DAXKIT_DIR="$DIR"
                         DAXKIT_APPEND="stage,*.aof=extend" DAXKIT_EXTEND_SYNC=keep) ;;
    esac
    t=$(mktemp)
    t0=$(date +%s%N)
    perf stat -x, -e task-clock -o "$t" -- "${env[@]}" redis-server --bind 127.0.0.1 --port "$port" --dir "$DIR" \
        --appendonly yes --appendfsync always --save "" --daemonize no --logfile "$DIR/redis.log" \
        > /dev/null 2>&1 < /dev/null &
    local pid=$!
    for i in $(seq 1 200); do
        [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && break
        sleep 0.05
    done
    redis-benchmark -h 127.0.0.1 -p "$port" -t set -n "$REDIS_N" -c 4 -r 100000 -d 64 -q > /dev/null 2>&1
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave > /dev/null 2>&1 || true
    wait "$pid" || true
    CPU_S=$(awk -F, -v a="$CPU_S" '$3 == "task-clock" { printf "%.4f", a + $1 / 1000 }' "$t")
    WALL_S=$(awk -v a="$WALL_S" -v t0="$t0" -v t1="$(date +%s%N)" 'BEGIN { printf "%.4f", a + (t1 - t0) / 1e9 }')
    rm -f "$t"
}

for REP in $(seq 1 "$REPS"); do
    for w in $WORKLOADS; do
        for VARIANT in $VARIANTS; do
            CPU_S=0 WALL_S=0 INSNS=0
            echo "$MEDIUM,$w,$VARIANT,free_2m,$(free_2m),$REP" >> "$ROWS"
            for ROUND in $(seq 1 "$ROUNDS"); do
                DIR=$ROOT/$VARIANT.$REP.$ROUND
                rm -rf "$DIR"
                mkdir -p "$DIR"
                "work_$w"
                rm -rf "$DIR"
            done
            if [ "$INSN" = 1 ]; then
                echo "$MEDIUM,$w,$VARIANT,insn,$INSNS,$REP" >> "$ROWS"
            else # the mean of one round
                echo "$MEDIUM,$w,$VARIANT,cpu_s,$(awk -v a="$CPU_S" -v n="$ROUNDS" 'BEGIN { printf "%.5f", a / n }'),$REP" >> "$ROWS"
                echo "$MEDIUM,$w,$VARIANT,wall_s,$(awk -v a="$WALL_S" -v n="$ROUNDS" 'BEGIN { printf "%.5f", a / n }'),$REP" >> "$ROWS"
            fi
        done
    done
done
cat "$ROWS" >> "$OUT"
echo "load: $(uptime | sed 's/.*load average: //')  medium $MEDIUM  reps $REPS  rounds $ROUNDS  commit $(git -C "$SRC" rev-parse --short HEAD)"
# Medians per (workload, variant, metric), and each one's ratio to the kernel's.
sort -t, -k2,2 -k4,4 -k3,3 "$ROWS" | awk -F, '
    { k = $2 "," $3 "," $4; v[k] = v[k] " " $5; keys[k] = 1 }
    END {
        for (k in keys) {
            n = split(substr(v[k], 2), a, " ")
            for (i = 1; i <= n; i++) a[i] += 0 # numbers: "1084" sorts after "874"
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            med[k] = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            rng[k] = med[k] > 0 ? sprintf("%.1f%%", (a[n] - a[1]) / med[k] * 100) : "-"
            all[k] = v[k]
        }
        printf "%-8s %-8s %-7s %14s %7s %7s   %s\n", "workload", "variant", "metric", "median", "/kernel", "range", "runs"
        for (k in keys) {
            split(k, p, ",")
            kk = p[1] ",kernel," p[3]
            r = p[3] != "free_2m" && (kk in med) && med[kk] > 0 ? sprintf("%.3fx", med[k] / med[kk]) : "-"
            printf "%-8s %-8s %-7s %14s %7s %7s  %s\n", p[1], p[2], p[3], med[k], r, rng[k], all[k]
        }
    }' | { read -r h; echo "$h"; sort; }
