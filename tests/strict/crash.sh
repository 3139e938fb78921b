#!/usr/bin/env bash
# Description: strict mode under process crashes, on MEDIUM (ARGV[1]): tests/crash/drive.py runs the
# seeded two-file workload of strict_model.py (per thread: THREADS = ARGV[4]) under daxkit strict mode,
# kills it at every crash site x
# occurrence of the strict path and the operation log (a seeded sample of at most RUNS = ARGV[3]), recovers
# and checks that the files equal the model after the acknowledged operations or after one more.
# ARGV[2], recovery: `cli` (daxkit recover DIR), `startup` (the next daxkit program that starts with DIR
# managed), or `none`: the negative control -- without recovery a write cut in the middle must be caught,
# so this mode passes only when the driver reports failures. ARGV[5]: workload seed ('-' or none: the
# clock). ARGV[6]: DAXKIT_STRICT_APPLY (default checkpoint: every staged overwrite waits for the
# checkpoint on a flush/volatile medium -- the most waiting applies to crash in; auto: as programs run).
# ARGV[7]: the crash sites to sample (a regular expression; default: every strict and oplog site, or the
# two half-applied sites for `none`). ARGV[8] `delta`: the workload's overwrites are mostly 4 KiB pages rewritten
# with a few bytes changed (STRICT_MODEL_DELTA=1: strict mode logs them as delta records, docs/strict.md).
# Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: crash.sh MEDIUM cli|startup|none [RUNS] [THREADS] [SEED|-] [APPLY] [SITES]}
how=${2:?recovery: cli|startup|none}
runs=${3:-80}
threads=${4:-1}
seed=${5:--}
[ "$seed" = - ] && seed=$(( $(date +%s) % 100000 ))
apply=${6:-checkpoint}
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_need_python
dk_media_mount "$medium" 2G >/dev/null
model="python3 $here/strict_model.py"
ops=60
work="env LD_PRELOAD=$lib DAXKIT_DIR={dir} DAXKIT_MODE=strict DAXKIT_STRICT_APPLY=$apply $model workload {dir} $seed $ops $threads"
check="$model check {dir} $seed $ops $threads"
filter='strict|oplog'
case $how in
cli) recover="$cli recover {dir}" ;;
startup) recover="env LD_PRELOAD=$lib DAXKIT_DIR={dir} DAXKIT_MODE=strict /bin/true" ;;
none) recover=true; filter='strict.write.half_applied|strict.checkpoint.half_applied' ;;
*) dk_fail "unknown recovery '$how' (cli|startup|none)" ;;
esac
[ -n "${7:-}" ] && filter=$7
if [ "${8:-}" = delta ]; then
    export STRICT_MODEL_DELTA=1
    work="env STRICT_MODEL_DELTA=1 ${work#env }"
fi
echo "strict crash test: medium $medium, recovery $how, $threads thread(s), workload seed $seed, apply $apply, at most $runs runs${8:+, $8}"
python3 "$DAXKIT_SRC/tests/crash/drive.py" --workload "$work" --recover "$recover" --check "$check" \
    --filter "$filter" --max-runs "$runs" --dir-root "$DK_MNT" --seed "$seed" > "$DK_MNT/drive.log" 2>&1
rc=$?
if [ "$how" = none ]; then
    tail -3 "$DK_MNT/drive.log"
    [ $rc -eq 1 ] || dk_fail "without recovery the driver reported no failure (exit $rc): the test cannot see a cut write"
    grep -q "failed" "$DK_MNT/drive.log" || dk_fail "no failure line in the driver's output"
    echo "ok: without recovery, writes cut in the middle are caught"
    exit 0
fi
tail -20 "$DK_MNT/drive.log"
[ $rc -eq 0 ] || dk_fail "strict mode lost or tore an operation (medium $medium, recovery $how, seed $seed)"
