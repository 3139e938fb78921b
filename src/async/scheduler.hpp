// Per-thread scheduler of N stackless coroutine contexts (the paper's sched_coro).
//
// Every suspension transfers control symmetrically to the next context whose request has completed;
// the scheduler polls completion (the context's completion word or the device's clock) *before*
// resuming, so a context is resumed exactly once per request. Nothing here allocates: slots, the
// ring of live contexts and the pending flags are fixed arrays sized by kContextsMax.
#pragma once
#include <cassert>
#include <coroutine>
#include <cstdint>
#include <exception>

#include "async/device.hpp"
#include "async/frame_arena.hpp"

namespace dk::async {

template <Device Dev>
class Scheduler;

// A context: a lazy, move-only coroutine whose frame lives in the thread's FrameArena.
template <Device Dev>
class [[nodiscard]] Fiber {
 public:
  struct promise_type {
    Scheduler<Dev>* sched;
    Slot slot;
    template <class... Rest>
    promise_type(Scheduler<Dev>& s, Slot sl, Rest&...) : sched(&s), slot(sl) {}

    static void* operator new(size_t bytes) {
      FrameArena* arena = FrameArena::current();
      assert(arena != nullptr && "spawn contexts inside a driver that set FrameArena::current()");
      return arena->alloc(bytes);
    }
    static void operator delete(void*, size_t) noexcept {}  // the arena is reset as a whole

    Fiber get_return_object() { return Fiber(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct FinalAwaiter {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        return h.promise().sched->finish(h.promise().slot);
      }
      void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };

  explicit Fiber(std::coroutine_handle<promise_type> h) : handle_(h) {}
  Fiber(Fiber&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;
  ~Fiber() {
    if (handle_) handle_.destroy();
  }
  std::coroutine_handle<promise_type> handle() const { return handle_; }

 private:
  std::coroutine_handle<promise_type> handle_;
};

template <Device Dev>
class Scheduler {
 public:
  explicit Scheduler(Dev& dev) : dev_(dev) {}
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  Dev& dev() { return dev_; }
  const EngineStats& stats() const { return stats_; }
  uint32_t live() const { return live_count_; }

  // Registers a spawned context; it first runs when run() is called.
  void add(const Fiber<Dev>& f) {
    const Slot slot = f.handle().promise().slot;
    assert(live_count_ < kContextsMax);
    assert(slot < kContextsMax);
    handles_[slot] = f.handle();
    pending_[slot] = 0;
    ring_[live_count_++] = slot;
  }

  // Runs every registered context to completion; returns when the last one finishes.
  void run() {
    if (live_count_ == 0) return;
    cursor_ = 0;
    handles_[ring_[0]].resume();
    assert(live_count_ == 0);
  }

  // co_await sched.read(slot, addr, bytes) -> const std::byte* to the bytes.
  struct ReadAwaiter {
    Scheduler* s;
    Slot slot;
    uint64_t addr;
    uint32_t bytes;
    bool await_ready() const noexcept { return Dev::kSynchronous; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<>) noexcept {
      s->issue(slot, addr, bytes);
      return s->next();
    }
    const std::byte* await_resume() const noexcept { return s->dev_.data(slot, addr); }
  };
  ReadAwaiter read(Slot slot, uint64_t addr, uint32_t bytes) {
    assert(bytes > 0);
    assert((addr & (kPageBytes - 1)) + bytes <= kPageBytes);  // one request, one page
    return ReadAwaiter{this, slot, addr, bytes};
  }

  // co_await sched.yield(): let the other contexts run (after a software prefetch, say).
  struct YieldAwaiter {
    Scheduler* s;
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<>) noexcept { return s->next(); }
    void await_resume() const noexcept {}
  };
  YieldAwaiter yield() { return YieldAwaiter{this}; }

  // The context in `slot` returned: drop it from the ring and run the next ready one.
  std::coroutine_handle<> finish(Slot slot) {
    assert(live_count_ > 0);
    assert(ring_[cursor_] == slot);
    ring_[cursor_] = ring_[--live_count_];
    if (live_count_ == 0) return std::noop_coroutine();
    cursor_ = (cursor_ == 0 ? live_count_ : cursor_) - 1;  // the moved-in slot is scanned next
    if (cursor_ >= live_count_) cursor_ = live_count_ - 1;
    return next();
  }

 private:
  void issue(Slot slot, uint64_t addr, uint32_t bytes) {
    assert(pending_[slot] == 0);
    pending_[slot] = 1;
    stats_.requests++;
    dev_.issue(slot, addr, bytes);
  }

  // Round-robin scan from the context after the current one; a context is runnable when it has no
  // request outstanding or its request has completed.
  std::coroutine_handle<> next() {
    uint32_t i = cursor_;
    uint32_t scanned = 0;
    for (;;) {
      if (++i >= live_count_) i = 0;
      const Slot slot = ring_[i];
      if (pending_[slot] == 0 || dev_.poll(slot)) {
        pending_[slot] = 0;
        cursor_ = i;
        stats_.switches++;
        return handles_[slot];
      }
      if (++scanned == live_count_) {
        scanned = 0;
        stats_.empty_passes++;
        dev_.progress();
      }
    }
  }

  Dev& dev_;
  EngineStats stats_;
  uint32_t live_count_ = 0;
  uint32_t cursor_ = 0;
  Slot ring_[kContextsMax];
  uint8_t pending_[kContextsMax];
  std::coroutine_handle<> handles_[kContextsMax];
};

}  // namespace dk::async
