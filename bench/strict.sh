#!/usr/bin/env bash
# Strict mode against sync, posix and the kernel (issue 3, part 6), one run, CSV rows appended to OUT_CSV:
#   - 64 B / 256 B / 1 KiB / 4 KiB random overwrites and appends, fsync every 1 and every 10, on huge tmpfs
#     with DAXKIT_PERSIST=flush (emulated DAX persistence: labelled) and on XFS on a RAM loop (real fsync);
#   - strict mode's per-write choice: default (inline up to 1 KiB) vs always staged vs always inline;
#   - a durable record write's cost by its size on XFS against the kernel path (strict-record-io.csv);
#   - recovery: records replayed per second after a SIGKILL with N records in the log;
#   - SQLite: journal_mode=OFF under strict mode (and under posix + DAXKIT_ATOMIC, which keeps a commit whole)
#     against WAL on the kernel path (strict-sqlite.csv; bench/sqlite_strict.sh measures CPU per transaction).
# Usage: bench/strict.sh BUILD_DIR OUT_CSV     Environment: OPS [20000], REPS [1], MEDIA [hugetmpfs xfs], SQL_N [20000]
set -euo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
OUT=${2:?out csv}
SRC=$(cd "$(dirname "$0")/.." && pwd)
export DAXKIT_BUILD=$BUILD DAXKIT_SRC=$SRC
. "$SRC/tests/harness/media.sh"
OPS=${OPS:-20000}
REPS=${REPS:-1}
MEDIA=${MEDIA:-"hugetmpfs xfs"}
BENCH=$BUILD/bin/dk_bench_posix
LIB=$BUILD/lib/libdaxkit.so
CLI=$BUILD/bin/daxkit
[ -s "$OUT" ] || echo "medium,variant,op,bs,ops,fsync_every,ops_per_s,median_ns,p99_ns,mean_ns,fsync_median_ns,wall_s,rep" > "$OUT"

run_variant() {  # MEDIUM DIR VARIANT BS FSYNC REP [ENV...]
    local medium=$1 dir=$2 v=$3 bs=$4 fe=$5 rep=$6
    shift 6
    rm -rf "$dir" && mkdir -p "$dir"
    local cmd=("$BENCH" --dir "$dir" --medium "$medium" --variant "$v" --file-mib 32 --bs "$bs" --ops "$OPS"
               --warmup 512 --fsync-every "$fe" --tests randwrite,append --seed "$rep")
    if [ "$v" = kernel ]; then
        "${cmd[@]}" | sed "s/\$/,$rep/" >> "$OUT"
    else
        env LD_PRELOAD="$LIB" DAXKIT_DIR="$dir" "$@" "${cmd[@]}" | sed "s/\$/,$rep/" >> "$OUT"
    fi
}

for medium in $MEDIA; do
    dk_media_mount "$medium" 2G > /dev/null || continue
    dir=$DK_MNT/bench
    persist=auto
    [ "$medium" = hugetmpfs ] && persist=flush
    for rep in $(seq 1 "$REPS"); do
        for fe in 1 10; do
            for bs in 64 256 1024 4096; do
                echo "bench/strict: $medium bs=$bs fsync every $fe (rep $rep)" >&2
                run_variant "$medium" "$dir" kernel "$bs" "$fe" "$rep"
                for mode in posix sync strict; do
                    run_variant "$medium" "$dir" "daxkit-$mode-$persist" "$bs" "$fe" "$rep" \
                        DAXKIT_MODE=$mode DAXKIT_PERSIST=$persist
                done
                run_variant "$medium" "$dir" "daxkit-strict-staged-$persist" "$bs" "$fe" "$rep" \
                    DAXKIT_MODE=strict DAXKIT_PERSIST=$persist DAXKIT_STRICT_INLINE_BYTES=0
                run_variant "$medium" "$dir" "daxkit-strict-inline-$persist" "$bs" "$fe" "$rep" \
                    DAXKIT_MODE=strict DAXKIT_PERSIST=$persist DAXKIT_STRICT_INLINE_BYTES=12240
            done
        done
    done
done

