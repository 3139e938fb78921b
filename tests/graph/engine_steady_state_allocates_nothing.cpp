// Description: the scheduler's steady state allocates nothing and transfers symmetrically: 1024
// contexts each yield 2000 times and issue 2000 reads (4 million switches) with a global operator new
// that counts calls; the count must not move while the contexts run, and the thread's stack must not
// grow (symmetric transfer: a deep chain of resumptions would otherwise overflow it).
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "async/dev_emu_time.hpp"
#include "async/dev_memory.hpp"
#include "async/scheduler.hpp"

static size_t g_news = 0;
void* operator new(size_t n) {
  g_news++;
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

using namespace dk::async;

static uintptr_t g_stack_low = UINTPTR_MAX, g_stack_high = 0;

static void note_stack() {
  int marker;
  const uintptr_t sp = reinterpret_cast<uintptr_t>(&marker);
  if (sp < g_stack_low) g_stack_low = sp;
  if (sp > g_stack_high) g_stack_high = sp;
}

template <Device Dev>
Fiber<Dev> worker(Scheduler<Dev>& s, Slot slot, uint32_t& rounds) {
  for (uint32_t i = 0; i < rounds; i++) {
    co_await s.yield();
    const std::byte* p = co_await s.read(slot, (uint64_t(slot) * 64 + i) % 4096, 1);
    (void)p;
    note_stack();
  }
}

template <Device Dev>
bool run(const char* name, Dev& dev) {
  constexpr uint32_t kContexts = 1024;
  uint32_t rounds = 2000;
  Scheduler<Dev> sched(dev);
  FrameArena arena(kContexts * 512);
  FrameArena::current() = &arena;
  std::vector<Fiber<Dev>> fibers;
  fibers.reserve(kContexts);
  for (uint32_t i = 0; i < kContexts; i++) {
    fibers.push_back(worker(sched, Slot(i), rounds));
    sched.add(fibers.back());
  }
  const size_t before = g_news;
  g_stack_low = UINTPTR_MAX;
  g_stack_high = 0;
  sched.run();
  const size_t allocations = g_news - before;
  const uintptr_t stack_span = g_stack_high - g_stack_low;
  std::printf("%s: switches=%llu allocations=%zu stack_span_bytes=%zu arena_bytes=%zu\n", name,
              (unsigned long long)sched.stats().switches, allocations, size_t(stack_span), arena.used_bytes());
  bool ok = true;
  if (allocations != 0) ok = false, std::fprintf(stderr, "%s: %zu heap allocations while running\n", name, allocations);
  if (stack_span > 4096) ok = false, std::fprintf(stderr, "%s: stack grew by %zu bytes\n", name, size_t(stack_span));
  if (sched.stats().requests != uint64_t(kContexts) * rounds) ok = false, std::fprintf(stderr, "%s: lost requests\n", name);
  if (sched.live() != 0) ok = false, std::fprintf(stderr, "%s: contexts still live\n", name);
  FrameArena::current() = nullptr;
  return ok;
}

int main() {
  static std::byte backing[8192];
  PrefetchDevice pf(backing);
  EmuTimeDevice emu(backing, EmuModel{200, 0, 0});
  const bool ok = run("dram-prefetch", pf) & run("emu-time", emu);
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
