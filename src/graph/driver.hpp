// Drivers run one phase of a kernel (one pass over a frontier) on one thread.
//   PlainDriver   - loads, no coroutines: `dram` (the in-memory baseline) and `mmap`.
//   CoroDriver<D> - N coroutine contexts on the thread's Scheduler over device D: each context claims a
//                   piece, reads it (yielding until complete), optionally prefetches the vertex data the
//                   piece points at and yields once more, then visits it.
// A Visitor provides want(u), visit(piece, bytes) and prefetch(piece, bytes).
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>

#include "async/device.hpp"
#include "async/frame_arena.hpp"
#include "async/scheduler.hpp"
#include "graph/edge_check.hpp"
#include "graph/work.hpp"

namespace dk::graph {

class PlainDriver {
 public:
  static constexpr bool kSplitPages = false;
  explicit PlainDriver(const std::byte* base, PieceCheck check = {}) : base_(base), check_(check) {}
  template <class Visitor>
  void run_phase(Claimer& c, Visitor& vis, size_t /*work_hint*/) {
    Piece p;
    while (c.next(p, vis)) {
      if (check_.ok(p.u, base_ + p.addr, p.bytes)) vis.visit(p, base_ + p.addr);
    }
  }
  async::EngineStats stats() const { return {}; }

 private:
  const std::byte* base_;
  PieceCheck check_;
};

// Prefetch+yield on the targets in batches: a 4 KiB piece of a hub's list names 1024 vertices, and
// prefetching them all at once would evict what the other contexts prefetched (64 contexts x 64 lines
// x 64 B = 256 KiB stays within L2).
inline constexpr uint32_t kTargetBatchEntries = 64;

template <async::Device Dev, class Visitor>
async::Fiber<Dev> context_body(async::Scheduler<Dev>& s, async::Slot slot, Claimer& c, Visitor& vis,
                               bool prefetch_targets, uint32_t edge_bytes, PieceCheck check) {
  Piece p;
  const uint32_t batch_bytes = kTargetBatchEntries * edge_bytes;
  while (c.next(p, vis)) {
    const std::byte* bytes = co_await s.read(slot, p.addr, p.bytes);
    if (!check.ok(p.u, bytes, p.bytes)) continue;
    if (!prefetch_targets) {
      vis.visit(p, bytes);
      continue;
    }
    if (p.bytes <= batch_bytes) {  // most pieces: one batch (saves the sub-piece bookkeeping per vertex)
      vis.prefetch(p, bytes);
      co_await s.yield();
      vis.visit(p, bytes);
      continue;
    }
    for (uint32_t off = 0; off < p.bytes; off += batch_bytes) {
      const Piece sub{p.u, p.addr + off, std::min(batch_bytes, p.bytes - off), p.whole};
      vis.prefetch(sub, bytes + off);
      co_await s.yield();
      vis.visit(sub, bytes + off);
    }
  }
}

template <async::Device Dev>
class CoroDriver {
 public:
  static constexpr bool kSplitPages = true;
  static constexpr size_t kFrameBytesMax = 512;  // generous: kernel frames measure ~150-250 bytes

  CoroDriver(Dev& dev, uint32_t contexts, bool prefetch_targets, uint32_t edge_bytes, PieceCheck check = {})
      : sched_(dev), arena_(size_t{contexts} * kFrameBytesMax), contexts_(contexts),
        prefetch_targets_(prefetch_targets), edge_bytes_(edge_bytes), check_(check) {
    assert(contexts >= 1 && contexts <= async::kContextsMax);
  }

  // work_hint: frontier vertices for this thread (spawning more contexts than that is wasted).
  template <class Visitor>
  void run_phase(Claimer& c, Visitor& vis, size_t work_hint) {
    const uint32_t spawn = uint32_t(std::clamp<size_t>(work_hint, 1, contexts_));
    arena_.reset();
    async::FrameArena::current() = &arena_;
    for (uint32_t i = 0; i < spawn; i++) {
      fibers_[i].emplace(context_body(sched_, async::Slot(i), c, vis, prefetch_targets_, edge_bytes_, check_));
      sched_.add(*fibers_[i]);
    }
    sched_.run();
    for (uint32_t i = 0; i < spawn; i++) fibers_[i].reset();
    async::FrameArena::current() = nullptr;
  }
  async::EngineStats stats() const { return sched_.stats(); }

 private:
  async::Scheduler<Dev> sched_;
  async::FrameArena arena_;
  uint32_t contexts_;
  bool prefetch_targets_;
  uint32_t edge_bytes_;
  PieceCheck check_;
  std::optional<async::Fiber<Dev>> fibers_[async::kContextsMax];
};

}  // namespace dk::graph
