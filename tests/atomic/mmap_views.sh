#!/usr/bin/env bash
# mmap_views (DAXKIT_ATOMIC_MMAP views: partial munmap, munmap racing msync) under `daxkit run --atomic-mmap`
# on tmpfs. $1: split | race. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
: "${DAXKIT_BUILD:?run through ctest}"
. "$(cd "$(dirname "$0")" && pwd)/../harness/media.sh"
cli=$(dk_cli) || exit 1 # a binary the build did not produce is a failure, not a skip
prog=$(dk_test_bin mmap_views) || exit 1
dir=$(mktemp -d /dev/shm/dk_mmap_views.XXXXXX)
trap 'rm -rf "$dir"' EXIT
head -c 1048576 /dev/zero > "$dir/f"
"$cli" run --dir "$dir" --atomic-mmap "$dir/*" -- "$prog" "$dir/f" "$@"
rc=$?
[ $rc -le 1 ] || [ $rc -eq 77 ] || { echo "FAIL: mmap_views exited with $rc (a signal: $((rc - 128)))"; rc=1; }
exit $rc
