#!/usr/bin/env bash
# Description: strict_append_end_moved (see append_end_moved.c) on the page cache (XFS), where the knownbug
# shim_fd_lifetime_replace_strict_xfs lost its append: a strict O_APPEND append whose end moved between its
# record and its apply lands at the end, not over the kernel's record. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"
bin=$(dk_test_bin strict_append_end_moved) || exit 1
dk_managed_dir xfs 512M >/dev/null
"$bin" "$DK_DIR"
