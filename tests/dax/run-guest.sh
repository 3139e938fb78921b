#!/usr/bin/env bash
# Description: boots the FS-DAX guest (QEMU TCG, two emulated NVDIMMs, Debian's 6.1 kernel) and runs the DAX
# tests inside it (tests/dax/guest-tests.sh on XFS-reflink and ext4, both mounted -o dax=always).
#
#   run-guest.sh BUILD [--short|--long] [--only GLOB] [--timeout SECONDS]
#   run-guest.sh BUILD --run DIR [--timeout SECONDS]
#
# --only GLOB runs only the tests of the list whose name matches (e.g. 'crash_*ext4*'), for a quick look at
# one test under TCG.
# --run DIR runs your own commands instead of a list: DIR (a script DIR/run.sh and whatever it needs, e.g.
# differential op lists) is put into the image as /dk/run, and the guest runs `bash /dk/run/run.sh` once its
# DAX mounts are ready (/mnt/xfs, /mnt/ext4; DAXKIT_BUILD=/dk/build, DAXKIT_SRC=/dk/src), reported as the
# one test 'run' (PASS on exit 0, SKIP on 77, FAIL otherwise).
# Builds or reuses the image (build-guest.sh; cached under BUILD/dax-guest), boots it with a time limit,
# echoes the console, and reads one "DK-RESULT name PASS|FAIL|XFAIL|SKIP ..." line per test. Exit 0 when
# every test passed, skipped, or failed on a known library defect (XFAIL: listed in guest-tests.sh) and the
# guest reached the end of its list; 1 when a test failed, the guest did not finish (timeout, panic) or
# nothing passed; 77 with the reason when this machine cannot run the guest (not root, qemu, kernel or tools
# missing: scripts/deps.sh dax installs them). KVM is not used: the guest hangs under it
# (docs/dax-guest.md); TCG needs no host support. Timings under TCG say nothing about DAX speed.
#
# Environment: DK_DAX_QEMU (qemu binary), DK_DAX_SMP (guest cpus, default 1: with 2 on a loaded host the
# guest clock ran about 2.5x slow),
# DK_DAX_KERNEL (guest kernel file), DK_DAX_KEEP_LOG (keep the console log here).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: run-guest.sh BUILD [--short|--long] [--timeout SECONDS]}
shift
list=long
timeout_s=
only=
run_dir=
while [ $# -gt 0 ]; do
    case $1 in
    --short) list=short; shift ;;
    --long) list=long; shift ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --run) run_dir=$2; list=run; shift 2 ;;
    *) echo "run-guest.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$timeout_s" ] || { [ $list = long ] && timeout_s=3600 || timeout_s=540; }
if [ -n "$run_dir" ]; then
    [ -f "$run_dir/run.sh" ] || { echo "run-guest.sh: --run $run_dir: no run.sh in it" >&2; exit 2; }
    run_dir=$(cd "$run_dir" && pwd)
fi

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[ "$(id -u)" = 0 ] || skip "needs root (the guest image holds root-owned device setup; run as root)"
qemu=${DK_DAX_QEMU:-$(command -v qemu-system-x86_64 || true)}
[ -n "$qemu" ] && [ -x "$qemu" ] || skip "qemu-system-x86_64 not found; run scripts/deps.sh dax"
[ -d "$build" ] || fail "build directory $build not found"
build=$(cd "$build" && pwd)
[ -w /dev/shm ] || skip "/dev/shm not writable: no RAM-backed NVDIMM images"
command -v timeout >/dev/null || skip "timeout (coreutils) not found"

t_all=$(now)
DK_DAX_RUN_DIR=$run_dir bash "$here/build-guest.sh" "$build"
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "building the guest image failed (build-guest.sh exit $rc)"
build_s=$(since "$t_all")
img=$build/dax-guest

# The NVDIMMs' backing files: sparse, in RAM, removed on exit.
tag=/dev/shm/daxkit-dax-guest.$$
log=${DK_DAX_KEEP_LOG:-$tag.log}
rm -f "$tag".*
cleanup() { rm -f "$tag.xfs.img" "$tag.ext4.img"; [ -n "${DK_DAX_KEEP_LOG:-}" ] || rm -f "$tag.log"; }
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
truncate -s 1G "$tag.xfs.img" "$tag.ext4.img" || fail "cannot make NVDIMM images in /dev/shm"

smp=${DK_DAX_SMP:-1}
qemu_args=(-accel tcg -cpu max -smp "$smp" -M pc,nvdimm=on -m 2G,slots=4,maxmem=8G
    -object memory-backend-file,id=m0,share=on,mem-path="$tag.xfs.img",size=1G -device nvdimm,id=nv0,memdev=m0
    -object memory-backend-file,id=m1,share=on,mem-path="$tag.ext4.img",size=1G -device nvdimm,id=nv1,memdev=m1
    -kernel "$img/vmlinuz" -initrd "$img/initrd"
    -append "console=ttyS0 panic=-1 loglevel=4 edd=off dk.list=$list${only:+ dk.only=$only}"
    -nographic -no-reboot -nodefaults -serial stdio -monitor none)
echo "run-guest: $list list, $smp cpu(s), timeout ${timeout_s}s: $qemu ${qemu_args[*]}"
t_boot=$(now)
# Console lines are echoed as they come; the log is parsed afterwards.
timeout -k 10 "$timeout_s" "$qemu" "${qemu_args[@]}" </dev/null 2>&1 | tee "$log" | tr -d '\r'
qrc=${PIPESTATUS[0]}
guest_s=$(since "$t_boot")
tr -d '\r' <"$log" >"$log.clean" && mv "$log.clean" "$log"

booted=$(grep -m1 'DK-GUEST booted' "$log" | grep -oE 'at [0-9.]+ s' | grep -oE '[0-9.]+')
mounted=$(grep -m1 'DK-GUEST mounted' "$log" | grep -oE 'at [0-9.]+ s' | grep -oE '[0-9.]+')
# Console lines may carry escape sequences in front: match anywhere in the line.
grep -oE 'DK-RESULT [^ ]+ (PASS|FAIL|XFAIL|SKIP) .*' "$log" >"$log.results"
pass=$(grep -c '^DK-RESULT [^ ]* PASS' "$log.results")
failn=$(grep -c '^DK-RESULT [^ ]* FAIL' "$log.results")
skipn=$(grep -c '^DK-RESULT [^ ]* SKIP' "$log.results")
xfailn=$(grep -c '^DK-RESULT [^ ]* XFAIL' "$log.results")
done_ok=$(grep -c 'DK-GUEST-DONE' "$log")

echo "run-guest: ---- results ($list) ----"
sed 's/^DK-RESULT /  /' "$log.results"
rm -f "$log.results"
echo "run-guest: $pass passed, $failn failed, $xfailn failed on known bugs, $skipn skipped; image ${build_s}s, guest ${guest_s}s" \
     "(kernel up at ${booted:-?}s, DAX mounts ready at ${mounted:-?}s guest uptime), total $(since "$t_all")s"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
    fail "the guest did not finish in ${timeout_s}s (qemu killed by timeout; last test started: $(grep '^DK-GUEST start' "$log" | tail -1))"
fi
[ "$done_ok" -ge 1 ] || fail "the guest stopped before the end of the list (qemu exit $qrc; see the console above)"
[ "$failn" = 0 ] || fail "$failn test(s) failed in the FS-DAX guest"
[ "$pass" -gt 0 ] || fail "no test passed in the guest (nothing ran?)"
exit 0
