#include "graph/build.hpp"

#include <algorithm>
#include <atomic>
#include <cassert>

#include "graph/progress.hpp"

namespace dk::graph {

static void count_degrees(const HugeArray<EdgeTriple>& edges, bool directed, HugeArray<Offset>& deg,
                          int threads) {
  parallel_threads(threads, [&](int t) {
    const size_t lo = edges.size() * t / threads, hi = edges.size() * (t + 1) / threads;
    for (size_t i = lo; i < hi; i++) {
      const EdgeTriple& e = edges[i];
      if (e.u == e.v) continue;
      std::atomic_ref<Offset>(deg[e.u]).fetch_add(1, std::memory_order_relaxed);
      if (!directed) std::atomic_ref<Offset>(deg[e.v]).fetch_add(1, std::memory_order_relaxed);
    }
  });
}

// deg[] becomes offsets[] (n + 1 entries, exclusive prefix sum).
static void prefix_sum(HugeArray<Offset>& a, int64_t n) {
  Offset sum = 0;
  for (int64_t u = 0; u < n; u++) {
    const Offset d = a[u];
    a[u] = sum;
    sum += d;
  }
  a[n] = sum;
}

static void scatter(const HugeArray<EdgeTriple>& edges, bool directed, HugeArray<Offset>& cursor,
                    HugeArray<WNode>& slots, int threads) {
  parallel_threads(threads, [&](int t) {
    const size_t lo = edges.size() * t / threads, hi = edges.size() * (t + 1) / threads;
    for (size_t i = lo; i < hi; i++) {
      const EdgeTriple& e = edges[i];
      if (e.u == e.v) continue;
      slots[std::atomic_ref<Offset>(cursor[e.u]).fetch_add(1, std::memory_order_relaxed)] = {e.v, e.w};
      if (!directed) {
        slots[std::atomic_ref<Offset>(cursor[e.v]).fetch_add(1, std::memory_order_relaxed)] = {e.u, e.w};
      }
    }
  });
}

// Sorts each list by (v, w) and keeps the first of each v; new_deg[u] = kept entries.
static void sort_unique(const HugeArray<Offset>& off, HugeArray<WNode>& slots, HugeArray<Offset>& new_deg,
                        int64_t n, int threads) {
  std::atomic<int64_t> next{0};
  parallel_threads(threads, [&](int) {
    for (;;) {
      const int64_t lo = next.fetch_add(4096);
      if (lo >= n) break;
      const int64_t hi = std::min(n, lo + 4096);
      for (int64_t u = lo; u < hi; u++) {
        WNode* b = slots.data() + off[u];
        WNode* e = slots.data() + off[u + 1];
        std::sort(b, e, [](const WNode& x, const WNode& y) { return x.v != y.v ? x.v < y.v : x.w < y.w; });
        WNode* last = std::unique(b, e, [](const WNode& x, const WNode& y) { return x.v == y.v; });
        new_deg[u] = last - b;
      }
    }
  });
}

static void pack(const HugeArray<Offset>& old_off, const HugeArray<WNode>& slots, Csr& g, int threads) {
  parallel_threads(threads, [&](int t) {
    const int64_t lo = g.n * t / threads, hi = g.n * (t + 1) / threads;
    for (int64_t u = lo; u < hi; u++) {
      const WNode* src = slots.data() + old_off[u];
      std::byte* dst = g.edges.data() + uint64_t(g.offsets[u]) * g.edge_bytes();
      const int64_t d = g.offsets[u + 1] - g.offsets[u];
      for (int64_t i = 0; i < d; i++) {
        __builtin_memcpy(dst + i * g.edge_bytes(), &src[i], g.edge_bytes());
      }
    }
  });
}

Csr build_csr(const HugeArray<EdgeTriple>& edges, int64_t n, bool directed, bool weighted, int threads) {
  assert(n > 0);
  assert(threads >= 1);
  Progress bar("build", 5);
  HugeArray<Offset> off(size_t(n + 1));  // zero-filled anonymous memory
  count_degrees(edges, directed, off, threads);
  prefix_sum(off, n);
  bar.update(1);
  HugeArray<WNode> slots(size_t(off[n]));
  {
    HugeArray<Offset> cursor(size_t(n + 1));
    std::copy(off.begin(), off.end(), cursor.begin());
    scatter(edges, directed, cursor, slots, threads);
  }
  bar.update(2);
  HugeArray<Offset> new_deg(size_t(n + 1));
  sort_unique(off, slots, new_deg, n, threads);
  prefix_sum(new_deg, n);
  bar.update(3);
  Csr g;
  g.directed = directed;
  g.weighted = weighted;
  g.n = n;
  g.m = new_deg[n];
  g.offsets = std::move(new_deg);
  g.edges.allocate(size_t(g.m) * g.edge_bytes());
  pack(off, slots, g, threads);
  bar.finish();
  return g;
}

}  // namespace dk::graph
