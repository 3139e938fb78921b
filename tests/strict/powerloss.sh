#!/usr/bin/env bash
# Description: strict mode under power loss on the page cache (MEDIUM = ARGV[1]: xfs or ext4, no DAX), where
# an overwrite is applied by pwrite into the page cache and only its record (a direct, durable write) is on
# the device until the next checkpoint's fdatasync. Each of RUNS (ARGV[2]) runs kills the seeded strict_model
# workload right after the N-th apply (crash point strict.write.applied, N seeded), then takes the loop
# device's backing image as it is at that instant -- what the device holds, without the page cache: the
# state a power loss leaves -- and puts it back under the same loop device (odd runs: the same st_dev) or
# another one (even runs: a reboot that numbers the device differently; records name files by st_dev and
# st_ino), mounts it, and checks:
#   before recovery (check-content): the files may lack applied writes; at least one run must (otherwise the
#     test never saw a lost apply and proves nothing: fail);
#   after `daxkit recover`: every acknowledged operation is there, the one in flight all or nothing, and
#     nothing of the dead process is left (strict_model.py check).
# Exit 0 pass, 1 fail, 77 skip (not root, no loop devices).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: powerloss.sh xfs|ext4 [RUNS] [SEED]}
runs=${2:-8}
seed=${3:-$(( $(date +%s) % 100000 ))}
lib=$(dk_lib) || exit 1
cli=$(dk_cli) || exit 1
dk_need_python
dk_need_cmd losetup cp
dk_media_mount "$medium" >/dev/null
[ -n "$DK_MEDIA_IMAGE" ] && [ -n "$DK_MEDIA_LOOP" ] || dk_fail "no loop medium for $medium"
model="python3 $here/strict_model.py"
ops=60
echo "strict power-loss test: medium $medium, seed $seed, $runs runs (loop $DK_MEDIA_LOOP)"

# The device's content now, as the medium from here on (the page cache of the old mount is dropped),
# attached to the same loop device ($1 = same) or to any free one ($1 = other).
power_loss() {
    local saved=$DK_MNT.acked.$$ state=$DK_MEDIA_IMAGE.state out try
    cp --sparse=always "$DK_MEDIA_IMAGE" "$state" || dk_fail "cp of the device image failed"
    mkdir -p "$saved" && cp "$DK_MNT"/*.acked.* "$saved"/ 2>/dev/null
    umount "$DK_MNT" || dk_fail "umount $DK_MNT failed"
    mv -f "$state" "$DK_MEDIA_IMAGE" || dk_fail "mv of the state image failed" # the old device keeps the old file
    if [ "$1" = other ]; then # attached while the old device still is: another device number
        out=$(losetup --find --show "$DK_MEDIA_IMAGE" 2>&1) || dk_fail "losetup of the state image failed: $out"
        losetup -d "$DK_MEDIA_LOOP" || dk_fail "losetup -d $DK_MEDIA_LOOP failed"
        DK_MEDIA_LOOP=$out
        dk_on_exit "dk_loop_detach_ours '$DK_MEDIA_LOOP' '$DK_MEDIA_IMAGE'"
    else
        losetup -d "$DK_MEDIA_LOOP" || dk_fail "losetup -d $DK_MEDIA_LOOP failed"
        for try in 1 2 3 4 5 6 7 8 9 10; do
            out=$(losetup "$DK_MEDIA_LOOP" "$DK_MEDIA_IMAGE" 2>&1) && break
            sleep 0.2
        done
        [ "$try" -lt 10 ] || dk_skip "cannot attach the state image to $DK_MEDIA_LOOP again (taken by another process?): $out"
    fi
    out=$(mount -t "$medium" "$DK_MEDIA_LOOP" "$DK_MNT" 2>&1) || dk_fail "mount of the power-loss state failed: $out"
    cp "$saved"/* "$DK_MNT"/ 2>/dev/null # what the workload saw acknowledged (written by the kernel: may be lost too)
    rm -rf "$saved"
}

lost=0 crashed=0
for r in $(seq 1 "$runs"); do
    n=$(( (seed * 7919 + r * 104729) % 44 + 2 ))
    d=$DK_MNT/run$r
    mkdir -p "$d" && sync
    (env LD_PRELOAD="$lib" DAXKIT_DIR="$d" DAXKIT_MODE=strict DAXKIT_TEST_CRASH="strict.write.applied:$n" \
        $model workload "$d" "$seed" "$ops" 1 > "$DK_MNT/run$r.out" 2>&1 &
     wait $!) 2>/dev/null # the subshell's "Killed" line goes nowhere
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 137 ] || { cat "$DK_MNT/run$r.out"; dk_fail "run $r: workload exit $rc (not a crash)"; }
    [ $rc -eq 137 ] && crashed=$((crashed + 1))
    old_dev=$(stat -c %d "$d")
    power_loss "$( [ $((r % 2)) -eq 1 ] && echo same || echo other )"
    new_dev=$(stat -c %d "$d")
    [ $((r % 2)) -eq 1 ] || [ "$new_dev" != "$old_dev" ] || dk_fail "run $r: the state image got the same device number"
    [ $((r % 2)) -eq 1 ] || echo "run $r: the power-loss state on another loop device (st_dev $old_dev -> $new_dev)"
    if ! $model check-content "$d" "$seed" "$ops" 1 > "$DK_MNT/run$r.pre" 2>&1; then
        lost=$((lost + 1))
        echo "run $r (crash at apply $n): before recovery the files lack acknowledged writes (as expected after a power loss): $($model diff "$d" "$seed" "$ops" 1)"
    else
        echo "run $r (crash at apply $n): before recovery the files already equal the model (nothing lost)"
    fi
    "$cli" recover "$d" > "$DK_MNT/run$r.recover" 2>&1 || { cat "$DK_MNT/run$r.recover"; dk_fail "run $r: daxkit recover failed"; }
    $model check "$d" "$seed" "$ops" 1 || { cat "$DK_MNT/run$r.recover"; dk_fail "run $r (seed $seed, crash at apply $n): strict mode lost or tore an operation after a power loss"; }
done
echo "$crashed of $runs runs crashed; $lost lost applied writes to the power loss; all recovered"
[ "$lost" -gt 0 ] || dk_fail "no run lost an applied write: the test did not see the case it is for (seed $seed)"
echo "ok: strict mode on $medium survives power loss between the apply and the checkpoint"
