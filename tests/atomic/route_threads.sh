#!/usr/bin/env bash
# route_threads (threads writing, reading, appending and fsyncing one DAXKIT_ATOMIC file at once) under
# `daxkit run --atomic`, for the policy in $1 (hybrid|undo|redo|journal|journal-pace). Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
: "${DAXKIT_BUILD:?run through ctest}"
. "$(cd "$(dirname "$0")" && pwd)/../harness/media.sh"
cli=$(dk_cli) || exit 1 # a binary the build did not produce is a failure, not a skip
prog=$(dk_test_bin route_threads) || exit 1
dir=$(mktemp -d /dev/shm/dk_route_threads.XXXXXX)
trap 'rm -rf "$dir"' EXIT
policy=${1:-hybrid} pace=0
[ "$policy" = journal-pace ] && policy=journal pace=1 # the journal with pacing (DAXKIT_ATOMIC_PACE=1)
DAXKIT_ATOMIC_PACE=$pace DAXKIT_ATOMIC_POLICY=$policy "$cli" run --dir "$dir" --atomic "$dir/*" -- "$prog" "$dir/f"
