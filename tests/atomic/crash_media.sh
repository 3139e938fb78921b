#!/usr/bin/env bash
# Description: atomic_crash (SIGKILL at random points, file must equal one sync's state) and atomic_api on a
# harness medium: xfs (pagecache: msync/fdatasync ordering, redo only), hugetmpfs (2 MiB pages, run with
# DAXKIT_PERSIST=flush: the dax code path).   crash_media.sh KIND [POLICY...]
set -euo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
kind=$1; shift
policies=${*:-undo redo hybrid journal}
crash=$(dk_test_bin atomic_crash) || exit 1
api=$(dk_test_bin atomic_api) || exit 1
dk_media_mount "$kind"
[ "$kind" = hugetmpfs ] && export DAXKIT_PERSIST=flush
for p in $policies; do
    ROUNDS=${ROUNDS:-60} "$crash" "$p" "$DK_MNT" || dk_fail "atomic_crash $p on $kind"
done
"$api" "$DK_MNT" | tail -1 || dk_fail "atomic_api on $kind"
