// Engine microbenchmarks (no graph): the cost the scheduler adds per request.
//   overhead: N contexts on the time-based emu device with zero latency, each issuing reads of 64 B
//             back to back; ns per request = issue + switch + completion check (the paper's Table 2e).
//   emu:      N contexts on the emulated device (time or device-thread model) at a given latency and
//             IOPS ceiling: achieved rate next to the rate the model allows, in real time (the unit
//             test checks the model's arithmetic on a simulated clock; this is how close it gets here).
//   uring:    N contexts issuing random 4 KiB O_DIRECT page reads through the uring device: achieved
//             IOPS at queue depth N per thread (compare with fio at the same iodepth).
// usage: daxkit-graph-bench overhead [contexts] [requests_per_context]
//        daxkit-graph-bench emu time|thread latency_us iops_max contexts reads_per_context
//        daxkit-graph-bench uring FILE contexts seconds [sqpoll]
#include <sys/stat.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "async/dev_emu_thread.hpp"
#include "async/dev_emu_time.hpp"
#include "async/dev_memory.hpp"
#include "async/dev_uring.hpp"
#include "async/scheduler.hpp"
#include "async/tsc.hpp"
#include "graph/generate.hpp"

using namespace dk::async;

namespace {

template <Device Dev>
Fiber<Dev> reader(Scheduler<Dev>& s, Slot slot, uint64_t& requests, uint64_t space_bytes, uint64_t& sink) {
  uint64_t x = slot * 0x9e3779b97f4a7c15ULL;
  for (uint64_t i = 0; i < requests; i++) {
    x = dk::graph::mix64(x);
    const uint64_t addr = (x % (space_bytes / kPageBytes)) * kPageBytes;
    const std::byte* p = co_await s.read(slot, addr, 64);
    sink += uint64_t(p[0]);
  }
}

// CPU time of the calling thread: the engine's cost, unaffected by other processes taking the CPU away
// (wall time on this shared 2-core machine counts their time slices too).
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Runs the readers; returns wall seconds, and CPU seconds in *cpu_s when given.
template <Device Dev>
double run_readers(Dev& dev, uint32_t contexts, uint64_t per_context, uint64_t space_bytes, EngineStats& st,
                   double* cpu_s = nullptr) {
  Scheduler<Dev> sched(dev);
  FrameArena arena(size_t{contexts} * 512);
  FrameArena::current() = &arena;
  std::vector<Fiber<Dev>> fibers;
  fibers.reserve(contexts);
  uint64_t sink = 0;
  for (uint32_t i = 0; i < contexts; i++) {
    fibers.push_back(reader(sched, Slot(i), per_context, space_bytes, sink));
    sched.add(fibers.back());
  }
  const double t0 = wall_s();
  const double c0 = thread_cpu_s();
  sched.run();
  if (cpu_s != nullptr) *cpu_s = thread_cpu_s() - c0;
  const double s = wall_s() - t0;
  st = sched.stats();
  if (sink == 42) std::printf(" ");
  return s;
}

int overhead(uint32_t contexts, uint64_t per_context) {
  const uint64_t space = 64u << 20;
  std::vector<std::byte> backing(space);
  EmuTimeDevice dev(backing.data(), EmuModel{0, 0, 0});
  EngineStats st;
  double cpu = 0, cpu_pf = 0;
  const double s = run_readers(dev, contexts, per_context, kPageBytes * 64 /* cache-resident */, st, &cpu);
  // The same loop on a device that is always complete and does nothing but prefetch: the engine alone.
  PrefetchDevice pf(backing.data());
  EngineStats st_pf;
  (void)run_readers(pf, contexts, per_context, kPageBytes * 64, st_pf, &cpu_pf);
  // ns_per_request / engine_only_ns: CPU time per request; wall_ns_per_request includes other processes.
  std::printf("overhead: contexts=%u requests=%llu switches=%llu ns_per_request=%.2f engine_only_ns=%.2f "
              "wall_ns_per_request=%.2f\n",
              contexts, (unsigned long long)st.requests, (unsigned long long)st.switches,
              cpu * 1e9 / double(st.requests), cpu_pf * 1e9 / double(st_pf.requests), s * 1e9 / double(st.requests));
  return 0;
}

int emu(const std::string& model, double latency_us, double iops_max, uint32_t contexts, uint64_t per_context) {
  const uint64_t space = 64u << 20;
  std::vector<std::byte> backing(space);
  const EmuModel m{latency_us * 1000, iops_max, 0};
  EngineStats st;
  double s = 0;
  if (model == "thread") {
    EmuHub hub(backing.data(), m, 1);
    s = run_readers(hub.queue(0), contexts, per_context, space, st);
  } else {
    EmuTimeDevice dev(backing.data(), m);
    s = run_readers(dev, contexts, per_context, space, st);
  }
  // The model allows min(contexts / latency, iops_max) requests per second.
  double allowed = latency_us > 0 ? contexts / (latency_us * 1e-6) : 1e300;
  if (iops_max > 0 && iops_max < allowed) allowed = iops_max;
  const double achieved = double(st.requests) / s;
  std::printf("emu: model=%s latency_us=%g iops_max=%.0f contexts=%u requests=%llu seconds=%.4f achieved=%.0f "
              "allowed=%.0f fraction=%.3f\n",
              model.c_str(), latency_us, iops_max, contexts, (unsigned long long)st.requests, s, achieved, allowed,
              achieved / allowed);
  return 0;
}

int uring(const char* path, uint32_t contexts, double seconds, bool sqpoll) {
  struct stat sb {};
  if (stat(path, &sb) != 0) {
    std::perror(path);
    return 1;
  }
  UringOptions opt;
  opt.sqpoll = sqpoll;
  UringDevice dev(path, contexts, opt);
  if (!dev.ok()) {
    std::fprintf(stderr, "daxkit-graph-bench: %s\n", dev.error().c_str());
    return 77;
  }
  // Calibrate the request count to run about `seconds`.
  EngineStats st;
  uint64_t per = 256;
  double s = run_readers(dev, contexts, per, uint64_t(sb.st_size), st);
  per = uint64_t(double(per) * seconds / s) + 1;
  s = run_readers(dev, contexts, per, uint64_t(sb.st_size), st);
  std::printf("uring: contexts=%u sqpoll=%d requests=%llu seconds=%.3f iops=%.0f\n", contexts, sqpoll ? 1 : 0,
              (unsigned long long)st.requests, s, double(st.requests) / s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "overhead") {
    return overhead(argc > 2 ? uint32_t(std::atoi(argv[2])) : 64, argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 200000);
  }
  if (cmd == "emu" && argc >= 7) {
    return emu(argv[2], std::atof(argv[3]), std::atof(argv[4]), uint32_t(std::atoi(argv[5])),
               std::strtoull(argv[6], nullptr, 10));
  }
  if (cmd == "uring" && argc >= 5) {
    return uring(argv[2], uint32_t(std::atoi(argv[3])), std::atof(argv[4]), argc > 5 && std::string(argv[5]) == "sqpoll");
  }
  std::fprintf(stderr, "usage: daxkit-graph-bench overhead [contexts] [requests_per_context]\n"
                       "       daxkit-graph-bench emu time|thread latency_us iops_max contexts reads_per_context\n"
                       "       daxkit-graph-bench uring FILE contexts seconds [sqpoll]\n");
  return 2;
}
