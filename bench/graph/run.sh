#!/usr/bin/env bash
# Graph engine benchmarks: CSV under bench/results/graph/, plots when matplotlib is present.
#   bench/graph/run.sh [BUILD_DIR]
# Environment (defaults in brackets):
#   SCALES [20 22]          urand/kron scales for BFS and BC (dram, dram-prefetch, emu)
#   BIG_SCALES [24]         urand/kron scales for BIG_KERNELS only
#   BIG_KERNELS [bfs]       kernels at BIG_SCALES (bc at 24 takes ~1-2 min per run on the loaded machine)
#   THREAD_COUNTS [1 2]     thread counts of the kernels part
#   KERNELS_APPEND [0]      1: append to kernels.csv (re-run some rows) instead of starting it afresh
#   FILE_SCALES [20]        scales where BFS also runs on mmap (warm page cache) and uring (O_DIRECT)
#   SSSP_SCALES [20 22]     scales of the weighted graphs for SSSP
#   TRIALS [2] ROUNDS [2]   trials per run, rounds that interleave the backends (CSV keeps every trial;
#                           summaries use the fastest)
#   SWEEP_SCALE [22]        graph scale of the latency / IOPS sweeps
#   CONTEXTS_SCALE [20]     graph scale of the contexts sweep (1 context at 5 us is serial: keep it small)
#   OOC_SCALE [20] OOC_BUDGET_MIB [half the edges: 64 at scale 20]   out-of-DRAM run (bench/graph/ooc.sh)
#   GRAPH_DATA [BUILD/graph-data]        where graphs live (must allow O_DIRECT for uring)
#   VERIFY_SCALE [20]       graph scale of the verification part
#   QUICK [0]               1: scale 18 everywhere, one round and trial, no big scale (minutes)
#   CEILING_SCALE [24]      urand scale of the BFS prefetch ceiling (serial plain vs software-pipelined loop)
#   PARTS [all]             any of: engine emu kernels ceiling contexts latency iops uring verify ooc (space separated)
# Other processes share the machine: every comparison interleaves its runs and keeps each trial.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
G=$BUILD/bin/daxkit-graph
GB=$BUILD/bin/daxkit-graph-bench
OUT=$SRC/bench/results/graph
DATA=${GRAPH_DATA:-$BUILD/graph-data}
if [ "${QUICK:-0}" = 1 ]; then  # `QUICK=1 make bench`: minutes, scale 18, no big scale
  SCALES=${SCALES:-18} SSSP_SCALES=${SSSP_SCALES:-18} TRIALS=${TRIALS:-1} SWEEP_SCALE=${SWEEP_SCALE:-18}
  BIG_SCALES=${BIG_SCALES-} FILE_SCALES=${FILE_SCALES:-18} ROUNDS=${ROUNDS:-1} CONTEXTS_SCALE=${CONTEXTS_SCALE:-18}
  VERIFY_SCALE=${VERIFY_SCALE:-18} OOC_SCALE=${OOC_SCALE:-18} CEILING_SCALE=${CEILING_SCALE:-18}
fi
SCALES=${SCALES:-20 22}
BIG_SCALES=${BIG_SCALES-24}
FILE_SCALES=${FILE_SCALES:-20}
ROUNDS=${ROUNDS:-2}
SSSP_SCALES=${SSSP_SCALES:-20 22}
TRIALS=${TRIALS:-2}
SWEEP_SCALE=${SWEEP_SCALE:-22}
CONTEXTS_SCALE=${CONTEXTS_SCALE:-20}
VERIFY_SCALE=${VERIFY_SCALE:-20}
OOC_SCALE=${OOC_SCALE:-20}
OOC_BUDGET_MIB=${OOC_BUDGET_MIB:-$((1 << (OOC_SCALE - 14)))}  # half the edges (2^(S-13) MiB)
PARTS=${PARTS:-all}
BIG_KERNELS=${BIG_KERNELS:-bfs}
THREAD_COUNTS=${THREAD_COUNTS:-1 2}
mkdir -p "$OUT" "$DATA"
[ -x "$G" ] || { echo "bench/graph: $G missing; run make first" >&2; exit 1; }

