// Neighbour entries from a file are input: an id outside [0, n) would index past the per-vertex arrays
// and a negative weight would send SSSP's bucket index past its bins. Every entry that a kernel visits
// is checked once: at load when the edges are read into DRAM, and per piece, right after the read, when
// they stay on a device (mmap, uring) -- a second pass over bytes already in cache.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

#include "graph/csr.hpp"

namespace dk::graph {

// True when every entry of d[0, count) names a vertex of an n-vertex graph (weighted: and has a weight
// >= 0). Branch-free over the whole range so the compiler vectorises it: pieces are short and many.
template <bool kWeighted>
inline bool entries_valid(const std::byte* d, uint64_t count, int64_t n) {
  constexpr uint32_t kStride = kWeighted ? 8 : 4;
  const uint32_t limit = uint32_t(n);  // n <= INT32_MAX; a negative id is >= limit as unsigned
  uint32_t bad = 0;
  for (uint64_t j = 0; j < count; j++) {
    uint32_t v;
    std::memcpy(&v, d + j * kStride, 4);
    bad |= uint32_t(v >= limit);
    if constexpr (kWeighted) {
      uint32_t w;
      std::memcpy(&w, d + j * kStride + 4, 4);
      bad |= w >> 31;
    }
  }
  return bad == 0;
}

// Entry i of a neighbour array: its id v and (weighted) weight w, else w = 0.
inline void entry_at(const std::byte* d, uint64_t i, bool weighted, int32_t& v, int32_t& w) {
  const uint32_t stride = weighted ? 8 : 4;
  std::memcpy(&v, d + i * stride, 4);
  w = 0;
  if (weighted) std::memcpy(&w, d + i * stride + 4, 4);
}

// Index of the first entry of d[0, count) that is not a vertex of an n-vertex graph (or, weighted, has a
// negative weight); -1 when all are good.
inline int64_t first_bad_entry(const std::byte* d, uint64_t count, bool weighted, int64_t n) {
  if (weighted ? entries_valid<true>(d, count, n) : entries_valid<false>(d, count, n)) return -1;
  for (uint64_t j = 0; j < count; j++) {
    int32_t v, w;
    entry_at(d, j, weighted, v, w);
    if (v < 0 || v >= n || w < 0) return int64_t(j);
  }
  return -1;
}

// "neighbour entry E holds id V (the graph has N vertices)" or "... weight W (negative)".
inline std::string corrupt_entry_text(const Csr& g, int32_t v, int32_t w, int64_t entry) {
  if (v < 0 || v >= g.n) {
    return "neighbour entry " + std::to_string(entry) + " holds id " + std::to_string(v) + ", not a vertex (the graph has " +
           std::to_string(g.n) + ")";
  }
  return "neighbour entry " + std::to_string(entry) + " has weight " + std::to_string(w) + " (negative)";
}

// Where a run met the first bad neighbour list (shared by a run's threads): the vertex, or -1.
struct EdgeFault {
  std::atomic<int64_t> vertex{-1};
  void note(NodeId u) {
    int64_t none = -1;
    vertex.compare_exchange_strong(none, u, std::memory_order_relaxed);
  }
};

// Checks pieces read from a device; a default-constructed one (n = 0) checks nothing.
struct PieceCheck {
  EdgeFault* fault = nullptr;
  int64_t n = 0;
  bool weighted = false;
  bool enabled() const { return fault != nullptr; }
  // True when the piece of u's list may be visited.
  bool ok(NodeId u, const std::byte* d, uint32_t bytes) const {
    if (fault == nullptr) return true;
    if (weighted ? entries_valid<true>(d, bytes / 8, n) : entries_valid<false>(d, bytes / 4, n)) return true;
    fault->note(u);
    return false;
  }
};

}  // namespace dk::graph
