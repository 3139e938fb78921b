#!/usr/bin/env bash
# Description: RocksDB db_bench under daxkit with a verify pass: fillsync, fillrandom, overwrite, readrandom,
# randomwithverify, flush and verifychecksum (every SST block's checksum), then a reopen that reads the
# whole database back (readseq, verifychecksum). With a fixed seed the run is deterministic, so the kernel
# and daxkit runs must report the same found-counts and leave databases whose full scans (ldb scan, read
# through the kernel and under daxkit) are identical.
# Usage: rocksdb.sh MEDIUM
set -euo pipefail
. "$(dirname "$0")/lib.sh"
DB_BENCH=$(command -v db_bench || command -v rocksdb_bench || true)
LDB=$(command -v ldb || command -v rocksdb_ldb || true)
[ -n "$DB_BENCH" ] && [ -n "$LDB" ] || dk_skip "db_bench/ldb not found (Debian rocksdb-tools); run scripts/deps.sh test"
dk_progs_setup "${1:?medium}"
NUM=${NUM:-20000}
COMMON=(--num="$NUM" --value_size=200 --seed=1 --compression_type=none --verify_checksum=1 --threads=1
        --stats_interval_seconds=0)

# Runs the whole sequence on DIR/db; prints the result lines that must match between the two runs.
run_seq() {  # DIR [PREFIX...]
    local dir=$1 out
    shift
    out=$dir/db_bench.txt
    "$@" "$DB_BENCH" --db="$dir/db" "${COMMON[@]}" \
        --benchmarks=fillsync,fillrandom,overwrite,readrandom,randomwithverify,flush,verifychecksum > "$out" 2>&1 ||
        { tail -20 "$out" >&2; dk_fail "db_bench failed on $dir (see $out)"; }
    "$@" "$DB_BENCH" --db="$dir/db" "${COMMON[@]}" --use_existing_db=1 --benchmarks=readseq,verifychecksum \
        >> "$out" 2>&1 || { tail -20 "$out" >&2; dk_fail "db_bench reopen (readseq, verifychecksum) failed on $dir"; }
    if grep -iE 'corrupt|error|mismatch' "$out" | grep -v 'blob cache' >&2; then
        dk_fail "db_bench reported an error on $dir"
    fi
    # Found-counts and operation counts, without timings.
    grep -E '^(readrandom|randomwithverify|readseq) *:' "$out" | sed -E 's/:.*seconds//; s/[0-9.]+ MB\/s//; s/  +/ /g'
}

k=$(run_seq "$K")
d=$(run_seq "$D" "${DK_PREFIX[@]}")
dk_expect_eq "db_bench found-counts" "$k" "$d"
ks=$("$LDB" --db="$K/db" scan --hex | sha256sum | cut -c1-32)
dk_expect_eq "full scan of the daxkit database, read by the kernel" "$ks" "$("$LDB" --db="$D/db" scan --hex | sha256sum | cut -c1-32)"
dk_expect_eq "full scan of the daxkit database, read under daxkit" "$ks" "$(dkrun "$LDB" --db="$D/db" scan --hex | sha256sum | cut -c1-32)"
echo "PASS"
