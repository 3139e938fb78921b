#!/usr/bin/env bash
# mmap_views (DAXKIT_ATOMIC_MMAP views: partial munmap, munmap racing msync) under `daxkit run --atomic-mmap`
# on tmpfs. $1: split | race. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
: "${DAXKIT_BUILD:?run through ctest}"
[ -x "$DAXKIT_BUILD/bin/daxkit" ] && [ -x "$DAXKIT_BUILD/tests/mmap_views" ] || { echo "SKIP: not built"; exit 77; }
dir=$(mktemp -d /dev/shm/dk_mmap_views.XXXXXX)
trap 'rm -rf "$dir"' EXIT
head -c 1048576 /dev/zero > "$dir/f"
"$DAXKIT_BUILD/bin/daxkit" run --dir "$dir" --atomic-mmap "$dir/*" -- "$DAXKIT_BUILD/tests/mmap_views" "$dir/f" "$@"
rc=$?
[ $rc -le 1 ] || [ $rc -eq 77 ] || { echo "FAIL: mmap_views exited with $rc (a signal: $((rc - 128)))"; rc=1; }
exit $rc
