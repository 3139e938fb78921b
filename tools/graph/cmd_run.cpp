// `daxkit graph bfs|bc|sssp`: load, choose sources, run K trials, verify, print the result line.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "async/tsc.hpp"
#include "cmds.hpp"
#include "graph/backend.hpp"
#include "graph/generate.hpp"
#include "graph/kernels.hpp"
#include "graph/page_image.hpp"
#include "graph/reference.hpp"
#include "graph/sg_io.hpp"
#include "graph/skew.hpp"
#include "options.hpp"

namespace dk::graph::cli {

namespace {

const OptionSpec kRunOptions[] = {
    {"input", true, "graph file (.sg; .wsg for sssp)"},
    {"backend", true, "dram | dram-prefetch | emu | uring | mmap (default dram)"},
    {"threads", true, "worker threads (default: online CPUs)"},
    {"contexts", true, "coroutine contexts per thread, 1..1024 (default 64)"},
    {"source", true, "source vertex (default: a random vertex with edges, new per trial)"},
    {"trials", true, "trials (default 1)"},
    {"verify", false, "check every trial against a serial reference (needs the edges in DRAM)"},
    {"delta", true, "sssp: delta-stepping bucket width (default 1, as GAP)"},
    {"seed", true, "seed for source selection (default 27491095)"},
    {"prefetch-targets", true,
     "coroutine backends: prefetch+yield before touching neighbours' state: auto (default: off for bfs "
     "when the highest-degree vertices whose state fills half the LLC take half the edges) | on | off"},
    {"no-prefetch-targets", false, "same as --prefetch-targets off"},
    {"emu-model", true, "emu: time (deterministic, default) | thread (device thread polls the SQ)"},
    {"latency-us", true, "emu: read latency in microseconds (default 5)"},
    {"iops", true, "emu: IOPS ceiling (default 0 = unlimited)"},
    {"units", true, "emu: parallel units, each busy one latency per read (default 0 = unlimited)"},
    {"sqpoll", false, "uring: kernel SQ polling thread (doorbell-free submission)"},
    {"buffered", false, "uring: no O_DIRECT (reads through the page cache)"},
    {"image", true, "uring: page image path (default INPUT.pages, built when missing or stale)"},
};
constexpr size_t kRunOptionCount = sizeof kRunOptions / sizeof kRunOptions[0];

struct RunArgs {
  std::string kernel, input, image;
  BackendConfig cfg;
  int threads = 1;
  long long source = -1, trials = 1, delta = 1, seed = 27491095;
  bool verify = false;
  std::string prefetch_targets = "auto";  // auto | on | off
};

bool parse_run(const std::string& kernel, int argc, char** argv, RunArgs& a) {
  Options o;
  const std::string usage = "daxkit graph " + kernel + " --input FILE [options]";
  if (!o.parse(argc, argv, 2, kRunOptions, kRunOptionCount, usage.c_str())) return false;
  a.kernel = kernel;
  a.input = o.str("input", "");
  if (a.input.empty()) {
    std::fprintf(stderr, "daxkit graph %s: --input FILE is required (make one with `daxkit graph gen`)\n", kernel.c_str());
    return false;
  }
  if (!parse_backend(o.str("backend", "dram"), a.cfg.kind)) {
    std::fprintf(stderr, "daxkit graph: unknown backend '%s' (dram, dram-prefetch, emu, uring, mmap)\n",
                 o.str("backend", "").c_str());
    return false;
  }
  long long threads, contexts, units;
  double lat_us, iops;
  const long long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (!o.integer("threads", cpus, 1, 64, threads) || !o.integer("contexts", 64, 1, async::kContextsMax, contexts) ||
      !o.integer("source", -1, -1, INT32_MAX, a.source) || !o.integer("trials", 1, 1, 1000000, a.trials) ||
      !o.integer("delta", 1, 1, 1 << 30, a.delta) || !o.integer("seed", 27491095, 0, INT64_MAX, a.seed) ||
      !o.integer("units", 0, 0, async::EmuTimeDevice::kUnitsMax, units) ||
      !o.real("latency-us", 5, 0, 1e6, lat_us) || !o.real("iops", 0, 0, 1e12, iops)) {
    return false;
  }
  a.threads = int(threads);
  a.cfg.contexts = uint32_t(contexts);
  a.prefetch_targets = o.has("no-prefetch-targets") ? "off" : o.str("prefetch-targets", "auto");
  if (a.prefetch_targets != "auto" && a.prefetch_targets != "on" && a.prefetch_targets != "off") {
    std::fprintf(stderr, "daxkit graph: --prefetch-targets %s: want auto, on or off\n", a.prefetch_targets.c_str());
    return false;
  }
  a.cfg.emu = {lat_us * 1000, iops, uint32_t(units)};
  const std::string model = o.str("emu-model", "time");
  if (model != "time" && model != "thread") {
    std::fprintf(stderr, "daxkit graph: --emu-model %s: want time or thread\n", model.c_str());
    return false;
  }
  a.cfg.emu_mode = model == "time" ? EmuMode::kTime : EmuMode::kThread;
  a.cfg.uring.sqpoll = o.has("sqpoll");
  a.cfg.uring.direct = !o.has("buffered");
  a.image = o.str("image", a.input + ".pages");
  a.verify = o.has("verify");
  return true;
}

// Prepares the device address space for the chosen backend (page image for uring).
bool prepare_backend(RunArgs& a, Csr& g) {
  if (a.cfg.kind == Backend::kMmap) {
    g.addr_base = g.edges_file_offset();
    a.cfg.path = a.input;
  }
  if (a.cfg.kind != Backend::kUring) return true;
  const PageLayoutStats st = compute_page_layout(g);
  std::printf("page image: %s, %.1f MiB, %llu lists longer than a page, %.2f%% padding\n", a.image.c_str(),
              double(st.image_bytes) / (1 << 20), (unsigned long long)st.lists_multi_page,
              100.0 * double(st.pad_bytes) / double(st.image_bytes));
  if (!page_image_matches(a.image, g)) {
    std::string err;
    std::printf("page image: building from %s\n", a.input.c_str());
    std::fflush(stdout);
    if (!write_page_image(a.input, g, a.image, err)) {
      std::fprintf(stderr, "daxkit graph: %s\n", err.c_str());
      return false;
    }
  }
  a.cfg.path = a.image;
  return true;
}

NodeId pick_source(const Csr& g, uint64_t seed, long long trial) {
  for (uint64_t k = 0;; k++) {
    const NodeId s = NodeId(mix64(seed * 1000003 + uint64_t(trial) * 7919 + k) % uint64_t(g.n));
    if (g.degree(s) > 0 || k > 1000) return s;
  }
}

// User + system CPU seconds of every thread of the process so far (the team's threads join per trial).
// On a shared machine this is the work a trial did, without the time slices other processes took.
double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

bool run_trial(const RunArgs& a, const Csr& g, NodeId src, BackendRuntime& rt, double& seconds, std::string& why,
               bool& verified) {
  const double t0 = async::wall_s();
  verified = false;
  if (a.kernel == "bfs") {
    HugeArray<NodeId> parent = run_bfs(g, src, rt, a.threads);
    seconds = async::wall_s() - t0;
    if (a.verify) verified = verify_bfs(g, src, parent, why);
  } else if (a.kernel == "bc") {
    HugeArray<double> scores = run_bc(g, src, rt, a.threads);
    seconds = async::wall_s() - t0;
    if (a.verify) verified = verify_bc(g, src, scores, why);
  } else {
    HugeArray<int32_t> dist = run_sssp(g, src, int32_t(a.delta), rt, a.threads);
    seconds = async::wall_s() - t0;
    if (a.verify) verified = verify_sssp(g, src, dist, why);
  }
  return !a.verify || verified;
}

}  // namespace

int cmd_run(const std::string& kernel, int argc, char** argv) {
  RunArgs a;
  if (!parse_run(kernel, argc, argv, a)) return 2;
  Csr g;
  std::string err;
  const bool edges_in_dram = backend_needs_edges_in_dram(a.cfg.kind) || a.verify;
  if (!read_sg(a.input, edges_in_dram, g, err)) {
    std::fprintf(stderr, "daxkit graph: %s\n", err.c_str());
    return 1;
  }
  if (kernel == "sssp" && !g.weighted) {
    std::fprintf(stderr, "daxkit graph sssp: %s is unweighted; use a .wsg (`daxkit graph gen --weighted` or "
                         "`daxkit graph convert --input %s --output X.wsg`)\n", a.input.c_str(), a.input.c_str());
    return 1;
  }
  if (a.source >= g.n) {
    std::fprintf(stderr, "daxkit graph: --source %lld is not a vertex (graph has %lld)\n", a.source, (long long)g.n);
    return 1;
  }
  if (!prepare_backend(a, g)) return 1;
  const double hot_share = hot_endpoint_share(g, hot_lines(llc_bytes()));
  // auto: off for BFS on skewed graphs (its one state word per vertex then hits the cache; measured on
  // kron22/24). BC (depth, sigma, delta per vertex) and SSSP keep it: on kron22 BC with it off ran
  // 1.3-1.6x slower on emu, and SSSP ran 1.15x faster in CPU time with it on.
  const bool skew_off = kernel == "bfs" && hot_share >= 0.5;
  a.cfg.prefetch_targets = a.prefetch_targets == "auto" ? !skew_off : a.prefetch_targets == "on";
  BackendRuntime rt(g, a.cfg, a.threads);
  if (!rt.ok()) {
    std::fprintf(stderr, "daxkit graph: backend %s: %s\n", backend_name(a.cfg.kind), rt.error().c_str());
    return 1;
  }
  std::printf("graph: %s n=%lld m=%lld %s%s; kernel=%s backend=%s threads=%d contexts=%u prefetch_targets=%s (%s; hot share %.2f)\n",
              a.input.c_str(), (long long)g.n, (long long)g.m, g.directed ? "directed" : "undirected",
              g.weighted ? " weighted" : "", kernel.c_str(), backend_name(a.cfg.kind), a.threads, a.cfg.contexts,
              a.cfg.prefetch_targets ? "on" : "off", a.prefetch_targets.c_str(), hot_share);
  double total_s = 0, min_s = 1e300;
  bool all_verified = a.verify;
  for (long long t = 0; t < a.trials; t++) {
    const NodeId src = a.source >= 0 ? NodeId(a.source) : pick_source(g, uint64_t(a.seed), t);
    rt.reset_stats();
    double s = 0;
    bool verified = false;
    std::string why;
    const double cpu0 = process_cpu_s();
    const bool ok = run_trial(a, g, src, rt, s, why, verified);
    const double cpu_s = process_cpu_s() - cpu0;  // includes verification when --verify
    if (rt.corrupt_vertex() >= 0) {
      std::fprintf(stderr, "daxkit graph: %s: the neighbour list of vertex %lld holds an id that is not a vertex "
                           "(the graph has %lld) or a negative weight; regenerate the file%s\n",
                   a.cfg.kind == Backend::kUring ? a.cfg.path.c_str() : a.input.c_str(), (long long)rt.corrupt_vertex(),
                   (long long)g.n, a.cfg.kind == Backend::kUring ? " (delete the page image: it is rebuilt)" : "");
      return 1;
    }
    total_s += s;
    min_s = std::min(min_s, s);
    const async::EngineStats es = rt.stats();
    std::printf("trial %lld: source=%d time_s=%.6f requests=%llu switches=%llu empty_passes=%llu iops=%.0f cpu_s=%.6f%s\n",
                t, src, s, (unsigned long long)es.requests, (unsigned long long)es.switches,
                (unsigned long long)es.empty_passes, s > 0 ? double(es.requests) / s : 0.0, cpu_s,
                a.verify ? (ok ? " verify=ok" : " verify=FAIL") : "");
    if (!ok) {
      std::fprintf(stderr, "daxkit graph %s: verification failed at %s (source %d)\n", kernel.c_str(), why.c_str(), src);
      all_verified = false;
    }
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  // Faults show whether the edges came from memory: under a memory budget, major faults are mmap's reads.
  std::printf("summary: min_s=%.6f peak_rss_mib=%.1f major_faults=%ld minor_faults=%ld\n", min_s,
              double(ru.ru_maxrss) / 1024, ru.ru_majflt, ru.ru_minflt);
  std::printf("result: kernel=%s backend=%s avg_s=%.6f trials=%lld verified=%s\n", kernel.c_str(),
              backend_name(a.cfg.kind), total_s / double(a.trials), a.trials, all_verified ? "yes" : "no");
  return a.verify && !all_verified ? 1 : 0;
}

}  // namespace dk::graph::cli
