// Coroutine frames come from a per-thread bump arena, reset between phases: spawning and destroying
// contexts never touches the heap (the scheduler's steady state allocates nothing).
#pragma once
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace dk::async {

class FrameArena {
 public:
  explicit FrameArena(size_t capacity_bytes)
      : base_(static_cast<std::byte*>(std::aligned_alloc(64, round_up(capacity_bytes)))),
        capacity_bytes_(round_up(capacity_bytes)) {
    assert(base_ != nullptr);
  }
  ~FrameArena() { std::free(base_); }
  FrameArena(const FrameArena&) = delete;
  FrameArena& operator=(const FrameArena&) = delete;

  void* alloc(size_t bytes) {
    const size_t need = round_up(bytes);
    if (used_bytes_ + need > capacity_bytes_) {
      std::fprintf(stderr,
                   "daxkit async: coroutine frame arena full (%zu of %zu bytes used, frame %zu); "
                   "lower --contexts or raise the arena size in the driver\n",
                   used_bytes_, capacity_bytes_, bytes);
      std::abort();
    }
    void* p = base_ + used_bytes_;
    used_bytes_ += need;
    return p;
  }
  void reset() { used_bytes_ = 0; }
  size_t used_bytes() const { return used_bytes_; }

  // The arena the current thread's coroutines allocate from (set by the driver around spawning).
  static FrameArena*& current() {
    static thread_local FrameArena* arena = nullptr;
    return arena;
  }

 private:
  static size_t round_up(size_t n) { return (n + 63) & ~size_t{63}; }
  std::byte* base_;
  size_t capacity_bytes_;
  size_t used_bytes_ = 0;
};

}  // namespace dk::async