want() { [ "$PARTS" = all ] || [[ " $PARTS " == *" $1 "* ]]; }
log() { echo "[graph bench $(date +%H:%M:%S)] $*" >&2; }

graph_file() {  # kind scale weighted(0/1) -> path (generated once)
  local ext=sg; [ "$3" = 1 ] && ext=wsg
  local f=$DATA/$1$2.$ext
  if [ ! -s "$f" ]; then
    log "generating $f"
    "$G" gen --kind "$1" --scale "$2" --output "$f" >&2
  fi
  echo "$f"
}

# run KERNEL FILE BACKEND THREADS CONTEXTS EXTRA...
#   -> "trial,seconds,requests,switches,empty_passes,cpu_s" lines (cpu_s: CPU time of the process in the trial)
run_trials() {
  local k=$1 f=$2 be=$3 t=$4 c=$5; shift 5
  "$G" "$k" --input "$f" --backend "$be" --threads "$t" --contexts "$c" --trials "$TRIALS" "$@" |
    awk '/^trial /{gsub(":","",$2); for(i=3;i<=NF;i++){split($i,kv,"="); v[kv[1]]=kv[2]}
         print $2","v["time_s"]","v["requests"]","v["switches"]","v["empty_passes"]","v["cpu_s"]}'
}

drop_cache() {  # evict one file from the page cache (only that file: other people share the machine)
  python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$1"
}

if want engine; then
  log "engine overhead (time-based emu, zero latency)"
  # ns_per_request and engine_only_ns are thread CPU time per request; wall_ns_per_request counts the
  # time slices other processes took from this one too.
  echo "contexts,requests,ns_per_request,engine_only_ns,wall_ns_per_request" > "$OUT/engine_overhead.csv"
  for rep in 1 2 3; do
    for c in 1 16 64 256 1024; do
      "$GB" overhead "$c" $((4000000 / c + 1)) |
        awk -v c="$c" '{for(i=1;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]} print c","v["requests"]","v["ns_per_request"]","v["engine_only_ns"]","v["wall_ns_per_request"]}' \
        >> "$OUT/engine_overhead.csv"
    done
  done
fi

if want emu; then
  log "emu models in real time: achieved rate vs what the model allows (time and device-thread model)"
  echo "model,latency_us,iops_max,contexts,requests,seconds,achieved,allowed,fraction" > "$OUT/emu_model.csv"
  for rep in 1 2 3; do
    for spec in "20 0 1 200" "5 0 64 2000" "1 1000000 256 2000" "5 5000000 64 5000"; do
      for model in time thread; do
        set -- $spec
        "$GB" emu "$model" "$@" |
          awk '{for(i=1;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]}
                print v["model"]","v["latency_us"]","v["iops_max"]","v["contexts"]","v["requests"]","v["seconds"]","v["achieved"]","v["allowed"]","v["fraction"]}' \
          >> "$OUT/emu_model.csv"
      done
    done
  done
fi

