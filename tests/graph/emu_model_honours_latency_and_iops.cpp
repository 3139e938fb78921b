// Description: the emulated device keeps its promises: with one context every read takes at least the
// configured latency (time model and device-thread model); with many contexts and an IOPS ceiling the
// achieved rate stays at or below the ceiling and reaches most of it; with units parallel units of
// latency L the rate is bounded by units / L.
#include <cstdio>
#include <vector>

#include "async/dev_emu_thread.hpp"
#include "async/dev_emu_time.hpp"
#include "async/scheduler.hpp"
#include "async/tsc.hpp"

using namespace dk::async;

template <Device Dev>
Fiber<Dev> reader(Scheduler<Dev>& s, Slot slot, uint32_t& reads) {
  for (uint32_t i = 0; i < reads; i++) {
    const std::byte* p = co_await s.read(slot, (uint64_t(slot) * 4096 + i * 64) % (1u << 20), 64);
    (void)p;
  }
}

// Returns achieved requests per second.
template <Device Dev>
double rate(Dev& dev, uint32_t contexts, uint32_t reads) {
  Scheduler<Dev> sched(dev);
  FrameArena arena(size_t{contexts} * 512);
  FrameArena::current() = &arena;
  std::vector<Fiber<Dev>> fibers;
  fibers.reserve(contexts);
  for (uint32_t i = 0; i < contexts; i++) {
    fibers.push_back(reader(sched, Slot(i), reads));
    sched.add(fibers.back());
  }
  const double t0 = wall_s();
  sched.run();
  const double s = wall_s() - t0;
  FrameArena::current() = nullptr;
  return double(sched.stats().requests) / s;
}

int main() {
  static std::vector<std::byte> backing(1u << 20);
  int fail = 0;
  {
    EmuTimeDevice d(backing.data(), EmuModel{20000, 0, 0});
    const double r = rate(d, 1, 200);  // 20 us each -> at most 50k/s
    std::printf("time model, 1 context, 20us: %.0f req/s (limit 50000)\n", r);
    if (r > 50000 * 1.01) fail++, std::fprintf(stderr, "FAIL: faster than the latency allows\n");
  }
  {
    EmuHub hub(backing.data(), EmuModel{20000, 0, 0}, 1);
    const double r = rate(hub.queue(0), 1, 200);
    std::printf("thread model, 1 context, 20us: %.0f req/s (limit 50000)\n", r);
    if (r > 50000 * 1.01) fail++, std::fprintf(stderr, "FAIL: faster than the latency allows\n");
    if (hub.served() != 200) fail++, std::fprintf(stderr, "FAIL: device served %llu of 200\n", (unsigned long long)hub.served());
  }
  {
    EmuTimeDevice d(backing.data(), EmuModel{1000, 1e6, 0});
    const double r = rate(d, 256, 2000);
    std::printf("time model, 256 contexts, 1us, iops_max 1M: %.0f req/s\n", r);
    if (r > 1e6 * 1.02 || r < 0.5e6) fail++, std::fprintf(stderr, "FAIL: rate not held at the IOPS ceiling\n");
  }
  {
    EmuTimeDevice d(backing.data(), EmuModel{10000, 0, 8});  // 8 units x 10 us -> 800k/s
    const double r = rate(d, 256, 1000);
    std::printf("time model, 256 contexts, 8 units of 10us: %.0f req/s (limit 800000)\n", r);
    if (r > 8e5 * 1.02 || r < 0.4e6) fail++, std::fprintf(stderr, "FAIL: units do not bound the rate\n");
  }
  {
    EmuHub hub(backing.data(), EmuModel{1000, 1e6, 0}, 1);
    const double r = rate(hub.queue(0), 256, 2000);
    std::printf("thread model, 256 contexts, 1us, iops_max 1M: %.0f req/s\n", r);
    if (r > 1e6 * 1.02) fail++, std::fprintf(stderr, "FAIL: device thread exceeds its IOPS ceiling\n");
  }
  std::printf("%s\n", fail == 0 ? "PASS" : "FAIL");
  return fail == 0 ? 0 : 1;
}
