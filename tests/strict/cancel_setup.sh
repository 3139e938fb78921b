#!/usr/bin/env bash
# Description: a thread cancelled inside a strict operation leaves no library lock held (review 11, finding
# 2): tests/strict/cancel_setup.c makes the cancellation pending before the thread's first strict write (the
# library makes its log under the root's mutex) and before its close (a checkpoint: the checkpoint lock's
# write side), then the main thread writes; before the fix the main thread's write waited for ever (the
# 10 s timeout here). The first case needs the cancellation to land during the set-up (the library tests
# cancellation at its entry): the main thread polls for the log's .tmp -- on XFS (zero fill + fdatasync:
# milliseconds) it catches it nearly always, on huge tmpfs rarely. Usage: cancel_setup.sh MEDIUM (hugetmpfs | xfs). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

dk_need_root
dk_need_cmd timeout
lib=$(dk_lib) || exit 1
prog=$(dk_test_bin strict_cancel_setup) || exit 1
dk_media_mount "${1:?medium}" >/dev/null
fail=0
# first-write five times: the main thread must catch the set-up in progress (it says whether it did);
# DAXKIT_PERSIST=flush on huge tmpfs, so that the close's checkpoint fdatasyncs the file that grew.
for case in first-write first-write first-write first-write first-write close; do
    rm -rf "$DK_MNT/.daxkit" "$DK_MNT/f"
    echo old > "$DK_MNT/f"
    out=$(env LD_PRELOAD="$lib" DAXKIT_DIR="$DK_MNT" DAXKIT_MODE=strict DAXKIT_PERSIST=flush \
          timeout 10 "$prog" "$DK_MNT/f" "$case" 2>&1)
    rc=$?
    echo "$case: exit $rc: $(tr '\n' ';' <<<"$out")"
    if [ $rc = 124 ]; then
        echo "FAIL: $case: the main thread's strict write hung after the worker was cancelled"
        fail=1
    elif [ $rc != 0 ] || ! grep -q 'main write ok' <<<"$out"; then
        echo "FAIL: $case: exit $rc"
        fail=1
    fi
done
exit $fail