if want kernels; then
  # Rounds interleave the backends of one configuration over time, so that a burst of load from other
  # processes hits all of them alike; the summary compares the fastest trial of each (same sources).
  log "kernels: BFS/BC on urand+kron, SSSP on weighted; dram / dram-prefetch / emu 5us, 1 and 2 threads;" \
      "mmap and uring at scales $FILE_SCALES (BFS, 2 threads); $BIG_KERNELS at $BIG_SCALES"
  [ "${KERNELS_APPEND:-0}" = 1 ] ||
    echo "graph,scale,kernel,backend,threads,contexts,trial,seconds,requests,switches,empty_passes,cpu_s" > "$OUT/kernels.csv"
  kernel_runs() {  # kind scale kernel file backends...
    local kind=$1 s=$2 k=$3 f=$4; shift 4
    for t in $THREAD_COUNTS; do
      for r in $(seq "$ROUNDS"); do
        for be in "$@"; do
          log "$k $kind$s $be threads=$t round $r"
          run_trials "$k" "$f" "$be" "$t" 64 --latency-us 5 | sed "s/^/$kind,$s,$k,$be,$t,64,/" >> "$OUT/kernels.csv"
        done
      done
    done
  }
  for s in $SCALES; do
    for kind in urand kron; do
      f=$(graph_file "$kind" "$s" 0)
      for k in bfs bc; do kernel_runs "$kind" "$s" "$k" "$f" dram dram-prefetch emu; done
      if [[ " $FILE_SCALES " == *" $s "* ]]; then
        [ -s "$f.pages" ] || "$G" convert --input "$f" --output "$f.pages" >&2
        for be in mmap uring; do
          log "bfs $kind$s $be threads=2 (page cache warm for mmap; O_DIRECT for uring)"
          run_trials bfs "$f" "$be" 2 256 | sed "s/^/$kind,$s,bfs,$be,2,256,/" >> "$OUT/kernels.csv"
        done
      fi
    done
  done
  for s in $BIG_SCALES; do
    for kind in urand kron; do
      f=$(graph_file "$kind" "$s" 0)
      for k in $BIG_KERNELS; do kernel_runs "$kind" "$s" "$k" "$f" dram dram-prefetch emu; done
    done
  done
  for s in $SSSP_SCALES; do
    for kind in urand kron; do
      f=$(graph_file "$kind" "$s" 1)
      kernel_runs "$kind" "$s" sssp "$f" dram dram-prefetch emu
    done
  done
fi

if want ceiling; then  # what prefetching can buy for BFS here without coroutines (bench/graph/bfs_ceiling.cpp)
  f=$(graph_file urand "${CEILING_SCALE:-24}" 0)
  log "BFS prefetch ceiling: serial plain vs software-pipelined loop on urand${CEILING_SCALE:-24}"
  echo "scale,round,loop,distance,cpu_s,ns_per_edge" > "$OUT/ceiling.csv"
  "$BUILD/bin/daxkit-graph-ceiling" "$f" 2 8 |
    awk -v s="${CEILING_SCALE:-24}" '/^ceiling:/{for(i=2;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]}
         print s","v["round"]","v["loop"]","v["distance"]","v["cpu_s"]","v["ns_per_edge"]}' >> "$OUT/ceiling.csv"
fi

if want contexts; then
  f=$(graph_file kron "$CONTEXTS_SCALE" 0)
  log "contexts sweep: BFS kron$CONTEXTS_SCALE, emu 5us, 1 thread (Table 4 shape)"
  echo "backend,contexts,trial,seconds,requests,switches,empty_passes,cpu_s" > "$OUT/contexts.csv"
  run_trials bfs "$f" dram 1 1 | sed "s/^/dram,0,/" >> "$OUT/contexts.csv"
  for c in 1 2 16 32 64 128 256 512; do
    log "contexts=$c"
    run_trials bfs "$f" emu 1 "$c" --latency-us 5 | sed "s/^/emu,$c,/" >> "$OUT/contexts.csv"
    # The device-thread model needs a second core; with few contexts a loaded 2-core machine makes it
    # crawl (the host spins while its device waits for a CPU), so it starts at 16 contexts.
    if [ "$c" -ge 16 ]; then
      run_trials bfs "$f" emu 1 "$c" --latency-us 5 --emu-model thread | sed "s/^/emu-thread,$c,/" >> "$OUT/contexts.csv"
    fi
  done
fi

if want latency; then
  f=$(graph_file urand "$SWEEP_SCALE" 0)
  log "emu latency sweep: BFS urand$SWEEP_SCALE, 2 threads, 256 contexts"
  echo "latency_us,trial,seconds,requests,switches,empty_passes,cpu_s" > "$OUT/latency.csv"
  run_trials bfs "$f" dram 2 1 | sed "s/^/dram,/" >> "$OUT/latency.csv"
  for l in 0.1 1 3 5 10; do
    run_trials bfs "$f" emu 2 256 --latency-us "$l" | sed "s/^/$l,/" >> "$OUT/latency.csv"
  done
