// Description: BFS, BC and SSSP give the serial reference's answers (GAP verifier definitions) on
// every backend - dram, dram-prefetch, emu (time model and device-thread model), mmap and uring - with
// 1 and 2 threads and 1, 7 and 64 contexts per thread, on kron and urand graphs of scale 11; and the
// verifiers themselves reject a corrupted parent, score and distance. uring is skipped with a reason
// when io_uring or O_DIRECT is unavailable where the test writes its files.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "graph/backend.hpp"
#include "graph/generate.hpp"
#include "graph/kernels.hpp"
#include "graph/page_image.hpp"
#include "graph/reference.hpp"
#include "graph/sg_io.hpp"

using namespace dk::graph;

static int g_fail = 0, g_runs = 0;

struct Variant {
  const char* name;
  BackendConfig cfg;
};

// The first vertex at or after `from` with edges (kron leaves many vertices isolated).
static NodeId with_edges(const Csr& g, NodeId from) {
  while (from + 1 < g.n && g.degree(from) == 0) from++;
  return from;
}

static bool check(const char* kernel, const Csr& g, NodeId src, BackendRuntime& rt, int threads, int32_t delta) {
  std::string why;
  bool ok;
  if (std::string(kernel) == "bfs") ok = verify_bfs(g, src, run_bfs(g, src, rt, threads), why);
  else if (std::string(kernel) == "bc") ok = verify_bc(g, src, run_bc(g, src, rt, threads), why);
  else ok = verify_sssp(g, src, run_sssp(g, src, delta, rt, threads), why);
  g_runs++;
  if (!ok) std::fprintf(stderr, "  %s wrong: %s\n", kernel, why.c_str());
  return ok;
}

static void run_variant(const Variant& v, Csr& g, const std::vector<const char*>& kernels) {
  for (int threads : {1, 2}) {
    if (v.cfg.kind == Backend::kEmu && v.cfg.emu_mode == EmuMode::kThread && threads > 1) continue;  // 2 cores
    for (uint32_t contexts : {1u, 7u, 64u}) {
      BackendConfig cfg = v.cfg;
      cfg.contexts = contexts;
      BackendRuntime rt(g, cfg, threads);
      if (!rt.ok()) {
        std::fprintf(stderr, "FAIL %s: %s\n", v.name, rt.error().c_str());
        g_fail++;
        return;
      }
      for (const char* k : kernels) {
        for (NodeId src : {with_edges(g, 1), with_edges(g, NodeId(g.n / 3))}) {
          if (!check(k, g, src, rt, threads, k[1] == 's' ? 3 : 1)) {
            std::fprintf(stderr, "FAIL %s %s threads=%d contexts=%u source=%d\n", k, v.name, threads, contexts, src);
            g_fail++;
          }
        }
      }
    }
  }
}

static void verifiers_reject_corruption(const Csr& g) {
  std::string why;
  BackendConfig cfg;
  BackendRuntime rt(g, cfg, 1);
  const NodeId src = with_edges(g, 1);
  HugeArray<NodeId> parent = run_bfs(g, src, rt, 1);
  for (NodeId v = 0; v < g.n; v++) {
    if (v != src && parent[v] >= 0) {
      parent[v] = v;  // not a neighbour one level up
      break;
    }
  }
  if (verify_bfs(g, src, parent, why)) g_fail++, std::fprintf(stderr, "FAIL bfs verifier accepted a bad parent\n");
  HugeArray<double> scores = run_bc(g, src, rt, 1);
  scores[size_t(g.n / 2)] += 0.01;
  if (verify_bc(g, src, scores, why)) g_fail++, std::fprintf(stderr, "FAIL bc verifier accepted a bad score\n");
  if (g.weighted) {
    HugeArray<int32_t> dist = run_sssp(g, src, 1, rt, 1);
    dist[size_t(g.n / 2)] += 1;
    if (verify_sssp(g, src, dist, why)) g_fail++, std::fprintf(stderr, "FAIL sssp verifier accepted a bad distance\n");
  }
}

int main() {
  const char* dir = getenv("DAXKIT_BUILD");
  const std::string base = std::string(dir ? dir : "/tmp") + "/graph_kernels_match_reference";
  for (GenKind kind : {GenKind::kKron, GenKind::kUrand}) {
    GenOptions opt;
    opt.kind = kind;
    opt.scale = 11;
    opt.weighted = kind == GenKind::kUrand;
    Csr g = generate(opt);
    const std::string path = base + (g.weighted ? ".wsg" : ".sg");
    std::string err;
    if (!write_sg(path, g, err)) {
      std::fprintf(stderr, "FAIL %s\n", err.c_str());
      return 1;
    }
    std::vector<const char*> kernels = {"bfs", "bc"};
    if (g.weighted) kernels.push_back("sssp");
    verifiers_reject_corruption(g);

    BackendConfig dram, pf, emu, emu_thread;
    dram.kind = Backend::kDram;
    pf.kind = Backend::kDramPrefetch;
    emu.kind = Backend::kEmu;
    emu.emu = {2000, 5e6, 256};
    emu_thread = emu;
    emu_thread.emu_mode = EmuMode::kThread;
    emu_thread.emu = {1000, 0, 0};
    BackendConfig pf_plain = pf;
    pf_plain.prefetch_targets = false;
    for (const Variant& v : {Variant{"dram", dram}, Variant{"dram-prefetch", pf}, Variant{"dram-prefetch-noprefetch-targets", pf_plain},
                             Variant{"emu-time", emu}, Variant{"emu-thread", emu_thread}}) {
      run_variant(v, g, kernels);
    }
    // File backends: same graph, edges addressed in the file (mmap) or the page image (uring).
    g.addr_base = g.edges_file_offset();
    BackendConfig mm;
    mm.kind = Backend::kMmap;
    mm.path = path;
    run_variant(Variant{"mmap", mm}, g, kernels);
    g.addr_base = 0;
    compute_page_layout(g);
    const std::string img = path + ".pages";
    if (!write_page_image(path, g, img, err)) {
      std::fprintf(stderr, "FAIL %s\n", err.c_str());
      return 1;
    }
    BackendConfig ur;
    ur.kind = Backend::kUring;
    ur.path = img;
    dk::async::UringDevice probe(img, 1, ur.uring);
    if (probe.ok()) {
      run_variant(Variant{"uring", ur}, g, kernels);
    } else {
      std::printf("SKIP uring: %s\n", probe.error().c_str());
    }
    unlink(img.c_str());
    unlink(path.c_str());
  }
  std::printf("%d kernel runs, %d failures: %s\n", g_runs, g_fail, g_fail == 0 ? "PASS" : "FAIL");
  return g_fail == 0 ? 0 : 1;
}
