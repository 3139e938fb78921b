#include "async/dev_emu_thread.hpp"

#include <algorithm>
#include <cstring>
#include <sched.h>

namespace dk::async {

EmuQueueDevice::EmuQueueDevice()
    : sq_(new SqEntry[kSqEntries]),
      done_(new std::atomic<uint64_t>[kContextsMax]),
      buffers_(new (std::align_val_t{kPageBytes}) std::byte[size_t{kContextsMax} * kPageBytes]) {
  for (uint32_t i = 0; i < kContextsMax; i++) done_[i].store(0, std::memory_order_relaxed);
}

EmuHub::EmuHub(const std::byte* backing, const EmuModel& model, uint32_t queues)
    : backing_(backing),
      latency_tsc_(ns_to_tsc(model.latency_ns)),
      interval_tsc_(model.iops_max > 0 ? ns_to_tsc(1e9 / model.iops_max) : 0),
      fifo_(size_t{queues} * kContextsMax) {
  assert(queues >= 1);
  assert(queues <= kQueuesMax);
  for (uint32_t i = 0; i < queues; i++) queues_.push_back(std::make_unique<EmuQueueDevice>());
  thread_ = std::thread([this] { device_loop(); });
}

EmuHub::~EmuHub() {
  stop_.store(true, std::memory_order_relaxed);
  thread_.join();
}

// SQ polling: take every published entry from every queue; stamp its completion time.
bool EmuHub::accept(uint64_t now_tsc) {
  bool any = false;
  for (size_t q = 0; q < queues_.size(); q++) {
    EmuQueueDevice& d = *queues_[q];
    for (;;) {
      SqEntry& e = d.sq_[d.sq_head_ & (kSqEntries - 1)];
      if (e.ticket.load(std::memory_order_acquire) != d.sq_head_ + 1) break;
      assert(fifo_count_ < fifo_.size());
      // Starts are spaced by the IOPS ceiling; with one latency for all, completions stay in order.
      const uint64_t start = std::max(now_tsc, next_start_tsc_);
      next_start_tsc_ = start + interval_tsc_;
      const uint64_t due = start + latency_tsc_;
      InFlight& f = fifo_[(fifo_head_ + fifo_count_) % fifo_.size()];
      f = InFlight{due, d.sq_head_ + 1, e.addr, e.bytes, e.slot, static_cast<uint16_t>(q)};
      fifo_count_++;
      d.sq_head_++;
      any = true;
    }
  }
  return any;
}

// Deliver every request whose time has come: data first, then the completion word (release).
bool EmuHub::complete(uint64_t now_tsc) {
  bool any = false;
  while (fifo_count_ > 0 && fifo_[fifo_head_].due_tsc <= now_tsc) {
    const InFlight& f = fifo_[fifo_head_];
    EmuQueueDevice& d = *queues_[f.queue];
    std::byte* dst = d.buffers_.get() + size_t{f.slot} * kPageBytes + (f.addr & (kPageBytes - 1));
    std::memcpy(dst, backing_ + f.addr, f.bytes);
    d.done_[f.slot].store(f.ticket, std::memory_order_release);
    fifo_head_ = (fifo_head_ + 1) % fifo_.size();
    fifo_count_--;
    served_.fetch_add(1, std::memory_order_relaxed);
    any = true;
  }
  return any;
}

// Polls forever (the device has no doorbell); when idle for a while it yields the CPU so that on a
// small machine it does not starve the host thread that would give it work.
void EmuHub::device_loop() {
  uint64_t idle = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    const uint64_t now = tsc_now();
    const bool accepted = accept(now);
    const bool completed = complete(now);
    if (accepted || completed) {
      idle = 0;
    } else if ((++idle & 1023) == 0 && fifo_count_ == 0) {
      sched_yield();
    } else {
      _mm_pause();
    }
  }
}

}  // namespace dk::async
