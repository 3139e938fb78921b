#!/bin/bash
# Description: runs oplog_enospc on a 5 MiB tmpfs (a medium smaller than the log): ENOSPC, never SIGBUS.
# Exit 0 pass, 1 fail, 77 skip (not root).
set -euo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
bin=$(dk_test_bin oplog_enospc) || exit 1
dk_media_mount tmpfs 5M > /dev/null
"$bin" "$DK_MNT"
