#!/usr/bin/env bash
# Description: fault injection matrix on MEDIUM (ARGV[1]: hugetmpfs|xfs; ARGV[2]: append strategy,
# default stage). For each internal kernel call of the library that the pass-through table can fail
# (pwrite, ftruncate, fsync, fdatasync, fallocate, mmap, madvise, close, fstat, lseek), each errno (EIO,
# ENOSPC, EINTR) and nth = 1..K, and short counts of pwrite (SHORT), runs shim_faults
# under DAXKIT_TEST_FAIL=call:nth:errno, which checks that
# errors reach the program with the injected errno and that everything acknowledged (fsync/close returned
# 0) is in the file as seen without the library; then checks the file after the process exited against the
# image the program left (appends whose publish failed at close must land at exit). A few sticky faults
# check that no fsync claims success while data is missing. ioctl (FICLONERANGE) and open are variadic in
# the table (src/shim/libc.def V entries) and cannot be injected: the library must reject such a spec with
# a message; this is checked and reported. Exit 0 pass, 1 fail (each failing spec printed with the command
# that reproduces it), 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: faults.sh MEDIUM [stage|extend]}
append=${2:-stage}
lib=$(dk_lib) || exit 1
bin=$(dk_test_bin shim_faults) || exit 1
check=$(dk_test_bin shim_check) || exit 1
dk_managed_dir "$medium" 1G >/dev/null
dir=$DK_DIR
tmp=$(mktemp -d) && dk_on_exit "rm -rf '$tmp'"

# Small staging files keep each run short; the 3 MiB append still spans several 2 MiB slots.
envs=(LD_PRELOAD="$lib" DAXKIT_DIR="$dir" DAXKIT_APPEND="$append" DAXKIT_STAGING_BYTES=8M DAXKIT_STAGING_FILES=1)

runs=0 fails=0
run_one() { # run_one SPEC [sticky]
    local spec=$1 out rc
    runs=$((runs + 1))
    rm -f "$tmp/expect" "$dir/faults"
    out=$(env "${envs[@]}" DAXKIT_TEST_FAIL="$spec" "$bin" "$dir" "$tmp/expect" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && [[ $spec != *sticky ]]; then
        if [ ! -e "$tmp/expect" ]; then
            out+=$'\n'"no expected image written"
            rc=1
        elif ! out+=$'\n'$("$check" image "$dir/faults" "$tmp/expect" 2>&1); then
            out+=$'\n'"after the process exited, the file differs from what it acknowledged/wrote"
            rc=1
        fi
    fi
    if [ $rc -ne 0 ]; then
        fails=$((fails + 1))
        echo "FAIL: DAXKIT_TEST_FAIL=$spec on $medium ($append): exit $rc"
        echo "$out" | sed 's/^/    /' | head -20
        echo "    reproduce: tests/shim/run.sh $medium --env DAXKIT_APPEND=$append --env DAXKIT_STAGING_BYTES=8M" \
             "--env DAXKIT_STAGING_FILES=1 --env DAXKIT_TEST_FAIL=$spec shim_faults /tmp/expect"
    fi
}

# A baseline without faults must pass (otherwise every row below is meaningless).
run_one ""
[ $fails -eq 0 ] || dk_fail "shim_faults fails without any fault on $medium"

# Calls the library makes on the data path; the extend strategy adds ftruncate at every step and publish.
if [ "$append" = extend ]; then calls="ftruncate fsync fdatasync mmap pwrite"
else calls="pwrite ftruncate fsync fdatasync fallocate mmap madvise close fstat lseek"; fi
for call in $calls; do
    for err in EIO ENOSPC EINTR; do
        for nth in 1 2 3 4 5; do # the library makes few calls of each kind per run
            run_one "$call:$nth:$err"
        done
    done
done
# Short counts (the kernel moved part of the bytes): the library finishes its own writes and passes the
# program's on; acknowledged data stays intact.
for nth in 1 2 3 4 5; do
    run_one "pwrite:$nth:SHORT"
done
run_one pwrite:1:SHORT:sticky
for spec in pwrite:1:EIO:sticky fsync:1:EIO:sticky fdatasync:2:EIO:sticky ftruncate:1:ENOSPC:sticky mmap:3:EIO:sticky; do
    run_one "$spec"
done

# Variadic entries cannot be injected: the library must say so (naming the variable) and still run.
for call in ioctl open; do
    out=$(env "${envs[@]}" DAXKIT_TEST_FAIL="$call:1:EIO" "$bin" "$dir" "$tmp/expect" 2>&1)
    if grep -q "DAXKIT_TEST_FAIL" <<<"$out"; then
        echo "note: $call cannot be fault-injected (variadic in src/shim/libc.def); the library rejects the spec: $(echo "$out" | grep -m1 DAXKIT_TEST_FAIL)"
    else
        echo "FAIL: DAXKIT_TEST_FAIL=$call:1:EIO was neither injected nor rejected with a message"
        echo "$out" | sed 's/^/    /' | head -5
        fails=$((fails + 1))
    fi
done

echo "faults.sh: $medium ($append): $runs runs, $fails failed"
[ $fails -eq 0 ] || exit 1
exit 0