fi

if want iops; then
  f=$(graph_file kron "$SWEEP_SCALE" 0)
  log "emu IOPS sweep: BFS kron$SWEEP_SCALE, 5us, 2 threads, 256 contexts"
  echo "iops_max,trial,seconds,requests,switches,empty_passes,cpu_s" > "$OUT/iops.csv"
  for i in 1000000 2000000 5000000 10000000 20000000 50000000 0; do
    run_trials bfs "$f" emu 2 256 --latency-us 5 --iops "$i" | sed "s/^/$i,/" >> "$OUT/iops.csv"
  done
fi

if want uring; then
  f=$(graph_file urand "$OOC_SCALE" 0)
  img=$f.pages
  [ -s "$img" ] || "$G" convert --input "$f" --output "$img" >&2
  log "uring vs fio: random 4 KiB O_DIRECT reads of $img at the same queue depth"
  echo "tool,queue_depth,sqpoll,iops" > "$OUT/uring_fio.csv"
  for qd in 1 16 64 128 256; do
    for rep in 1 2; do
      "$GB" uring "$img" "$qd" 4 | awk -v q="$qd" '{for(i=1;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]} print "daxkit-uring,"q",0,"v["iops"]}' >> "$OUT/uring_fio.csv"
      if command -v fio >/dev/null; then
        # fio with the same io_uring features as the uring device (registered buffers and file).
        fio --name=rr --filename="$img" --rw=randread --bs=4k --direct=1 --ioengine=io_uring --iodepth="$qd" \
            --fixedbufs --registerfiles --runtime=4 --time_based --numjobs=1 --output-format=json 2>/dev/null |
          python3 -c "import json,sys; j=json.load(sys.stdin); print('fio,$qd,0,%.0f' % j['jobs'][0]['read']['iops'])" >> "$OUT/uring_fio.csv"
      fi
    done
  done
  "$GB" uring "$img" 64 4 sqpoll | awk '{for(i=1;i<=NF;i++){split($i,a,"="); v[a[1]]=a[2]} print "daxkit-uring,64,1,"v["iops"]}' >> "$OUT/uring_fio.csv" || true
fi

if want verify; then  # every kernel on every backend checked against the serial references (GAP's definitions)
  log "verification: BFS/BC/SSSP on urand+kron$VERIFY_SCALE, every backend, 2 threads, --verify"
  echo "graph,scale,kernel,backend,trials,verified" > "$OUT/verify.csv"
  for kind in urand kron; do
    for k in bfs bc sssp; do
      w=0; [ $k = sssp ] && w=1
      f=$(graph_file "$kind" "$VERIFY_SCALE" "$w")
      for be in dram dram-prefetch emu mmap uring; do
        v=$("$G" "$k" --input "$f" --backend "$be" --threads 2 --contexts 64 --trials 1 --verify 2>&1 | tail -1 |
            sed -n 's/.*verified=\([a-z]*\).*/\1/p')
        echo "$kind,$VERIFY_SCALE,$k,$be,1,${v:-error}" >> "$OUT/verify.csv"
      done
    done
  done
fi

if want ooc; then  # its own script: a fresh memory cgroup per backend, counters that show the budget binds
  OUT=$OUT GRAPH_DATA=$DATA OOC_SCALE=$OOC_SCALE OOC_BUDGET_MIB=$OOC_BUDGET_MIB bash "$SRC/bench/graph/ooc.sh" "$BUILD" ||
    log "out-of-DRAM part skipped or failed (exit $?)"
fi

# Plots need matplotlib, which Debian installs for the system python (scripts/deps.sh bench); a python3
# earlier on PATH (pyenv, venv) may not have it.
PY=python3
python3 -c 'import matplotlib' 2>/dev/null || { /usr/bin/python3 -c 'import matplotlib' 2>/dev/null && PY=/usr/bin/python3; }
"$PY" "$SRC/bench/graph/summarize.py" "$OUT" || log "summary failed"
