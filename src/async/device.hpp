// The device interface every backend implements (checked by the Device concept).
//
// A request is "read `bytes` at device address `addr` into the context's buffer". Addresses are byte
// offsets in the device's address space (the edge file for file backends). A request never crosses a
// kPageBytes-aligned page: callers split larger reads, as the paper splits big neighbour lists.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>

namespace dk::async {

inline constexpr uint32_t kPageBytes = 4096;
inline constexpr uint32_t kContextsMax = 1024;  // per scheduler (= per thread)
static_assert((kPageBytes & (kPageBytes - 1)) == 0, "page size must be a power of two");
static_assert(kContextsMax <= 65535, "context slots are 16-bit");

using Slot = uint16_t;

template <class D>
concept Device = requires(D d, Slot s, uint64_t addr, uint32_t bytes) {
  { D::kSynchronous } -> std::convertible_to<bool>;  // true: data available at issue, never yield
  { d.issue(s, addr, bytes) };                        // post a read for slot s (asynchronous devices)
  { d.poll(s) } -> std::convertible_to<bool>;        // has slot s's read completed? (CN polling)
  { d.progress() };                                   // nothing was ready: submit / reap / wait a bit
  { d.data(s, addr) } -> std::convertible_to<const std::byte*>;  // where slot s's bytes are
};

// Engine counters, per scheduler (per thread); summed by the caller.
struct EngineStats {
  uint64_t requests = 0;      // reads issued
  uint64_t switches = 0;      // context resumptions through the scheduler
  uint64_t empty_passes = 0;  // full scans of the ring that found no completed request
  EngineStats& operator+=(const EngineStats& o) {
    requests += o.requests;
    switches += o.switches;
    empty_passes += o.empty_passes;
    return *this;
  }
};

}  // namespace dk::async
