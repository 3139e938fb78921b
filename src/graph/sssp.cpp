#include <algorithm>
#include <atomic>
#include <barrier>
#include <vector>

#include "graph/kernels.hpp"
#include "graph/team.hpp"
#include "graph/work.hpp"

namespace dk::graph {

namespace {

using Bins = std::vector<std::vector<NodeId>>;

struct RelaxVisit {
  int32_t* dist;
  int32_t delta;
  int64_t bin;      // current bucket
  Bins* bins;       // this thread's buckets
  // A vertex queued in an earlier bucket and since improved was already relaxed there (GAP's test).
  bool want(NodeId u) const {
    return std::atomic_ref<int32_t>(dist[u]).load(std::memory_order_relaxed) >= int64_t(delta) * bin;
  }
  void prefetch(const Piece& p, const std::byte* d) const {
    for (uint32_t i = 0; i < p.bytes / 8; i++) __builtin_prefetch(dist + load_node(d + i * 8), 1, 3);
  }
  void visit(const Piece& p, const std::byte* d) const {
    assert(p.bytes % 8 == 0);
    const int32_t du = std::atomic_ref<int32_t>(dist[p.u]).load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < p.bytes / 8; i++) {
      WNode e;
      __builtin_memcpy(&e, d + i * 8, sizeof e);
      const int64_t nd = int64_t(du) + e.w;  // no int32 wrap: a sum past INT32_MAX is never < old
      std::atomic_ref<int32_t> dv(dist[e.v]);
      int32_t old = dv.load(std::memory_order_relaxed);
      while (nd < old) {
        if (dv.compare_exchange_weak(old, int32_t(nd), std::memory_order_relaxed)) {
          const size_t b = size_t(nd / delta);
          if (b >= bins->size()) bins->resize(b + 1);
          (*bins)[b].push_back(e.v);
          break;
        }
      }
    }
  }
};

struct SsspShared {
  HugeArray<NodeId> frontier_items;
  std::atomic<size_t> append_at{0};
  SharedFrontier frontier;
  int64_t bin = 0;
  std::atomic<int64_t> next_bin{INT64_MAX};
  bool done = false;
};

int64_t first_nonempty(const Bins& bins, int64_t from) {
  for (size_t b = size_t(from); b < bins.size(); b++) {
    if (!bins[b].empty()) return int64_t(b);
  }
  return INT64_MAX;
}

void sssp_thread(const Csr& g, int32_t* dist, int32_t delta, SsspShared& sh, std::barrier<std::function<void()>>& bar,
                 int threads, auto& driver) {
  Bins bins;
  for (;;) {
    RelaxVisit vis{dist, delta, sh.bin, &bins};
    Claimer claimer(sh.frontier, g, driver.kSplitPages);
    driver.run_phase(claimer, vis, (sh.frontier.size + threads - 1) / threads);
    // Agree on the next bucket: the smallest non-empty one over all threads.
    const int64_t mine = first_nonempty(bins, sh.bin);
    int64_t seen = sh.next_bin.load();
    while (mine < seen && !sh.next_bin.compare_exchange_weak(seen, mine)) {
    }
    bar.arrive_and_wait();  // step: bin = next_bin, or done
    if (sh.done) break;
    if (size_t(sh.bin) >= bins.size()) bins.resize(size_t(sh.bin) + 1);  // other threads own this bucket
    std::vector<NodeId>& b = bins[size_t(sh.bin)];
    const size_t at = sh.append_at.fetch_add(b.size());
    assert(at + b.size() <= sh.frontier_items.size());  // bounded by m: one push per successful relax
    std::copy(b.begin(), b.end(), sh.frontier_items.data() + at);
    b.clear();
    bar.arrive_and_wait();  // step: publish the frontier
  }
}

}  // namespace

HugeArray<int32_t> run_sssp(const Csr& g, NodeId source, int32_t delta, BackendRuntime& rt, int threads) {
  assert(g.weighted);
  assert(delta >= 1);
  HugeArray<int32_t> dist(size_t(g.n));
  std::fill(dist.begin(), dist.end(), kDistInf);
  dist[size_t(source)] = 0;
  SsspShared sh;
  // A vertex can be queued once per improvement, at most once per incoming edge (GAP sizes it so).
  sh.frontier_items = HugeArray<NodeId>(size_t(std::max<int64_t>(g.m, 1)));
  sh.frontier_items[0] = source;
  sh.frontier.reset(sh.frontier_items.data(), 1);
  bool collecting = false;  // alternate: choose bucket, then publish frontier
  std::function<void()> step = [&]() noexcept {
    if (!collecting) {
      const int64_t nb = sh.next_bin.exchange(INT64_MAX);
      if (nb == INT64_MAX) {
        sh.done = true;
        return;
      }
      sh.bin = nb;
      sh.append_at = 0;
      collecting = true;
      return;
    }
    sh.frontier.reset(sh.frontier_items.data(), sh.append_at.load());
    collecting = false;
  };
  std::barrier<std::function<void()>> bar(threads, step);
  run_team(rt, threads, [&](int, auto& d) { sssp_thread(g, dist.data(), delta, sh, bar, threads, d); });
  return dist;
}

}  // namespace dk::graph
