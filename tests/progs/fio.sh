#!/usr/bin/env bash
# Description: fio with the psync engine under daxkit, --verify on: sequential write, random overwrite
# (fsync every 8 writes), appends to a growing file and mixed-size random read/write, each verified by
# reading back (crc32c per block, verify_fatal). Then fio's verify_only pass re-checks the files the daxkit
# run left (sequential and random-overwrite files), once through the kernel and once under daxkit. (fio's verify headers carry timestamps, so the
# files of two runs never compare equal byte for byte; the checksums are the comparison.)
# Usage: fio.sh MEDIUM
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dk_need_cmd fio sha256sum
dk_progs_setup "${1:?medium}"
SIZE=${SIZE:-16m}

jobs() {  # DIR
    cat <<JOB
[global]
ioengine=psync
directory=$1
bs=4k
size=$SIZE
randrepeat=1
randseed=42
verify=crc32c
verify_fatal=1
verify_state_save=0
do_verify=1
fsync=8
thread=0
[seqwrite]
rw=write
filename=seq.dat
[randwrite]
stonewall
rw=randwrite
filename=rand.dat
verify_backlog=256
[append]
stonewall
rw=write
file_append=1
filename=app.dat
size=8m
[mixed]
stonewall
rw=randrw
bsrange=512-64k
filename=mixed.dat
JOB
}

run() {  # DIR [PREFIX...]
    local dir=$1
    shift
    jobs "$dir" > "$dir.fio"
    "$@" fio --output-format=terse --terse-version=3 "$dir.fio" > "$dir.out" 2>&1 ||
        { cat "$dir.out" >&2; dk_fail "fio failed on $dir (a verify error or an IO error)"; }
    # terse v3: field 5 is the job's error code
    if awk -F';' '$5 != 0 { bad = 1 } END { exit !bad }' "$dir.out"; then
        cat "$dir.out" >&2; dk_fail "a fio job on $dir reported an error"
    fi
    (cd "$dir" && stat -c '%n %s' seq.dat rand.dat app.dat mixed.dat | tr '\n' ' ')
}
verify_only() {  # DIR WHO [PREFIX...]
    local dir=$1 who=$2
    shift 2
    # Not the append job: verify_only would look for its blocks past the end of the file it grew; nor mixed:
    # with varying block sizes verify_only cannot regenerate which write reached a block last.
    "$@" fio --verify_only --section=seqwrite --section=randwrite --output-format=terse --terse-version=3 "$dir.fio" > "$dir.verify.out" 2>&1 ||
        { cat "$dir.verify.out" >&2; dk_fail "fio --verify_only ($who) rejects the files daxkit wrote"; }
    echo "ok: fio --verify_only read by $who accepts the files daxkit wrote"
}
k=$(run "$K")
d=$(run "$D" "${DK_PREFIX[@]}")
echo "ok: every fio job verified its data (kernel and daxkit)"
dk_expect_eq "file sizes left by fio" "$k" "$d"
verify_only "$D" "the kernel"
verify_only "$D" daxkit "${DK_PREFIX[@]}"
echo "PASS"
