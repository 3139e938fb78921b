// What prefetching can buy for top-down BFS on this machine, without coroutines: a serial BFS run two
// ways on the same graph and source, interleaved over rounds, in thread CPU time:
//   plain:     GAP's loop (offsets[u], the list, parent[v] of each neighbour, in order);
//   pipelined: a software pipeline over the frontier: offsets of the vertex 3D ahead, its list lines 2D
//              ahead, the parent[] lines of its neighbours D ahead, then the plain visit.
// The ratio is the ceiling for `dram-prefetch` vs `dram` (the coroutine version adds its scheduling).
// usage: daxkit-graph-ceiling FILE.sg [rounds] [distance]
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/csr.hpp"
#include "graph/sg_io.hpp"
#include "graph/work.hpp"

using namespace dk::graph;

namespace {

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Visits u's list: parent[v] CAS from -1 to u, as the kernel does; returns vertices appended to q.
inline size_t visit(const Csr& g, NodeId u, NodeId* parent, NodeId* q, size_t at) {
  const std::byte* e = g.edges.data() + uint64_t(g.offsets[u]) * 4;
  const std::byte* const end = g.edges.data() + uint64_t(g.offsets[u + 1]) * 4;
  for (; e < end; e += 4) {
    const NodeId v = load_node(e);
    NodeId cur = parent[v];
    if (cur < 0 && std::atomic_ref<NodeId>(parent[v]).compare_exchange_strong(cur, u, std::memory_order_relaxed)) {
      q[at++] = v;
    }
  }
  return at;
}

inline void prefetch_list(const Csr& g, NodeId w) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(g.edges.data() + uint64_t(g.offsets[w]) * 4);
  const uintptr_t z = reinterpret_cast<uintptr_t>(g.edges.data() + uint64_t(g.offsets[w + 1]) * 4);
  for (uintptr_t l = a & ~uintptr_t{63}; l < z; l += 64) __builtin_prefetch(reinterpret_cast<const void*>(l), 0, 3);
}

inline void prefetch_targets(const Csr& g, NodeId w, const NodeId* parent) {
  for (Offset j = g.offsets[w]; j < g.offsets[w + 1]; j++) __builtin_prefetch(parent + g.neighbour(j), 1, 3);
}

// Returns thread CPU seconds; `reached` gets the number of vertices reached.
double bfs(const Csr& g, NodeId src, bool pipelined, size_t d, HugeArray<NodeId>& parent, HugeArray<NodeId>& q,
           size_t& reached) {
  for (int64_t v = 0; v < g.n; v++) parent[size_t(v)] = -1;
  const double t0 = thread_cpu_s();
  parent[size_t(src)] = src;
  q[0] = src;
  size_t head = 0, tail = 1, at = 1;
  while (head < tail) {
    const NodeId* f = q.data() + head;
    const size_t nf = tail - head;
    for (size_t i = 0; i < nf; i++) {
      if (pipelined) {
        if (i + 3 * d < nf) __builtin_prefetch(&g.offsets[size_t(f[i + 3 * d])], 0, 3);
        if (i + 2 * d < nf) prefetch_list(g, f[i + 2 * d]);
        if (i + d < nf) prefetch_targets(g, f[i + d], parent.data());
      }
      at = visit(g, f[i], parent.data(), q.data(), at);
    }
    head = tail;
    tail = at;
  }
  reached = at;
  return thread_cpu_s() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: daxkit-graph-ceiling FILE.sg [rounds] [distance]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 2;
  const size_t d = argc > 3 ? size_t(std::atoi(argv[3])) : 8;
  Csr g;
  std::string err;
  if (!read_sg(argv[1], true, g, err) || g.weighted || g.n == 0) {
    std::fprintf(stderr, "daxkit-graph-ceiling: %s\n", err.empty() ? "want an unweighted, non-empty .sg" : err.c_str());
    return 1;
  }
  NodeId src = 0;
  for (int64_t u = g.n / 2; u < g.n; u++) {
    if (g.degree(NodeId(u)) > 0) {
      src = NodeId(u);
      break;
    }
  }
  HugeArray<NodeId> parent(size_t(g.n)), q(size_t(g.n));
  for (int r = 0; r < rounds; r++) {
    for (const bool pipelined : {false, true}) {
      size_t reached = 0;
      const double s = bfs(g, src, pipelined, d, parent, q, reached);
      std::printf("ceiling: round=%d loop=%s distance=%zu source=%d reached=%zu cpu_s=%.3f ns_per_edge=%.2f\n", r,
                  pipelined ? "pipelined" : "plain", d, src, reached, s, s * 1e9 / double(g.m));
    }
  }
  return 0;
}
