#!/usr/bin/env bash
# Description: the medium probe (dk_medium_probe with DK_PROBE_HUGE|DK_PROBE_COSTS) tells each medium
# apart on a fresh mount of KIND (ARGV[1]): hugetmpfs -> volatile with 2 MiB mappings; tmpfs -> volatile
# without; xfs (reflink, RAM-backed loop) -> pagecache with block sharing, no MAP_SYNC; ext4 (RAM-backed
# loop) -> pagecache without block sharing. Costs are measured (and printed), errno is kept on success, and
# the probe leaves no scratch files behind. KIND tmpfs-full is a 3 MiB tmpfs, too small to measure costs:
# the probe still succeeds, says why costs are missing (ENOSPC) and reports no partial figures.
# Exit 0 pass, 1 fail, 77 skip (not root, medium unavailable).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../harness/media.sh"
kind=${1:?usage: media_probe.sh hugetmpfs|tmpfs|xfs|ext4|tmpfs-full}
dk_need_root
if [ "$kind" = tmpfs-full ]; then dk_media_mount tmpfs 3M >/dev/null; else dk_media_mount "$kind" >/dev/null; fi
probe=$(dk_test_bin dk-probe) || exit 1
out=$("$probe" "$DK_MNT") || dk_fail "dk-probe $DK_MNT failed"
echo "$out" | sed "s/^/  $kind: /"

val() { echo "$out" | sed -n "s/^$1=//p"; }
want() { # want KEY VALUE
    [ "$(val "$1")" = "$2" ] || dk_fail "$kind: expected $1=$2, probe says $1=$(val "$1")"
}
positive() { [ "$(val "$1")" -gt 0 ] 2>/dev/null || dk_fail "$kind: expected $1 > 0, probe says '$(val "$1")'"; }

want errno_kept 1
want map_sync 0
if [ "$kind" = tmpfs-full ]; then
    want medium volatile; want costs_measured 0; want costs_error 28 # ENOSPC
    want copy_4k_ns 0; want copy_2m_ns 0; want fsync_ns 0
    [ -z "$(find "$DK_MNT" -mindepth 1)" ] || dk_fail "tmpfs-full: the probe left files behind"
    [ "$(df --output=used -k "$DK_MNT" | tail -1 | tr -d ' ')" -lt 64 ] || dk_fail "tmpfs-full: space not given back"
    echo "PASS: a full medium is still probed, costs not measured (ENOSPC) and no partial figures"
    exit 0
fi
want costs_measured 1
want costs_error 0
positive copy_4k_ns
positive copy_2m_ns
positive fsync_ns
positive cost_samples
case $kind in
hugetmpfs)
    want medium volatile; want fs tmpfs; want huge_pages 1; want reflink 0; want clone_min_bytes never
    [ "$(val huge_pmd_kb)" -ge 2048 ] || dk_fail "hugetmpfs: expected >= 2048 kB PMD-mapped" ;;
tmpfs)
    want medium volatile; want fs tmpfs; want huge_pages 0; want reflink 0; want clone_min_bytes never ;;
xfs)
    want medium pagecache; want fs xfs; want reflink 1
    positive clone_4k_ns
    positive clone_2m_ns
    t=$(val clone_min_bytes); b=$(val block_bytes)
    [[ "$t" =~ ^[0-9]+$ ]] && [ "$t" -ge "$b" ] && [ $((t % b)) = 0 ] ||
        dk_fail "xfs: clone_min_bytes '$t' is not a positive multiple of the block size $b" ;;
ext4)
    want medium pagecache; want fs ext4; want reflink 0; want clone_4k_ns 0; want clone_min_bytes never ;;
esac
left=$(find "$DK_MNT" -mindepth 1 -maxdepth 1 ! -name lost+found)
[ -z "$left" ] || dk_fail "$kind: the probe left files behind: $left"
echo "PASS: $kind probed as $(val medium) (huge_pages=$(val huge_pages) reflink=$(val reflink))"