# Does a record's size decide its durable write's cost (XFS, page cache)? 64 B / 4 KiB aligned / 4160 B /
# 5568 B DSYNC writes and the kernel's pwrite + fdatasync, interleaved op by op (strict-record-io.csv).
if [[ " $MEDIA " == *" xfs "* ]]; then
    dk_media_mount xfs 1G > /dev/null
    iocsv=$(dirname "$OUT")/strict-record-io.csv
    echo "medium,variant,bytes,ops,median_ns,mean_ns,p99_ns,rep" > "$iocsv"
    for rep in $(seq 1 "$REPS"); do
        "$BUILD/bin/strict_record_io" "$DK_MNT" xfs 2000 | sed "s/\$/,$rep/" >> "$iocsv"
    done
    cat "$iocsv" >&2
fi

# Recovery rate: N small records left in the log by a SIGKILL, replayed by `daxkit recover`.
dk_media_mount hugetmpfs 2G > /dev/null
rdir=$DK_MNT/recover
rcsv=$(dirname "$OUT")/strict-recovery.csv
echo "medium,records,replay_ms,records_per_s" > "$rcsv"
for n in 100000 500000 1000000; do
    rm -rf "$rdir" && mkdir -p "$rdir"
    env LD_PRELOAD="$LIB" DAXKIT_DIR="$rdir" DAXKIT_MODE=strict DAXKIT_PERSIST=flush python3 -c '
import os, signal, sys
n = int(sys.argv[2])
fd = os.open(sys.argv[1] + "/f", os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 1 << 22); os.fsync(fd)
b = b"r" * 40
for i in range(n):
    os.pwrite(fd, b, (i * 64) % (1 << 22))
os.kill(os.getpid(), signal.SIGKILL)' "$rdir" "$n" 2>/dev/null || true
    "$CLI" recover --json "$rdir" | python3 -c '
import json, sys
r = json.load(sys.stdin)
ms = r["strict_replay_us"] / 1e3
print("hugetmpfs,%d,%.1f,%.0f" % (r["strict_records"], ms, r["strict_records"] / (ms / 1e3) if ms else 0))' >> "$rcsv"
done
cat "$rcsv" >&2

# SQLite commits (issue 3: strict mode with SQLite's journal off against WAL on the kernel path), huge tmpfs,
# SQL_N single-insert transactions, synchronous=FULL; with SQLite's default locking (a lock round per
# transaction) and with locking_mode=EXCLUSIVE (one process owns the database: no per-transaction locks).
if command -v sqlite3 > /dev/null; then
    dk_media_mount hugetmpfs 2G > /dev/null
    scsv=$(dirname "$OUT")/strict-sqlite.csv
    echo "locking,variant,journal,txns,seconds,txn_per_s,rep" > "$scsv"
    SQL_N=${SQL_N:-20000}
    for rep in $(seq 1 "$REPS"); do
        for locking in normal exclusive; do
            for vj in kernel:wal kernel:off strict:off strict:wal sync:wal atomic:off; do
                v=${vj%:*} j=${vj#*:} d=$DK_MNT/sqlite-$v-$j
                rm -rf "$d" && mkdir -p "$d"
                pfx=()
                [ "$v" = kernel ] || pfx=("$CLI" run --mode "$v" --dir "$d" --append stage --persist flush --)
                # posix mode with DAXKIT_ATOMIC on the database: each commit (fsync) whole (docs/strict.md)
                [ "$v" = atomic ] && pfx=("$CLI" run --mode posix --dir "$d" --atomic "$d/*.db" --persist flush --)
                printf 'PRAGMA journal_mode=%s;\nCREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);\n' "$j" |
                    "${pfx[@]}" sqlite3 "$d/x.db" > /dev/null
                awk -v m="$j" -v n="$SQL_N" -v l="$locking" 'BEGIN { print "PRAGMA journal_mode=" m ";"
                    print "PRAGMA synchronous=FULL;"; print "PRAGMA locking_mode=" l ";"
                    for (i = 1; i <= n; i++) printf "INSERT INTO t VALUES(%d, hex(randomblob(50)), %d);\n", i, i }' > "$d/i.sql"
                t0=$(date +%s%N)
                "${pfx[@]}" sqlite3 "$d/x.db" < "$d/i.sql" > /dev/null
                t1=$(date +%s%N)
                awk -v l="$locking" -v v="$v" -v j="$j" -v n="$SQL_N" -v ns=$((t1 - t0)) -v r="$rep" \
                    'BEGIN { printf "%s,%s,%s,%d,%.3f,%.0f,%d\n", l, v, j, n, ns / 1e9, n / (ns / 1e9), r }' >> "$scsv"
            done
        done
    done
    cat "$scsv" >&2
else
    echo "bench/strict: sqlite3 missing, SQLite part skipped" >&2
fi
