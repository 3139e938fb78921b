// Memory backends: `dram` (plain loads, synchronous), `mmap` (the same loads on a file mapping: the
// page cache's answer) and `dram-prefetch` (software prefetch, yield, then load: the paper's "+opt").
#pragma once
#include <cassert>
#include <cstddef>
#include <cstdint>

#include "async/device.hpp"

namespace dk::async {

// Loads from an address space that is directly addressable at `base` (DRAM or a mapping).
class LoadDevice {
 public:
  static constexpr bool kSynchronous = true;
  explicit LoadDevice(const std::byte* base) : base_(base) {}
  void issue(Slot, uint64_t, uint32_t) {}
  bool poll(Slot) { return true; }
  void progress() {}
  const std::byte* data(Slot, uint64_t addr) const { return base_ + addr; }

 private:
  const std::byte* base_;
};

// Issues software prefetches for the first lines of the request and reports completion at once: the
// yield that follows in the scheduler gives the prefetch time to land.
class PrefetchDevice {
 public:
  static constexpr bool kSynchronous = false;
  static constexpr uint32_t kLinesMax = 4;  // beyond that the hardware streamer takes over
  explicit PrefetchDevice(const std::byte* base) : base_(base) {}
  void issue(Slot, uint64_t addr, uint32_t bytes) {
    const std::byte* p = base_ + addr;
    const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
    const uintptr_t last = (reinterpret_cast<uintptr_t>(p) + bytes - 1) & ~uintptr_t{63};
    uint32_t lines = 0;
    for (uintptr_t a = first; a <= last && lines < kLinesMax; a += 64, lines++) {
      __builtin_prefetch(reinterpret_cast<const void*>(a), 0, 3);
    }
  }
  bool poll(Slot) { return true; }
  void progress() {}
  const std::byte* data(Slot, uint64_t addr) const { return base_ + addr; }

 private:
  const std::byte* base_;
};

}  // namespace dk::async
