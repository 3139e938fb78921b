#!/bin/bash
# Description: the operation log on a real medium (tests/harness/media.sh KIND: hugetmpfs, xfs, ext4): the
# oplog_basic checks in a directory there (on XFS/ext4 without DAX every append is msynced: the page-cache
# path), then the process-crash driver with the oplog workload (4 threads) crashing into that medium.
# Exit 0 pass, 1 fail, 77 skip (not root, medium unavailable).
set -euo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
kind=${1:?medium kind}
basic=$(dk_test_bin oplog_basic) || exit 1
crash=$(dk_test_bin oplog_crash) || exit 1
dk_media_mount "$kind" > /dev/null
mkdir -p "$DK_MNT/basic" "$DK_MNT/crash"
"$basic" "$DK_MNT/basic" || dk_fail "oplog_basic on $kind"
python3 "$DAXKIT_SRC/tests/crash/drive.py" --dir-root "$DK_MNT/crash" --max-runs "${MAX_RUNS:-80}" \
    --workload "$crash workload {dir} 4 10" --recover "$crash recover {dir}" --check "$crash verify {dir}" ||
    dk_fail "process-crash driver on $kind"
echo "ok: oplog on $kind"
