#!/usr/bin/env bash
# Description: strict mode applies a write and an overlapping ftruncate of one file in log order (review 9,
# finding 3's truncate half), on the page cache (XFS), where a truncate takes the checkpoint lock's read
# side and the file's in-flight table orders it (on flush media it takes the write side: serialised). Runs
# strict_overlap_order's truncate rounds (see overlap_order.c). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
bin=$(dk_test_bin strict_overlap_order) || exit 1
dk_managed_dir xfs 512M >/dev/null
"$bin" truncate "$DK_DIR"
