#include <algorithm>
#include <atomic>
#include <barrier>
#include <map>
#include <vector>

#include "graph/kernels.hpp"
#include "graph/team.hpp"
#include "graph/work.hpp"

namespace dk::graph {

namespace {

// A thread's buckets (delta-stepping): a ring of kWindow buckets from the current one, and the buckets past it
// in an ordered map. Every bucket a relaxation fills is >= the current one (weights are >= 0), and a bucket is
// at most max weight / delta past it, so with the usual weights everything stays in the ring; an edge heavy
// against delta (weights in metres or ns, delta 1) goes to the map instead of a vector per distance value
// (review 13, finding 4: one edge of weight 5e7 took 2.3 GB, 3e8 aborted with bad_alloc).
class Bins {
 public:
  static constexpr int64_t kWindow = 4096;  // a power of two
  void push(int64_t b, NodeId v) {
    if (b < base_ + kWindow) {
      ring_[size_t(b & (kWindow - 1))].push_back(v);
      hi_ = std::max(hi_, b);
    } else {
      far_[b].push_back(v);
    }
  }
  // The smallest non-empty bucket, from the current one; INT64_MAX when none.
  int64_t first_nonempty() const {
    for (int64_t b = base_; b <= hi_; b++) {  // hi_ < base_ + kWindow: nothing in the ring past it
      if (!ring_[size_t(b & (kWindow - 1))].empty()) return b;
    }
    return far_.empty() ? INT64_MAX : far_.begin()->first;
  }
  // Bucket b (>= the current one, and no bucket before it holds anything) made the current one.
  std::vector<NodeId>& take(int64_t b) {
    base_ = b;
    while (!far_.empty() && far_.begin()->first < base_ + kWindow) {
      auto it = far_.begin();
      std::vector<NodeId>& into = ring_[size_t(it->first & (kWindow - 1))];
      into.insert(into.end(), it->second.begin(), it->second.end());
      hi_ = std::max(hi_, it->first);
      far_.erase(it);
    }
    return ring_[size_t(b & (kWindow - 1))];
  }

 private:
  std::vector<std::vector<NodeId>> ring_ = std::vector<std::vector<NodeId>>(size_t(kWindow));
  std::map<int64_t, std::vector<NodeId>> far_;
  int64_t base_ = 0;
  int64_t hi_ = -1;  // the largest bucket ever put into the ring
};

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
          bins->push(nd / delta, e.v);
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

void sssp_thread(const Csr& g, int32_t* dist, int32_t delta, SsspShared& sh, std::barrier<std::function<void()>>& bar,
                 int threads, auto& driver) {
  Bins bins;
  for (;;) {
    RelaxVisit vis{dist, delta, sh.bin, &bins};
    Claimer claimer(sh.frontier, g, driver.kSplitPages);
    driver.run_phase(claimer, vis, (sh.frontier.size + threads - 1) / threads);
    // Agree on the next bucket: the smallest non-empty one over all threads.
    const int64_t mine = bins.first_nonempty();
    int64_t seen = sh.next_bin.load();
    while (mine < seen && !sh.next_bin.compare_exchange_weak(seen, mine)) {
    }
    bar.arrive_and_wait();  // step: bin = next_bin, or done
    if (sh.done) break;
    std::vector<NodeId>& b = bins.take(sh.bin);  // maybe empty here: other threads hold this bucket
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
