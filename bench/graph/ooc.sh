#!/usr/bin/env bash
# Out of DRAM for real: BFS from `uring` next to `mmap`, each in a fresh memory cgroup with the same
# budget, on a graph whose edge data is larger than that budget. Shows that the budget binds (cgroup
# limit hits, page-cache usage at the limit, major faults) and that each backend's answer verifies.
#   bench/graph/ooc.sh [BUILD_DIR]
# Environment (defaults in brackets):
#   OOC_KIND [urand] OOC_SCALE [18]   the graph (generated into GRAPH_DATA when missing)
#   OOC_BUDGET_MIB [16]               memory limit of each run (anonymous memory + page cache)
#   OOC_THREADS [2] OOC_CONTEXTS [256] OOC_TRIALS [2]
#   GRAPH_DATA [BUILD/graph-data]     must allow O_DIRECT (not tmpfs) for uring
#   OUT [bench/results/graph]         ooc.csv and ooc_<backend>.log land here
# Memory cgroup: v2 (memory.max, memory.events) when the unified hierarchy has the memory controller,
# else v1 (memory.limit_in_bytes, memory.failcnt); must run as root. Exit 77 with a reason otherwise.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
G=$BUILD/bin/daxkit-graph
OUT=${OUT:-$SRC/bench/results/graph}
DATA=${GRAPH_DATA:-$BUILD/graph-data}
KIND=${OOC_KIND:-urand}
SCALE=${OOC_SCALE:-18}
BUDGET_MIB=${OOC_BUDGET_MIB:-16}
THREADS=${OOC_THREADS:-2}
CONTEXTS=${OOC_CONTEXTS:-256}
TRIALS=${OOC_TRIALS:-2}
mkdir -p "$OUT" "$DATA"
log() { echo "[graph ooc $(date +%H:%M:%S)] $*" >&2; }
[ -x "$G" ] || { echo "bench/graph/ooc.sh: $G missing; run make first" >&2; exit 1; }

# --- the memory cgroup: one fresh group per run, so every counter belongs to that run alone ---
CG_ROOT="" CG_KIND=""
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
  CG_ROOT=/sys/fs/cgroup CG_KIND=v2
  grep -qw memory /sys/fs/cgroup/cgroup.subtree_control || echo +memory > /sys/fs/cgroup/cgroup.subtree_control || true
elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/unified/cgroup.controllers; then
  CG_ROOT=/sys/fs/cgroup/unified CG_KIND=v2
elif [ -d /sys/fs/cgroup/memory ]; then
  CG_ROOT=/sys/fs/cgroup/memory CG_KIND=v1
fi
probe=${CG_ROOT:+$CG_ROOT/daxkit-graph-ooc-probe.$$}
if [ -z "$CG_ROOT" ] || ! mkdir "$probe" 2>/dev/null; then
  echo "SKIP: no memory cgroup this process may create (need root and cgroup v1/v2 memory controller)" >&2
  exit 77
fi
rmdir "$probe"
CG=""
cleanup() { [ -n "$CG" ] && [ -d "$CG" ] && rmdir "$CG" 2>/dev/null || true; }
trap cleanup EXIT

