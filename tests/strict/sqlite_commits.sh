#!/usr/bin/env bash
# Description: how many commits a SQLite transaction costs a DAXKIT_ATOMIC database (session 9). sqlite3
# with journal_mode=OFF and its default (normal) locking makes N single-insert transactions under
# `daxkit run --mode MODE --atomic DB --atomic-commit fsync`; SQLite releases a lock 3 times per
# transaction, and each release is a publish point of the database (twice: its descriptor, then every
# file). Only the COMMIT's fsync has something to commit: `atomic_commits` (daxkit stats, read by the
# sqlite3 process itself through .shell) must be N plus at most a few (the schema's), not 7 N (every
# publish point a commit -- what the route did before it skipped commits with nothing new).
# Usage: sqlite_commits.sh MEDIUM MODE [N]. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${DAXKIT_SRC:=$(cd "$here/../.." && pwd)}"
: "${DAXKIT_BUILD:=$DAXKIT_SRC/build}"
export DAXKIT_SRC DAXKIT_BUILD
. "$DAXKIT_SRC/tests/harness/media.sh"

medium=${1:?usage: sqlite_commits.sh MEDIUM MODE [N]}
mode=${2:?MODE: posix | sync | strict}
n=${3:-300}
dk_need_cmd sqlite3
cli=$(dk_cli) || exit 1
dk_managed_dir "$medium" 256M >/dev/null
dir=$DK_DIR
printf 'PRAGMA journal_mode=OFF;\nCREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);\n' | sqlite3 "$dir/x.db" >/dev/null ||
    dk_fail "cannot make the database"
{
    echo "PRAGMA journal_mode=OFF;"
    echo "PRAGMA synchronous=FULL;"
    for i in $(seq 1 "$n"); do echo "INSERT INTO t VALUES($i, hex(randomblob(40)));"; done
    echo ".shell $cli stats \$PPID --once --json"
} > "$DK_MNT/in.sql"
out=$("$cli" run --mode "$mode" --persist flush --dir "$dir" --atomic "$dir/*.db" --atomic-commit fsync -- \
      sqlite3 "$dir/x.db" < "$DK_MNT/in.sql" 2>&1) || dk_fail "sqlite3 failed: $out"
commits=$(printf '%s\n' "$out" | grep -o '"atomic_commits": [0-9]*' | grep -o '[0-9]*$')
fsyncs=$(printf '%s\n' "$out" | grep -o '"fsyncs": [0-9]*' | grep -o '[0-9]*$')
[ -n "$commits" ] || dk_fail "no atomic_commits in the stats: $out"
rows=$(sqlite3 "$dir/x.db" 'SELECT count(*) FROM t;')
[ "$rows" = "$n" ] || dk_fail "$rows rows after the run, want $n"
echo "sqlite_commits: $mode mode, $n transactions: $commits commits, $fsyncs fsyncs"
[ "$commits" -ge "$n" ] || dk_fail "$commits commits for $n transactions: a COMMIT was not committed"
[ "$commits" -le $((n + 5)) ] ||
    dk_fail "$commits commits for $n transactions: publish points with nothing new commit again (docs/strict.md, session 9)"
echo "ok: one commit per transaction"
