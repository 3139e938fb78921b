#!/usr/bin/env bash
# Description: atomic_identity (a C API log is never applied to a new file on its dead file's inode number;
# review 10, finding 1) on a harness medium that reuses inode numbers.   identity_media.sh KIND (xfs, ext4)
set -euo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
exe=$(dk_test_bin atomic_identity) || exit 1
dk_media_mount "$1"
"$exe" "$DK_MNT"
