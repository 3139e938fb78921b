// Work distribution, as GAP's `schedule(dynamic, 64)` and the paper's Listing 3/4: each thread takes
// chunks of 64 frontier vertices from a shared cursor; the thread's contexts take the chunk's
// vertices in order. A neighbour list that spans pages is split into one piece per device page, and
// consecutive pieces go to different contexts (Listing 4), so every read is within one page.
#pragma once
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>

#include "async/device.hpp"
#include "graph/csr.hpp"

namespace dk::graph {

inline constexpr size_t kChunkVertices = 64;
inline constexpr size_t kClaimAheadVertices = 64;  // one round of 64 contexts: the miss has a round to land

struct SharedFrontier {
  const NodeId* items = nullptr;
  size_t size = 0;
  std::atomic<size_t> cursor{0};
  void reset(const NodeId* it, size_t n) {
    items = it;
    size = n;
    cursor.store(0, std::memory_order_relaxed);
  }
};

// One piece of one neighbour list: bytes [addr, addr + bytes) of the device address space.
struct Piece {
  NodeId u;
  uint64_t addr;
  uint32_t bytes;
  bool whole;  // the piece is u's entire list
};

// Per-thread; shared by the thread's contexts (which run one at a time, so no atomics inside).
class Claimer {
 public:
  // split_pages=false hands out whole lists (the plain-load backends need no splitting).
  Claimer(SharedFrontier& f, const Csr& g, bool split_pages) : f_(f), g_(g), split_(split_pages) {}

  template <class Visitor>
  bool next(Piece& p, Visitor& vis) {
    for (;;) {
      if (pos_ == end_ && !grab_chunk()) return false;
      const NodeId u = f_.items[pos_];
      if (!started_) {
        if (split_) prefetch_ahead();
        if (g_.degree(u) == 0 || !vis.want(u)) {
          pos_++;
          continue;
        }
        const uint64_t addr = g_.list_addr(u);
        const uint64_t bytes = g_.list_bytes(u);
        if (!split_ || ((addr ^ (addr + bytes - 1)) & ~uint64_t{async::kPageBytes - 1}) == 0) {
          p = Piece{u, addr, uint32_t(bytes), true};  // the common case: the whole list in one piece
          pos_++;
          return true;
        }
        list_addr_ = addr;
        list_end_ = addr + bytes;
        piece_addr_ = list_addr_;
        started_ = true;
      }
      const uint64_t page_end = (piece_addr_ | (async::kPageBytes - 1)) + 1;
      const uint64_t stop = split_ ? std::min(list_end_, page_end) : list_end_;
      assert(stop > piece_addr_);
      p = Piece{u, piece_addr_, uint32_t(stop - piece_addr_), piece_addr_ == list_addr_ && stop == list_end_};
      if (stop == list_end_) {
        pos_++;
        started_ = false;
      } else {
        piece_addr_ = stop;
      }
      return true;
    }
  }

 private:
  // The coroutine drivers' contexts claim vertices back to back and then wait on their reads, so a
  // miss on offsets[u] (and page_addr[u]) at claim time would stall every context of the thread:
  // fetch them kClaimAheadVertices claims early. (The plain driver keeps GAP's loop as it is.)
  // Not a const member: GCC (12) marks a const, loop-free function whose only effect is
  // __builtin_prefetch as pure and deletes the call, so this prefetch was never emitted.
  void prefetch_ahead() {
    const size_t ahead = pos_ + kClaimAheadVertices;
    if (ahead < f_.size) {
      const NodeId w = f_.items[ahead];
      prefetch_sink_ += uintptr_t(w);  // a side effect: keeps the call (and its prefetches) alive
      __builtin_prefetch(&g_.offsets[size_t(w)], 0, 3);
      if (!g_.page_addr.empty()) __builtin_prefetch(&g_.page_addr[size_t(w)], 0, 3);
    }
  }

  bool grab_chunk() {
    const size_t s = f_.cursor.fetch_add(kChunkVertices, std::memory_order_relaxed);
    if (s >= f_.size) return false;
    pos_ = s;
    end_ = std::min(f_.size, s + kChunkVertices);
    started_ = false;
    return true;
  }

  SharedFrontier& f_;
  const Csr& g_;
  bool split_;
  bool started_ = false;
  size_t pos_ = 0, end_ = 0;
  uint64_t list_addr_ = 0, list_end_ = 0, piece_addr_ = 0;
  uintptr_t prefetch_sink_ = 0;
};

// A fixed-capacity per-thread output buffer flushed into a shared array with one fetch_add.
template <size_t kCapacity = 1024>
class LocalQueue {
 public:
  LocalQueue(NodeId* shared, std::atomic<size_t>& shared_tail) : shared_(shared), tail_(shared_tail) {}
  void push(NodeId v) {
    if (count_ == kCapacity) flush();
    buf_[count_++] = v;
  }
  void flush() {
    if (count_ == 0) return;
    const size_t at = tail_.fetch_add(count_, std::memory_order_relaxed);
    std::copy(buf_, buf_ + count_, shared_ + at);
    count_ = 0;
  }

 private:
  NodeId* shared_;
  std::atomic<size_t>& tail_;
  size_t count_ = 0;
  NodeId buf_[kCapacity];
};

inline NodeId load_node(const std::byte* p) {
  NodeId v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace dk::graph
