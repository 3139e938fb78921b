#include <algorithm>
#include <atomic>
#include <barrier>
#include <vector>

#include "graph/kernels.hpp"
#include "graph/team.hpp"
#include "graph/work.hpp"

namespace dk::graph {

namespace {

// Forward: level-synchronous BFS that also counts shortest paths (sigma).
template <uint32_t kStride>
struct ForwardVisit {
  int32_t* depth;
  double* sigma;
  int32_t level;  // depth of the frontier being expanded
  LocalQueue<>* next;
  bool want(NodeId) const { return true; }
  void prefetch(const Piece& p, const std::byte* d) const {
    for (uint32_t i = 0; i < p.bytes / kStride; i++) __builtin_prefetch(depth + load_node(d + i * kStride), 1, 3);
  }
  void visit(const Piece& p, const std::byte* d) const {
    const double su = sigma[p.u];
    for (uint32_t i = 0; i < p.bytes / kStride; i++) {
      const NodeId v = load_node(d + i * kStride);
      int32_t dv = std::atomic_ref<int32_t>(depth[v]).load(std::memory_order_relaxed);
      if (dv < 0) {
        int32_t expect = -1;
        if (std::atomic_ref<int32_t>(depth[v]).compare_exchange_strong(expect, level + 1, std::memory_order_relaxed)) {
          next->push(v);
          dv = level + 1;
        } else {
          dv = expect;
        }
      }
      if (dv == level + 1) std::atomic_ref<double>(sigma[v]).fetch_add(su, std::memory_order_relaxed);
    }
  }
};

// Backward: delta[u] = sum over successors v of sigma[u] / sigma[v] * (1 + delta[v]) (pull, per level).
template <uint32_t kStride>
struct BackwardVisit {
  const int32_t* depth;
  const double* sigma;
  double* delta;
  bool want(NodeId) const { return true; }
  void prefetch(const Piece& p, const std::byte* d) const {
    for (uint32_t i = 0; i < p.bytes / kStride; i++) __builtin_prefetch(depth + load_node(d + i * kStride), 0, 3);
  }
  void visit(const Piece& p, const std::byte* d) const {
    const int32_t succ_depth = depth[p.u] + 1;
    double acc = 0;
    for (uint32_t i = 0; i < p.bytes / kStride; i++) {
      const NodeId v = load_node(d + i * kStride);
      if (depth[v] == succ_depth) acc += (1.0 + delta[v]) / sigma[v];
    }
    acc *= sigma[p.u];
    if (p.whole) delta[p.u] += acc;  // only this context touches u
    else std::atomic_ref<double>(delta[p.u]).fetch_add(acc, std::memory_order_relaxed);
  }
};

struct BcShared {
  HugeArray<NodeId> queue;              // every level, in order: the backward pass walks it back
  std::atomic<size_t> append_at{0};
  std::vector<size_t> level_start;      // queue index where each level begins (+ end sentinel)
  SharedFrontier frontier;
  int32_t level = 0;
  bool forward = true;
  bool done = false;
};

template <uint32_t kStride>
void bc_thread(const Csr& g, int32_t* depth, double* sigma, double* delta, BcShared& sh,
               std::barrier<std::function<void()>>& bar, int threads, auto& driver) {
  LocalQueue<> next(sh.queue.data(), sh.append_at);
  while (sh.forward) {
    ForwardVisit<kStride> vis{depth, sigma, sh.level, &next};
    Claimer claimer(sh.frontier, g, driver.kSplitPages);
    driver.run_phase(claimer, vis, (sh.frontier.size + threads - 1) / threads);
    next.flush();
    bar.arrive_and_wait();
  }
  BackwardVisit<kStride> back{depth, sigma, delta};
  while (!sh.done) {
    Claimer claimer(sh.frontier, g, driver.kSplitPages);
    driver.run_phase(claimer, back, (sh.frontier.size + threads - 1) / threads);
    bar.arrive_and_wait();
  }
}

}  // namespace

HugeArray<double> run_bc(const Csr& g, NodeId source, BackendRuntime& rt, int threads) {
  assert(source >= 0 && source < g.n);
  HugeArray<int32_t> depth(size_t(g.n));
  HugeArray<double> sigma(size_t(g.n)), delta(size_t(g.n));  // zero-filled
  std::fill(depth.begin(), depth.end(), -1);
  depth[size_t(source)] = 0;
  sigma[size_t(source)] = 1;
  BcShared sh;
  sh.queue = HugeArray<NodeId>(size_t(g.n));
  sh.queue[0] = source;
  sh.append_at = 1;
  sh.level_start = {0, 1};
  sh.frontier.reset(sh.queue.data(), 1);
  // Forward steps append a level; when a level comes out empty the backward pass starts at the
  // deepest level whose successors exist (levels.size() - 3) and walks down to level 0.
  size_t back_level = 0;
  std::function<void()> step = [&]() noexcept {
    if (sh.forward) {
      const size_t tail = sh.append_at.load();
      if (tail > sh.level_start.back()) {
        sh.level_start.push_back(tail);
        sh.level++;
        sh.frontier.reset(sh.queue.data() + sh.level_start[sh.level_start.size() - 2],
                          tail - sh.level_start[sh.level_start.size() - 2]);
        return;
      }
      sh.forward = false;
      back_level = sh.level_start.size() - 1;  // number of levels
    }
    if (back_level < 2) {  // the last level has no successors; level 0 done last
      sh.done = true;
      return;
    }
    back_level--;
    const size_t lv = back_level - 1;
    sh.frontier.reset(sh.queue.data() + sh.level_start[lv], sh.level_start[lv + 1] - sh.level_start[lv]);
  };
  std::barrier<std::function<void()>> bar(threads, step);
  if (g.edge_bytes() == 4) {
    run_team(rt, threads, [&](int, auto& d) { bc_thread<4>(g, depth.data(), sigma.data(), delta.data(), sh, bar, threads, d); });
  } else {
    run_team(rt, threads, [&](int, auto& d) { bc_thread<8>(g, depth.data(), sigma.data(), delta.data(), sh, bar, threads, d); });
  }
  double biggest = 0;
  for (int64_t v = 0; v < g.n; v++) {
    if (v == source) delta[size_t(v)] = 0;
    biggest = std::max(biggest, delta[size_t(v)]);
  }
  if (biggest > 0) {
    for (int64_t v = 0; v < g.n; v++) delta[size_t(v)] /= biggest;
  }
  return delta;
}

}  // namespace dk::graph
