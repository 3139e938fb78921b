// Description: the emulated device keeps its promises, checked without trusting the wall clock.
//
// Time model: driven by a simulated clock that advances only while the host idles (host work takes
// zero simulated time), so the model's arithmetic is checked exactly, on any machine under any load:
//   - one context: every read takes exactly the latency (T = reads x L);
//   - C contexts, no limits: latency fully overlapped (T = reads_per_context x L);
//   - IOPS ceiling R with a backlog: starts exactly 1/R apart (T = (N-1)/R + L);
//   - U parallel units of latency L: each unit serialises its reads (T = reads_per_unit x L);
//   - the transition: the same load is latency-bound under a high ceiling and IOPS-bound under a low one.
// Device-thread model (a real thread, real time): only bounds that extra load cannot break — no read
// completes before its latency, the IOPS ceiling is never exceeded, every request is served once.
// How close the real models come to their ceilings is a benchmark figure (bench/graph: `emu` part).
#include <cstdio>
#include <vector>

#include "async/dev_emu_thread.hpp"
#include "async/dev_emu_time.hpp"
#include "async/scheduler.hpp"
#include "async/tsc.hpp"

using namespace dk::async;

namespace {

// Simulated clock: one tick = 1 ns; idle() is the only thing that moves time.
struct SimClock {
  static inline uint64_t now_ns = 0;
  static inline uint64_t step_ns = 10;
  static uint64_t now() { return now_ns; }
  static uint64_t from_ns(double ns) { return uint64_t(ns + 0.5); }
  static void idle() { now_ns += step_ns; }
};
using SimDevice = EmuTimeDeviceT<SimClock>;

constexpr uint64_t kSpaceBytes = 1u << 20;

// Context `slot` reads 64 B from page (slot % 256) of the space, `reads` times.
template <Device Dev>
Fiber<Dev> reader(Scheduler<Dev>& s, Slot slot, uint32_t& reads) {
  for (uint32_t i = 0; i < reads; i++) {
    const std::byte* p = co_await s.read(slot, (uint64_t(slot) * kPageBytes + i * 64) % kSpaceBytes, 64);
    (void)p;
  }
}

// Runs `contexts` readers of `reads` each to completion; returns the requests the scheduler issued.
template <Device Dev>
uint64_t run_readers(Dev& dev, uint32_t contexts, uint32_t reads) {
  Scheduler<Dev> sched(dev);
  FrameArena arena(size_t{contexts} * 512);
  FrameArena::current() = &arena;
  std::vector<Fiber<Dev>> fibers;
  fibers.reserve(contexts);
  for (uint32_t i = 0; i < contexts; i++) {
    fibers.push_back(reader(sched, Slot(i), reads));
    sched.add(fibers.back());
  }
  sched.run();
  FrameArena::current() = nullptr;
  return sched.stats().requests;
}

std::vector<std::byte> g_backing(kSpaceBytes);
int g_fail = 0;

// Simulated duration of one run on the time model, in ns.
uint64_t sim_run_ns(const EmuModel& m, uint32_t contexts, uint32_t reads, uint64_t step_ns) {
  SimClock::now_ns = 0;
  SimClock::step_ns = step_ns;
  SimDevice dev(g_backing.data(), m);
  const uint64_t requests = run_readers(dev, contexts, reads);
  if (requests != uint64_t(contexts) * reads) {
    std::fprintf(stderr, "FAIL: %llu requests issued, want %llu\n", (unsigned long long)requests,
                 (unsigned long long)contexts * reads);
    g_fail++;
  }
  return SimClock::now_ns;
}

void expect_ns(const char* what, uint64_t got_ns, uint64_t want_ns) {
  const bool ok = got_ns == want_ns;
  std::printf("%-62s %11llu ns (want %llu) %s\n", what, (unsigned long long)got_ns, (unsigned long long)want_ns,
              ok ? "ok" : "FAIL");
  if (!ok) g_fail++;
}

void time_model_is_exact() {
  expect_ns("time model, 1 context, 20 us, 200 reads", sim_run_ns({20000, 0, 0}, 1, 200, 10), 200 * 20000);
  expect_ns("time model, 64 contexts, 5 us, 500 reads each (overlapped)", sim_run_ns({5000, 0, 0}, 64, 500, 10),
            500 * 5000);
  const uint64_t n_iops = 256 * 2000;
  expect_ns("time model, 256 contexts, 1 us, ceiling 1 M/s (IOPS-bound)", sim_run_ns({1000, 1e6, 0}, 256, 2000, 1000),
            (n_iops - 1) * 1000 + 1000);
  // 256 contexts read pages slot % 256, so unit = slot % 8: 32 contexts x 1000 reads per unit.
  expect_ns("time model, 256 contexts, 8 units of 10 us (unit-bound)", sim_run_ns({10000, 0, 8}, 256, 1000, 1000),
            32 * 1000 * 10000);
  // 64 contexts x 5 us can sustain 12.8 M/s: a 5 M/s ceiling binds, a 20 M/s ceiling does not.
  const uint64_t n = 64 * 500;
  expect_ns("time model, 64 contexts, 5 us, ceiling 5 M/s (IOPS-bound)", sim_run_ns({5000, 5e6, 0}, 64, 500, 10),
            (n - 1) * 200 + 5000);
  const uint64_t t_high = sim_run_ns({5000, 20e6, 0}, 64, 500, 10);
  const bool latency_bound = t_high >= 500 * 5000 && t_high <= 500 * 5000 + 64 * 50;
  std::printf("%-62s %11llu ns (want %d..%d) %s\n", "time model, 64 contexts, 5 us, ceiling 20 M/s (latency-bound)",
              (unsigned long long)t_high, 500 * 5000, 500 * 5000 + 64 * 50, latency_bound ? "ok" : "FAIL");
  if (!latency_bound) g_fail++;
}

// Real time, real device thread: lower bounds on elapsed time only (load can only add to them).
void thread_model_bounds() {
  {
    EmuHub hub(g_backing.data(), EmuModel{20000, 0, 0}, 1);
    const double t0 = wall_s();
    run_readers(hub.queue(0), 1, 200);
    const double s = wall_s() - t0;
    const bool ok = s >= 200 * 20e-6 * 0.99 && hub.served() == 200;
    std::printf("thread model, 1 context, 20 us, 200 reads: %.6f s (>= 0.004), served %llu (200) %s\n", s,
                (unsigned long long)hub.served(), ok ? "ok" : "FAIL");
    if (!ok) g_fail++;
  }
  {
    EmuHub hub(g_backing.data(), EmuModel{1000, 1e6, 0}, 1);
    const uint32_t contexts = 256, reads = 200;
    const double t0 = wall_s();
    run_readers(hub.queue(0), contexts, reads);
    const double s = wall_s() - t0;
    const double floor_s = (contexts * reads - 1) * 1e-6 * 0.99;
    const bool ok = s >= floor_s && hub.served() == contexts * reads;
    std::printf("thread model, 256 contexts, 1 us, ceiling 1 M/s: %.6f s (>= %.6f), %.0f req/s, served %llu %s\n", s,
                floor_s, contexts * reads / s, (unsigned long long)hub.served(), ok ? "ok" : "FAIL");
    if (!ok) g_fail++;
  }
}

}  // namespace

int main() {
  time_model_is_exact();
  thread_model_bounds();
  std::printf("%s\n", g_fail == 0 ? "PASS" : "FAIL");
  return g_fail == 0 ? 0 : 1;
}
