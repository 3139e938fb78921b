#!/usr/bin/env bash
# Description: out of DRAM for real, at test size. bench/graph/ooc.sh runs BFS from `uring` and `mmap`,
# each in a fresh memory cgroup with a 12 MiB budget, on urand17 (16 MiB of edges); both answers are
# first verified against the serial BFS outside the limit. Checks that the budget really binds: the
# edges exceed it, neither run goes above it or is OOM-killed, both finish, and mmap had to fault its
# edges in from the file (major faults) while uring read them with O_DIRECT (none). No timing asserted:
# the speed comparison is a benchmark (bench/graph/run.sh, part ooc).
# Skips (77) without root and a memory cgroup, or when the build directory refuses O_DIRECT.
set -u
BUILD=${DAXKIT_BUILD:-build}
SRC=${DAXKIT_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d "$BUILD/graph_ooc.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
budget=12

case $(stat -f -c %T "$BUILD") in
  tmpfs|ramfs) echo "SKIP: $BUILD is $(stat -f -c %T "$BUILD"), which refuses O_DIRECT (uring backend)"; exit 77 ;;
esac
OUT=$T GRAPH_DATA=$T OOC_SCALE=17 OOC_BUDGET_MIB=$budget OOC_TRIALS=1 OOC_CONTEXTS=64 \
  bash "$SRC/bench/graph/ooc.sh" "$BUILD" > "$T/log" 2>&1
rc=$?
[ $rc = 77 ] && { echo "SKIP: $(grep SKIP "$T/log")"; exit 77; }
[ $rc = 0 ] || fail "ooc.sh exited $rc: $(tail -5 "$T/log")"
cat "$T/log"
[ -s "$T/ooc.csv" ] || fail "no ooc.csv"
for be in uring mmap; do
  row=$(grep "^$be," "$T/ooc.csv" | head -1)
  [ -n "$row" ] || fail "$be did not finish a trial under the budget: $(tail -3 "$T/ooc_$be.log")"
  IFS=, read -r _ b edge _ _ _ sec _ _ _ _ peak maj oom <<< "$row"
  [ "$edge" -gt "$b" ] || fail "edges ($edge MiB) do not exceed the budget ($b MiB)"
  [ "$peak" -le "$b" ] || fail "$be: cgroup peak $peak MiB above the budget $b MiB"
  [ "$oom" = 0 ] || fail "$be: OOM-killed inside the cgroup"
  if [ $be = mmap ]; then
    [ "$maj" -gt 1000 ] || fail "mmap: only $maj major faults: the edges were not read from the file under the budget"
  else
    [ "$maj" -lt 1000 ] || fail "uring: $maj major faults: its edges should come by O_DIRECT, not page faults"
  fi
  echo "$be: ${sec}s, cgroup peak ${peak} MiB of $b, major faults $maj"
done
echo PASS
