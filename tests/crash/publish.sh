#!/usr/bin/env bash
# Description: posix-mode appends stay all or nothing when a process crash cuts their publish (the relink's
# copy or clone). tests/crash/drive.py runs publish_crash's seeded appends (fsync every 1-4, two appends over
# one 2 MiB staging slot) under daxkit posix mode with DAXKIT_APPEND=stage on MEDIUM (ARGV[1]), kills it at
# the publish's crash sites -- in test builds the relink copies page by page with a crash point between
# pages, as the kernel's write stops at a page boundary when a fatal signal is pending -- recovers, and
# checks that the file holds exactly one publish point. ARGV[2], recovery: `cli` (daxkit recover DIR),
# `startup` (the next daxkit program with DIR managed) or `none`: the negative control, which passes only
# when the checker catches torn publishes (it proves the crash points tear the copy). ARGV[3]: at most that
# many runs (seeded sample; ARGV[4] is the seed). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: publish.sh MEDIUM cli|startup|none [RUNS] [SEED]}
how=${2:?recovery: cli|startup|none}
runs=${3:-40}
seed=${4:-$(( $(date +%s) % 100000 ))}
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
bin=$(dk_test_bin publish_crash) || exit 1
dk_need_python
dk_media_mount "$medium" 1G >/dev/null
envs="LD_PRELOAD=$lib DAXKIT_DIR={dir} DAXKIT_MODE=posix DAXKIT_APPEND=stage DAXKIT_STAGING_BYTES=8M"
work="env $envs $bin workload {dir} $seed"
check="$bin check {dir} $seed"
case $how in
cli) recover="$cli recover {dir}" ;;
startup) recover="env $envs /bin/true" ;;
none) recover=true ;;
*) dk_fail "unknown recovery '$how' (cli|startup|none)" ;;
esac
echo "publish crash test: medium $medium, recovery $how, workload seed $seed, at most $runs runs"
python3 "$DAXKIT_SRC/tests/crash/drive.py" --workload "$work" --recover "$recover" --check "$check" \
    --filter '^publish\.' --max-runs "$runs" --dir-root "$DK_MNT" --seed "$seed" >"$DK_MNT/drive.log" 2>&1
rc=$?
if [ "$how" = none ]; then
    tail -4 "$DK_MNT/drive.log"
    [ $rc -eq 1 ] || dk_fail "without recovery the driver reported no torn publish (exit $rc): the test cannot see one"
    grep -q "a torn append" "$DK_MNT/drive.log" || dk_fail "no torn append in the driver's output"
    echo "ok: without recovery, publishes cut in the middle are caught"
    exit 0
fi
tail -20 "$DK_MNT/drive.log"
[ $rc -eq 0 ] || dk_fail "a posix-mode publish was torn (medium $medium, recovery $how, seed $seed)"
