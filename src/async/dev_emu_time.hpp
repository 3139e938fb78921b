// `emu`, time-based model: a deterministic emulated low-latency device for sweeps.
//
// The device serves reads from a DRAM backing store. A request issued at time t completes at
//   start + latency, start = max(t, unit_free[unit], bucket_next)
// where unit = page % units (parallel units: flash dies, each busy `latency` per read) and bucket_next
// spaces request starts 1/iops_max apart (the device's IOPS ceiling). Completion is detected by the
// host comparing the clock with the slot's completion time, the analogue of polling a completion word.
// The data is prefetched into the cache at issue (the device writes into the LLC, as DDIO does).
//
// Clock reads are amortised: rdtsc costs ~20 ns in this VM, more than the engine itself, so issue
// refreshes the cached clock once every kClockEvery requests (and poll whenever the cached clock says
// "not yet"). A request may thus be stamped up to kClockEvery-1 issues early: at ~100 ns of host work
// per request that is < 10% of a 5 us latency, and only ever optimistic by that bound.
//
// The clock is a template parameter: TscClock in production; a test substitutes a simulated clock
// that advances only when the host idles, which makes every figure of the model exact and
// independent of the machine's load (tests/graph/emu_model_honours_latency_and_iops).
#pragma once
#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "async/device.hpp"
#include "async/tsc.hpp"

namespace dk::async {

struct EmuModel {
  double latency_ns = 5000;  // per read, issue to completion
  double iops_max = 0;       // device IOPS ceiling; 0 = unlimited
  uint32_t units = 0;        // parallel units, each busy latency_ns per read; 0 = unlimited
};

// The production clock: the calibrated TSC; idling is a pause instruction.
struct TscClock {
  static uint64_t now() { return tsc_now(); }
  static uint64_t from_ns(double ns) { return ns_to_tsc(ns); }
  static void idle() { _mm_pause(); }
};

template <class Clock>
class EmuTimeDeviceT {
 public:
  static constexpr bool kSynchronous = false;
  static constexpr uint32_t kUnitsMax = 1u << 16;
  static constexpr uint32_t kClockEvery = 4;
  static_assert((kClockEvery & (kClockEvery - 1)) == 0, "mask arithmetic");

  EmuTimeDeviceT(const std::byte* base, const EmuModel& m)
      : base_(base),
        latency_tsc_(Clock::from_ns(m.latency_ns)),
        interval_tsc_(m.iops_max > 0 ? Clock::from_ns(1e9 / m.iops_max) : 0),
        now_tsc_(Clock::now()),
        unit_free_tsc_(std::min(m.units, kUnitsMax), 0) {
    assert(m.latency_ns >= 0);
    assert(m.units <= kUnitsMax);
  }

  void issue(Slot slot, uint64_t addr, uint32_t bytes) {
    if ((++issues_ & (kClockEvery - 1)) == 0) now_tsc_ = Clock::now();
    uint64_t start = std::max(now_tsc_, bucket_next_tsc_);
    if (interval_tsc_ != 0) bucket_next_tsc_ = start + interval_tsc_;
    if (!unit_free_tsc_.empty()) {
      uint64_t& unit_free = unit_free_tsc_[(addr / kPageBytes) % unit_free_tsc_.size()];
      start = std::max(start, unit_free);
      unit_free = start + latency_tsc_;
    }
    done_tsc_[slot] = start + latency_tsc_;
    __builtin_prefetch(base_ + addr, 0, 3);
    if ((addr & 63) + bytes > 64) __builtin_prefetch(base_ + addr + 64, 0, 3);
  }
  // Compare with the cached clock first: when the scan reaches an old request it is usually done.
  bool poll(Slot slot) {
    if (done_tsc_[slot] <= now_tsc_) return true;
    now_tsc_ = Clock::now();
    return done_tsc_[slot] <= now_tsc_;
  }
  void progress() { Clock::idle(); }
  const std::byte* data(Slot, uint64_t addr) const { return base_ + addr; }

 private:
  const std::byte* base_;
  uint64_t issues_ = 0;
  uint64_t latency_tsc_;
  uint64_t interval_tsc_;
  uint64_t now_tsc_ = 0;
  uint64_t bucket_next_tsc_ = 0;
  std::vector<uint64_t> unit_free_tsc_;  // sized once at construction
  uint64_t done_tsc_[kContextsMax] = {};
};

using EmuTimeDevice = EmuTimeDeviceT<TscClock>;

}  // namespace dk::async
