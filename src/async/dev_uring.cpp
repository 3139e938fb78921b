#include "async/dev_uring.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dk::async {

static uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

void UringDevice::fail(const std::string& what, int err) {
  if (!error_.empty()) return;  // keep the first cause
  error_ = what + ": " + std::strerror(err);
}

UringDevice::UringDevice(const std::string& path, uint32_t contexts, const UringOptions& opt)
    : opt_(opt), contexts_(contexts) {
  assert(contexts >= 1 && contexts <= kContextsMax);
  fd_ = ::open(path.c_str(), O_RDONLY | (opt.direct ? O_DIRECT : 0));
  if (fd_ < 0) {
    fail("open(" + path + (opt.direct ? ", O_DIRECT)" : ")") +
             (opt.direct && errno == EINVAL ? " (the file system refuses O_DIRECT, e.g. tmpfs: put the "
                                              "file on ext4/xfs or a block device, or use --backend mmap)"
                                            : ""),
         errno);
    return;
  }
  buffers_bytes_ = size_t{contexts} * kPageBytes;
  void* mem = mmap(nullptr, buffers_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    fail("mmap of " + std::to_string(buffers_bytes_) + " bytes of data buffers", errno);
    return;
  }
  buffers_ = static_cast<std::byte*>(mem);
  std::memset(buffers_, 0, buffers_bytes_);

  io_uring_params p{};
  if (opt.sqpoll) {
    p.flags |= IORING_SETUP_SQPOLL;
    p.sq_thread_idle = 2000;  // ms before the kernel poller sleeps and needs a wakeup
  }
  // Every context has at most one request in flight, so a ring of >= contexts never fills.
  const int rc = io_uring_queue_init_params(pow2_at_least(contexts), &ring_, &p);
  if (rc < 0) {
    fail(std::string("io_uring_queue_init") + (opt.sqpoll ? " with SQPOLL" : "") +
             " (io_uring disabled? check /proc/sys/kernel/io_uring_disabled, or use --backend mmap)",
         -rc);
    return;
  }
  ring_ready_ = true;
  iovec iov{buffers_, buffers_bytes_};
  int r = io_uring_register_buffers(&ring_, &iov, 1);
  if (r < 0) {
    fail("io_uring_register_buffers (raise RLIMIT_MEMLOCK: ulimit -l)", -r);
    return;
  }
  r = io_uring_register_files(&ring_, &fd_, 1);
  if (r < 0) fail("io_uring_register_files", -r);
}

UringDevice::~UringDevice() {
  if (ring_ready_) io_uring_queue_exit(&ring_);
  if (buffers_) munmap(buffers_, buffers_bytes_);
  if (fd_ >= 0) ::close(fd_);
}

void UringDevice::issue(Slot slot, uint64_t addr, uint32_t bytes) {
  assert(slot < contexts_);
  done_[slot] = 0;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  // With at most one request per context the ring (>= contexts) should never be full, but with SQPOLL
  // the kernel thread frees SQ entries when it gets a CPU: push, wait for it, and never write through null.
  for (int tries = 0; sqe == nullptr; tries++) {
    submit();
    if (opt_.sqpoll) io_uring_sqring_wait(&ring_);
    else reap();
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr && tries == 1000000) {
      std::fprintf(stderr, "daxkit async: io_uring submission queue stays full (%u contexts)\n", contexts_);
      std::abort();
    }
  }
  const uint64_t page = addr & ~uint64_t{kPageBytes - 1};
  need_bytes_[slot] = static_cast<uint32_t>(addr - page) + bytes;
  io_uring_prep_read_fixed(sqe, 0, buffers_ + size_t{slot} * kPageBytes, kPageBytes, page, 0);
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, slot);
  if (++queued_ >= opt_.submit_batch || opt_.sqpoll) submit();
}

// Pushes the prepared SQEs. The kernel may take only some of them (or none: -EAGAIN, -EBUSY while the
// completion queue is full); what it left stays in the ring and is counted again from the ring itself,
// so the next progress() pushes it -- a count of our own reset to 0 here forgot it, and contexts
// waiting on those reads then waited for good (review 10, finding 10).
void UringDevice::submit() {
  if (io_uring_sq_ready(&ring_) == 0) return;
  const int r = io_uring_submit(&ring_);
  if (r < 0 && r != -EAGAIN && r != -EBUSY) {
    std::fprintf(stderr, "daxkit async: io_uring_submit: %s\n", std::strerror(-r));
    std::abort();
  }
  queued_ = io_uring_sq_ready(&ring_);
}

void UringDevice::reap() {
  io_uring_cqe* cqes[64];
  const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, 64);
  for (unsigned i = 0; i < n; i++) {
    const Slot slot = static_cast<Slot>(io_uring_cqe_get_data64(cqes[i]));
    const int res = cqes[i]->res;
    assert(slot < contexts_);
    if (res < 0 || static_cast<uint32_t>(res) < need_bytes_[slot]) {
      std::fprintf(stderr, "daxkit async: io_uring read for slot %u failed: %s (res=%d, need %u bytes)\n",
                   slot, res < 0 ? std::strerror(-res) : "short read", res, need_bytes_[slot]);
      std::abort();
    }
    done_[slot] = 1;
  }
  io_uring_cq_advance(&ring_, n);
  reaped_ += n;
}

// Called when a full scan found nothing ready: push queued requests, then collect completions.
void UringDevice::progress() {
  submit();
  reap();
}

}  // namespace dk::async
