#!/usr/bin/env bash
# Description: XFS drops a file's reflink mark after daxkit's fsync (issue 2, page-cache media). Appends
# relinked by FICLONERANGE leave the file marked as sharing blocks, and while it is marked every later write
# pays XFS's shared-extent bookkeeping; the library gives the cloned staging slot back (punched) and, after
# the kernel fsync, unshares one block so that XFS finds nothing shared and clears the mark. The mark is not
# visible to user space: the medium is frozen (its log written back) and xfs_db reads the inode. A control
# file cloned by cp --reflink must read 1, so the probe can tell; the file written by dd under daxkit with
# conv=fsync must read 0, and keep its bytes. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

dk_need_cmd xfs_db xfs_freeze
lib=$(dk_lib) || exit 1
dk_managed_dir xfs 512M >/dev/null
dev=$DK_MEDIA_LOOP
dir=$DK_DIR

mark() { # mark FILE: sets MARK to the inode's reflink flag (0/1) as on disk (not in a subshell: a skip
    # or a failure inside $(...) would end only the subshell)
    local ino out
    ino=$(stat -c %i "$1") || dk_fail "stat $1"
    xfs_freeze -f "$DK_MNT" || dk_fail "xfs_freeze -f $DK_MNT"
    out=$(xfs_db -r -c "inode $ino" -c "print v3.reflink" "$dev" 2>&1)
    xfs_freeze -u "$DK_MNT" || dk_fail "xfs_freeze -u $DK_MNT"
    case $out in
    *"v3.reflink = "[01]*) MARK=${out##*= } ;;
    *) dk_skip "xfs_db cannot show the reflink flag here: $out" ;;
    esac
}

head -c 4194304 /dev/urandom > "$DK_MNT/src" || dk_fail "write the source"
cp --reflink=always "$DK_MNT/src" "$DK_MNT/control" 2>/dev/null || dk_skip "no reflink on this XFS (cp --reflink failed)"
sync
mark "$DK_MNT/control"
[ "$MARK" = 1 ] || dk_fail "a file made by cp --reflink reads reflink=$MARK: the probe cannot see the mark"

# 4 MiB of 256 KiB appends: staged, relinked by clone at the fsync (whole blocks), then the slot is given back.
LD_PRELOAD=$lib DAXKIT_DIR=$dir DAXKIT_STATS=1 \
    dd if="$DK_MNT/src" of="$dir/file" bs=256K conv=fsync status=none || dk_fail "dd under daxkit failed"
cmp -s "$DK_MNT/src" "$dir/file" || dk_fail "the file written under daxkit differs from its source"
mark "$dir/file"
[ "$MARK" = 0 ] || dk_fail "after daxkit's fsync the file still carries XFS's reflink mark (reflink=$MARK)"
echo "reflink_mark: control reflink=1, the file written under daxkit reflink=0 after fsync: pass"
