#include <atomic>
#include <barrier>

#include "graph/kernels.hpp"
#include "graph/team.hpp"
#include "graph/work.hpp"

namespace dk::graph {

namespace {

template <uint32_t kStride>
struct BfsVisit {
  NodeId* parent;
  LocalQueue<>* next;
  bool want(NodeId) const { return true; }
  // Both loops keep what they use in locals: the CAS is a compiler barrier, so members and p.bytes would be
  // reloaded on every edge (a third of the loop's instructions; at ~0.5 instructions per cycle that is time).
  void prefetch(const Piece& p, const std::byte* d) const {
    NodeId* const par = parent;
    const std::byte* const end = d + p.bytes;
#pragma GCC unroll 8
    for (const std::byte* e = d; e < end; e += kStride) __builtin_prefetch(par + load_node(e), 1, 3);
  }
  void visit(const Piece& p, const std::byte* d) const {
    assert(p.bytes % kStride == 0);
    NodeId* const par = parent;
    const NodeId u = p.u;
    LocalQueue<>* const out = next;
    const std::byte* const end = d + p.bytes;
    for (const std::byte* e = d; e < end; e += kStride) {
      const NodeId v = load_node(e);
      NodeId cur = par[v];
      if (cur < 0 && std::atomic_ref<NodeId>(par[v]).compare_exchange_strong(cur, u, std::memory_order_relaxed)) {
        out->push(v);
      }
    }
  }
};

// The frontier is a sliding window [head, tail) over queue; the next level is appended after tail.
struct BfsShared {
  HugeArray<NodeId> queue;
  std::atomic<size_t> append_at{0};
  size_t head = 0, tail = 0;
  SharedFrontier frontier;
  bool done = false;
};

template <uint32_t kStride>
void bfs_thread(const Csr& g, NodeId* parent, BfsShared& sh, std::barrier<std::function<void()>>& bar,
                int threads, auto& driver) {
  LocalQueue<> next(sh.queue.data(), sh.append_at);
  BfsVisit<kStride> vis{parent, &next};
  for (;;) {
    Claimer claimer(sh.frontier, g, driver.kSplitPages);
    driver.run_phase(claimer, vis, (sh.frontier.size + threads - 1) / threads);
    next.flush();
    bar.arrive_and_wait();
    if (sh.done) break;
  }
}

}  // namespace

HugeArray<NodeId> run_bfs(const Csr& g, NodeId source, BackendRuntime& rt, int threads) {
  assert(source >= 0 && source < g.n);
  HugeArray<NodeId> parent(size_t(g.n));
  for (int64_t v = 0; v < g.n; v++) parent[size_t(v)] = -1;
  parent[size_t(source)] = source;
  BfsShared sh;
  sh.queue = HugeArray<NodeId>(size_t(g.n));
  sh.queue[0] = source;
  sh.append_at = 1;
  sh.tail = 1;
  sh.frontier.reset(sh.queue.data(), 1);
  std::function<void()> step = [&sh]() noexcept {
    sh.head = sh.tail;
    sh.tail = sh.append_at.load();
    sh.frontier.reset(sh.queue.data() + sh.head, sh.tail - sh.head);
    sh.done = sh.tail == sh.head;
  };
  std::barrier<std::function<void()>> bar(threads, step);
  if (g.edge_bytes() == 4) {
    run_team(rt, threads, [&](int, auto& d) { bfs_thread<4>(g, parent.data(), sh, bar, threads, d); });
  } else {
    run_team(rt, threads, [&](int, auto& d) { bfs_thread<8>(g, parent.data(), sh, bar, threads, d); });
  }
  return parent;
}

}  // namespace dk::graph
