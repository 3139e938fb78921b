#!/usr/bin/env bash
# route_counts under `daxkit run --atomic` with a 2 MiB log (early commits). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
: "${DAXKIT_BUILD:?run through ctest}"
[ -x "$DAXKIT_BUILD/bin/daxkit" ] && [ -x "$DAXKIT_BUILD/tests/route_counts" ] || { echo "SKIP: not built"; exit 77; }
dir=$(mktemp -d /dev/shm/dk_route_counts.XXXXXX)
trap 'rm -rf "$dir"' EXIT
DAXKIT_ATOMIC_LOG_BYTES=2M "$DAXKIT_BUILD/bin/daxkit" run --dir "$dir" --atomic "$dir/*" -- \
    "$DAXKIT_BUILD/tests/route_counts" "$dir/f"
