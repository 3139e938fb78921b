#!/usr/bin/env bash
# route_threads (threads writing, reading, appending and fsyncing one DAXKIT_ATOMIC file at once) under
# `daxkit run --atomic`, for the policy in $1 (hybrid|undo|redo|journal). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
: "${DAXKIT_BUILD:?run through ctest}"
[ -x "$DAXKIT_BUILD/bin/daxkit" ] && [ -x "$DAXKIT_BUILD/tests/route_threads" ] || { echo "SKIP: not built"; exit 77; }
dir=$(mktemp -d /dev/shm/dk_route_threads.XXXXXX)
trap 'rm -rf "$dir"' EXIT
DAXKIT_ATOMIC_POLICY=${1:-hybrid} "$DAXKIT_BUILD/bin/daxkit" run --dir "$dir" --atomic "$dir/*" -- \
    "$DAXKIT_BUILD/tests/route_threads" "$dir/f"
