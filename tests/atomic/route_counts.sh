#!/usr/bin/env bash
# route_counts under `daxkit run --atomic` with a 2 MiB log: the journal grows, hybrid commits early, a new
# file's bytes bypass the journal. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
: "${DAXKIT_BUILD:?run through ctest}"
. "$(cd "$(dirname "$0")" && pwd)/../harness/media.sh"
cli=$(dk_cli) || exit 1 # a binary the build did not produce is a failure, not a skip
prog=$(dk_test_bin route_counts) || exit 1
dir=$(mktemp -d /dev/shm/dk_route_counts.XXXXXX)
trap 'rm -rf "$dir"' EXIT
# the journal (default policy) grows; hybrid commits early
DAXKIT_ATOMIC_LOG_BYTES=2M "$cli" run --dir "$dir" --atomic "$dir/*" -- "$prog" "$dir/f" || exit 1
rm -rf "$dir"/* "$dir"/.daxkit
# a new file written before its first fsync: straight into the file, the journal does not grow (session 17)
DAXKIT_ATOMIC_LOG_BYTES=2M "$cli" run --dir "$dir" --atomic "$dir/*" -- "$prog" "$dir/f" direct || exit 1
rm -rf "$dir"/* "$dir"/.daxkit
DAXKIT_ATOMIC_POLICY=hybrid DAXKIT_ATOMIC_LOG_BYTES=2M "$cli" run --dir "$dir" --atomic "$dir/*" -- "$prog" "$dir/f"
