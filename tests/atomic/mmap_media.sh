#!/usr/bin/env bash
# Description: failure-atomic msync (part 4) on a harness medium: atomic_uwp (in-process checks, then a child
# storing into its mapping SIGKILLed 60 times) and atomic_mmap_crash's program (mmap_writer, unmodified, under
# `daxkit run --atomic-mmap`, SIGKILLed 40 times); after every kill the file must be one msync's state; then
# mmap_views coherence and split. On XFS and ext4 userfaultfd cannot protect the file's mapping: the program
# gets the shmem shadow (uwp_shadow.c), and the test fails if it did not. mmap_media.sh KIND [shadow]   (shadow: force it on tmpfs kinds too)
set -euo pipefail
. "$DAXKIT_SRC/tests/harness/media.sh"
dk_need_root
kind=$1
uwp=$(dk_test_bin atomic_uwp) || exit 1
crash=$(dk_test_bin route_crash) || exit 1
views=$(dk_test_bin mmap_views) || exit 1
cli=$(dk_cli) || exit 1
dk_media_mount "$kind"
[ "$kind" = hugetmpfs ] && export DAXKIT_PERSIST=flush
want="the file's mapping write-protected"
case "$kind" in xfs | ext4) want="shmem shadow of the file" ;; esac
if [ "${2:-}" = shadow ]; then
    export UWP_SHADOW=1 DAXKIT_ATOMIC_MMAP_SHADOW=always
    want="shmem shadow of the file"
fi
mkdir "$DK_MNT/uwp" "$DK_MNT/run" "$DK_MNT/views"
set +e
out=$(ROUNDS=${ROUNDS:-60} "$uwp" "$DK_MNT/uwp" 2>&1)
rc=$?
set -e
echo "$out"
[ $rc -eq 0 ] || dk_fail "atomic_uwp on $kind exited with $rc"
grep -q "^mode: $want\$" <<<"$out" || dk_fail "atomic_uwp on $kind: expected mode '$want'"
"$crash" "$DK_MNT/run" "${MMAP_ROUNDS:-40}" mmap || dk_fail "route_crash mmap on $kind"
# what read() and pwrite() see while the file is mapped, and partial munmaps (mmap_views)
for t in coherence split; do
    head -c 1048576 /dev/zero > "$DK_MNT/views/f"
    "$cli" run --dir "$DK_MNT/views" --atomic-mmap "$DK_MNT/views/*" -- "$views" "$DK_MNT/views/f" $t ||
        dk_fail "mmap_views $t on $kind"
done
