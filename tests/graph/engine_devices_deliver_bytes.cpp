// Description: every asynchronous device (dram-prefetch, emu time model, emu device-thread model and
// io_uring on a file) delivers exactly the requested bytes to the requesting context, for many contexts
// with random in-page reads; each context checks its bytes against the backing pattern.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "async/dev_emu_thread.hpp"
#include "async/dev_emu_time.hpp"
#include "async/dev_memory.hpp"
#include "async/dev_uring.hpp"
#include "async/scheduler.hpp"
#include "graph/generate.hpp"

using namespace dk::async;

static constexpr uint64_t kSpaceBytes = 1u << 22;
static int g_failures = 0;

static std::byte pattern(uint64_t addr) { return std::byte(dk::graph::mix64(addr) & 0xff); }

template <Device Dev>
Fiber<Dev> checker(Scheduler<Dev>& s, Slot slot, uint32_t& reads) {
  uint64_t x = slot + 1;
  for (uint32_t i = 0; i < reads; i++) {
    x = dk::graph::mix64(x);
    const uint64_t addr = x % (kSpaceBytes - kPageBytes);
    const uint32_t bytes = uint32_t(1 + (x >> 40) % (kPageBytes - (addr & (kPageBytes - 1))));
    const std::byte* p = co_await s.read(slot, addr, bytes);
    for (uint32_t k = 0; k < bytes; k++) {
      if (p[k] != pattern(addr + k)) {
        std::fprintf(stderr, "slot %u read %u: byte %u of [%llu,+%u) wrong\n", slot, i, k, (unsigned long long)addr,
                     bytes);
        g_failures++;
        break;
      }
    }
  }
}

template <Device Dev>
void run(const char* name, Dev& dev, uint32_t contexts, uint32_t reads) {
  Scheduler<Dev> sched(dev);
  FrameArena arena(size_t{contexts} * 512);
  FrameArena::current() = &arena;
  std::vector<Fiber<Dev>> fibers;
  fibers.reserve(contexts);
  for (uint32_t i = 0; i < contexts; i++) {
    fibers.push_back(checker(sched, Slot(i), reads));
    sched.add(fibers.back());
  }
  sched.run();
  const EngineStats& st = sched.stats();
  std::printf("%-14s contexts=%u requests=%llu switches=%llu failures=%d\n", name, contexts,
              (unsigned long long)st.requests, (unsigned long long)st.switches, g_failures);
  if (st.requests != uint64_t(contexts) * reads) {
    std::fprintf(stderr, "%s: %llu requests, expected %llu\n", name, (unsigned long long)st.requests,
                 (unsigned long long)contexts * reads);
    g_failures++;
  }
  FrameArena::current() = nullptr;
}

int main() {
  std::vector<std::byte> backing(kSpaceBytes);
  for (uint64_t a = 0; a < kSpaceBytes; a++) backing[a] = pattern(a);
  for (uint32_t contexts : {1u, 7u, 64u, 512u}) {
    PrefetchDevice pf(backing.data());
    run("dram-prefetch", pf, contexts, 200);
    EmuTimeDevice emu(backing.data(), EmuModel{1000, 2e6, 64});
    run("emu-time", emu, contexts, 200);
    EmuHub hub(backing.data(), EmuModel{1000, 0, 0}, 1);
    run("emu-thread", hub.queue(0), contexts, 200);
  }
  const char* dir = getenv("DAXKIT_BUILD");
  const std::string path = std::string(dir ? dir : "/tmp") + "/engine_devices_deliver_bytes.img";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const bool wrote = fd >= 0 && write(fd, backing.data(), kSpaceBytes) == ssize_t(kSpaceBytes);
  if (fd >= 0) close(fd);
  if (!wrote) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  UringDevice probe(path, 1, UringOptions{});
  if (!probe.ok()) {
    std::printf("SKIP uring part: %s\n", probe.error().c_str());
  } else {
    for (uint32_t contexts : {1u, 64u}) {
      UringDevice ur(path, contexts, UringOptions{});
      run("uring", ur, contexts, 100);
    }
  }
  unlink(path.c_str());
  std::printf("%s\n", g_failures == 0 ? "PASS" : "FAIL");
  return g_failures == 0 ? 0 : 1;
}
