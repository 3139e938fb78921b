#!/usr/bin/env bash
# Description: differential test of libdaxkit.so against the kernel on freshly mounted media.
#
#   run-diff.sh [--media hugetmpfs,xfs] [--driver crash-site.py] [run-diff.py options: --modes --append
#               --seeds --seconds --start --ops --batch --lib --env K=V ...]
#
# Mounts each medium with tests/harness/media.sh (removed on exit), then runs run-diff.py over every
# (medium, mode, append) configuration (--driver: another driver of this directory, e.g. crash-site.py). Exit 0 all sequences agree, 1 a mismatch, 77 skipped (reason
# printed: not root, medium unavailable, library or python3 missing).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

media=hugetmpfs
driver=run-diff.py
args=()
lib=
while [ $# -gt 0 ]; do
    case $1 in
    --media) media=$2; shift 2 ;;
    --driver) driver=$2; shift 2 ;;
    --lib) lib=$2; args+=("$1" "$2"); shift 2 ;;
    *) args+=("$1"); shift ;;
    esac
done

dk_need_cmd python3
dk_test_bin dk_difftest >/dev/null
if [ -z "$lib" ]; then
    [ -e "$DAXKIT_BUILD/lib/libdaxkit.so" ] || dk_skip "$DAXKIT_BUILD/lib/libdaxkit.so not built: nothing to compare"
fi

mounts=()
for kind in ${media//,/ }; do
    # Sizes: a sequence's files stay under ~40 MiB; the library's staging pool adds 2 x 64 MiB per
    # managed directory, and each configuration has its own managed directory.
    case $kind in
    xfs|ext4) dk_media_mount "$kind" 2G >/dev/null ;;
    *) dk_media_mount "$kind" 3G >/dev/null ;;
    esac
    mounts+=(--medium "$kind=$DK_MNT")
done

python3 "$here/$driver" --build "$DAXKIT_BUILD" "${mounts[@]}" "${args[@]}"
