// `uring`: io_uring on a file or block device, one ring per host thread.
//
// O_DIRECT page reads (one aligned kPageBytes page per request) into registered buffers (one page per
// context slot, IORING_OP_READ_FIXED) on a registered file. Optional SQPOLL: a kernel thread polls the
// submission ring, the software analogue of the paper's doorbell-free submission. Completion queue
// entries are reaped in batches and turned into per-slot completion words that the scheduler polls.
#pragma once
#include <liburing.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>

#include "async/device.hpp"

namespace dk::async {

struct UringOptions {
  bool sqpoll = false;          // kernel thread polls the SQ (IORING_SETUP_SQPOLL)
  bool direct = true;           // O_DIRECT: bypass the page cache
  uint32_t submit_batch = 16;   // submit once this many SQEs are queued (or when nothing is ready)
};

class UringDevice {
 public:
  static constexpr bool kSynchronous = false;

  // Opens `path` and sets up a ring for `contexts` slots; on failure error() names the cause and fix.
  UringDevice(const std::string& path, uint32_t contexts, const UringOptions& opt);
  ~UringDevice();
  UringDevice(const UringDevice&) = delete;
  UringDevice& operator=(const UringDevice&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t reaped() const { return reaped_; }

  void issue(Slot slot, uint64_t addr, uint32_t bytes);
  bool poll(Slot slot) const { return done_[slot] != 0; }
  void progress();
  const std::byte* data(Slot slot, uint64_t addr) const {
    return buffers_ + size_t{slot} * kPageBytes + (addr & (kPageBytes - 1));
  }

 private:
  void fail(const std::string& what, int err);
  void submit();
  void reap();

  std::string error_;
  int fd_ = -1;
  bool ring_ready_ = false;
  io_uring ring_{};
  UringOptions opt_;
  uint32_t contexts_ = 0;
  uint32_t queued_ = 0;  // SQEs in the ring the kernel has not taken yet (io_uring_sq_ready after a submit)
  uint64_t reaped_ = 0;
  std::byte* buffers_ = nullptr;
  size_t buffers_bytes_ = 0;
  uint8_t done_[kContextsMax] = {};
  uint32_t need_bytes_[kContextsMax] = {};  // a short read must still cover the requested bytes
};

}  // namespace dk::async
