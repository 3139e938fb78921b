// `emu`, device-thread model: a real device thread implementing the paper's lightweight interface.
//
//   host (L1/L2): write the submission entry (addr, bytes, slot), then publish its ticket with a release
//                 store. No doorbell: nothing tells the device a request is there.
//   device (L3/L4): a thread polls every queue's next entry (SQ polling), holds each request for the
//                 modelled latency (and IOPS ceiling), copies the bytes into the slot's data buffer,
//                 then writes the slot's completion word (release). No completion queue.
//   host (L5):    polls its slot's completion word (acquire) when the scheduler scans it (CN polling).
//
// One EmuHub (one device thread) serves up to kQueuesMax host threads, each through an EmuQueueDevice.
#pragma once
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sched.h>
#include <thread>
#include <vector>

#include "async/dev_emu_time.hpp"
#include "async/device.hpp"

namespace dk::async {

struct alignas(64) SqEntry {
  std::atomic<uint64_t> ticket{0};  // = position + 1 once the host has filled the entry
  uint64_t addr = 0;
  uint32_t bytes = 0;
  Slot slot = 0;
};

inline constexpr uint32_t kSqEntries = 2 * kContextsMax;  // > outstanding requests per host thread
static_assert((kSqEntries & (kSqEntries - 1)) == 0, "ring index masks need a power of two");
static_assert(kSqEntries > kContextsMax, "a host may never lap an entry the device has not read");

// Host-side view of one queue; the Device the scheduler drives.
class EmuQueueDevice {
 public:
  static constexpr bool kSynchronous = false;
  EmuQueueDevice();
  EmuQueueDevice(const EmuQueueDevice&) = delete;
  EmuQueueDevice& operator=(const EmuQueueDevice&) = delete;

  void issue(Slot slot, uint64_t addr, uint32_t bytes) {
    SqEntry& e = sq_[sq_tail_ & (kSqEntries - 1)];
    e.addr = addr;
    e.bytes = bytes;
    e.slot = slot;
    want_[slot] = ++sq_tail_;
    e.ticket.store(sq_tail_, std::memory_order_release);
  }
  bool poll(Slot slot) { return done_[slot].load(std::memory_order_acquire) == want_[slot]; }
  // Nothing ready: spin, but give the CPU away now and then in case the device thread shares this
  // core (2-core machines, other load): a spinning host would otherwise starve its own device.
  void progress() {
    if ((++idle_passes_ & 63) == 0) sched_yield();
    else _mm_pause();
  }
  const std::byte* data(Slot slot, uint64_t addr) const {
    return buffers_.get() + size_t{slot} * kPageBytes + (addr & (kPageBytes - 1));
  }

 private:
  friend class EmuHub;
  std::unique_ptr<SqEntry[]> sq_;
  uint64_t sq_tail_ = 0;                    // host-owned
  uint64_t idle_passes_ = 0;                // host-owned
  uint64_t sq_head_ = 0;                    // device-owned
  uint64_t want_[kContextsMax] = {};        // host: ticket each slot waits for
  std::unique_ptr<std::atomic<uint64_t>[]> done_;  // device writes, host polls
  std::unique_ptr<std::byte[]> buffers_;    // kContextsMax data buffers of one page
};

class EmuHub {
 public:
  static constexpr uint32_t kQueuesMax = 64;
  EmuHub(const std::byte* backing, const EmuModel& model, uint32_t queues);
  ~EmuHub();
  EmuHub(const EmuHub&) = delete;
  EmuHub& operator=(const EmuHub&) = delete;

  EmuQueueDevice& queue(uint32_t i) { return *queues_.at(i); }
  uint64_t served() const { return served_.load(std::memory_order_relaxed); }

 private:
  struct InFlight {
    uint64_t due_tsc;
    uint64_t ticket;
    uint64_t addr;
    uint32_t bytes;
    Slot slot;
    uint16_t queue;
  };
  void device_loop();
  bool accept(uint64_t now_tsc);
  bool complete(uint64_t now_tsc);

  const std::byte* backing_;
  uint64_t latency_tsc_;
  uint64_t interval_tsc_;
  uint64_t next_start_tsc_ = 0;
  std::vector<std::unique_ptr<EmuQueueDevice>> queues_;
  std::vector<InFlight> fifo_;  // ring, capacity = queues * kContextsMax (sized once)
  size_t fifo_head_ = 0;
  size_t fifo_count_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> served_{0};
  std::thread thread_;
};

}  // namespace dk::async