cg_create() {  # -> sets CG
  CG=$CG_ROOT/daxkit-graph-ooc.$$.$1
  mkdir "$CG"
  if [ $CG_KIND = v2 ]; then
    echo $((BUDGET_MIB << 20)) > "$CG/memory.max"
    [ -f "$CG/memory.swap.max" ] && echo 0 > "$CG/memory.swap.max"
  else
    echo $((BUDGET_MIB << 20)) > "$CG/memory.limit_in_bytes"
    [ -f "$CG/memory.memsw.limit_in_bytes" ] && echo $((BUDGET_MIB << 20)) > "$CG/memory.memsw.limit_in_bytes" 2>/dev/null || true
  fi
}
# "limit_hits peak_mib cgroup_major_faults oom_kills"
cg_counters() {
  if [ $CG_KIND = v2 ]; then
    local hits peak maj oom
    hits=$(awk '$1=="max"{print $2}' "$CG/memory.events")
    oom=$(awk '$1=="oom_kill"{print $2}' "$CG/memory.events")
    peak=$(cat "$CG/memory.peak" 2>/dev/null || echo 0)
    maj=$(awk '$1=="pgmajfault"{print $2}' "$CG/memory.stat")
    echo "$hits $((peak >> 20)) $maj $oom"
  else
    local oom
    oom=$(awk '$1=="oom_kill"{print $2}' "$CG/memory.oom_control" 2>/dev/null)
    echo "$(cat "$CG/memory.failcnt") $(($(cat "$CG/memory.max_usage_in_bytes") >> 20))" \
         "$(awk '$1=="total_pgmajfault"||$1=="pgmajfault"{v=$2} END{print v+0}' "$CG/memory.stat") ${oom:-0}"
  fi
}
run_in_cg() { bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"; }
evict() {  # push this file's pages out of the page cache: pages charged elsewhere would be free hits
  sync "$1"
  python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$1"
}

# --- the graph and its page image, built outside the budget ---
f=$DATA/$KIND$SCALE.sg
if [ ! -s "$f" ]; then
  log "generating $f"
  "$G" gen --kind "$KIND" --scale "$SCALE" --output "$f" >&2
fi
img=$f.pages
[ -s "$img" ] || "$G" convert --input "$f" --output "$img" >&2
edge_mib=$(( ($(stat -c %s "$f") - 17 - 8 * ((1 << SCALE) + 1)) >> 20 ))
img_mib=$(( $(stat -c %s "$img") >> 20 ))
[ "$edge_mib" -gt "$BUDGET_MIB" ] || { echo "bench/graph/ooc.sh: edges ($edge_mib MiB) fit the budget ($BUDGET_MIB MiB); raise OOC_SCALE" >&2; exit 1; }
log "BFS $KIND$SCALE: edges $edge_mib MiB (page image $img_mib MiB), memory budget $BUDGET_MIB MiB (cgroup $CG_KIND)," \
    "$THREADS threads x $CONTEXTS contexts"

# Each backend's answer on this file, verified against the serial reference (needs the edges in
# DRAM, so outside the budget).
for be in uring mmap; do
  "$G" bfs --input "$f" --backend "$be" --threads "$THREADS" --contexts 64 --source 1 --verify | tail -1 |
    grep -q "verified=yes" || { echo "bench/graph/ooc.sh: $be BFS does not verify on $f" >&2; exit 1; }
done
log "both backends verify on $f (unlimited memory)"

echo "backend,budget_mib,edge_mib,threads,contexts,trial,seconds,requests,peak_rss_mib,major_faults,cg_limit_hits,cg_peak_mib,cg_major_faults,cg_oom_kills" > "$OUT/ooc.csv"
for be in uring mmap; do
  evict "$f"; evict "$img"
  cg_create "$be"
  run_in_cg "$G" bfs --input "$f" --backend "$be" --threads "$THREADS" --contexts "$CONTEXTS" --trials "$TRIALS" \
    --source 1 > "$OUT/ooc_$be.log" 2>&1 || { log "$be run failed:"; tail -5 "$OUT/ooc_$be.log" >&2; }
  read -r hits peak maj oom <<< "$(cg_counters)"
  cleanup; CG=""
  echo "cgroup: kind=$CG_KIND budget_mib=$BUDGET_MIB limit_hits=$hits peak_mib=$peak major_faults=$maj oom_kills=$oom" >> "$OUT/ooc_$be.log"
  awk -v be="$be" -v b="$BUDGET_MIB" -v e="$edge_mib" -v t="$THREADS" -v c="$CONTEXTS" \
      -v hits="$hits" -v peak="$peak" -v maj="$maj" -v oom="$oom" '
    /^trial /{gsub(":","",$2); split($4,a,"="); split($5,r,"="); sec[$2]=a[2]; req[$2]=r[2]; n++}
    /^summary/{for(i=2;i<=NF;i++){split($i,kv,"="); s[kv[1]]=kv[2]}}
    END{for(i=0;i<n;i++) print be","b","e","t","c","i","sec[i]","req[i]","s["peak_rss_mib"]","s["major_faults"]","hits","peak","maj","oom}' \
    "$OUT/ooc_$be.log" >> "$OUT/ooc.csv"
  log "$be: $(grep -E '^result' "$OUT/ooc_$be.log" || echo 'no result') | limit hits $hits, cgroup peak $peak MiB," \
      "major faults $maj, OOM kills $oom"
done
column -s, -t < "$OUT/ooc.csv" >&2 || cat "$OUT/ooc.csv" >&2
