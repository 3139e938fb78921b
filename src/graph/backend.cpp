#include "graph/backend.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dk::graph {

bool parse_backend(const std::string& s, Backend& b) {
  if (s == "dram") b = Backend::kDram;
  else if (s == "dram-prefetch") b = Backend::kDramPrefetch;
  else if (s == "emu") b = Backend::kEmu;
  else if (s == "uring") b = Backend::kUring;
  else if (s == "mmap") b = Backend::kMmap;
  else return false;
  return true;
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kDram: return "dram";
    case Backend::kDramPrefetch: return "dram-prefetch";
    case Backend::kEmu: return "emu";
    case Backend::kUring: return "uring";
    case Backend::kMmap: return "mmap";
  }
  return "?";
}

BackendRuntime::BackendRuntime(const Csr& g, const BackendConfig& cfg, int threads) : g_(g), cfg_(cfg) {
  // The time model runs one device instance per thread: split the device's IOPS ceiling and parallel
  // units among them so that the emulated device as a whole keeps the configured limits.
  if (cfg.kind == Backend::kEmu && cfg.emu_mode == EmuMode::kTime && threads > 1) {
    cfg_.emu.iops_max = cfg.emu.iops_max / threads;
    if (cfg.emu.units > 0) cfg_.emu.units = std::max<uint32_t>(1, cfg.emu.units / uint32_t(threads));
  }
  if (backend_needs_edges_in_dram(cfg.kind) && !g.has_edges()) {
    error_ = "backend needs the edges in DRAM but they were not loaded";
    return;
  }
  if (cfg.kind == Backend::kEmu && cfg.emu_mode == EmuMode::kThread) {
    if (threads > int(async::EmuHub::kQueuesMax)) {
      error_ = "emu device-thread model serves at most 64 threads; lower --threads";
      return;
    }
    hub_ = std::make_unique<async::EmuHub>(g.device_base(), cfg.emu, uint32_t(threads));
  }
  if (cfg.kind == Backend::kUring) {  // fail here, not inside a thread team that would wait for it
    async::UringDevice probe(cfg.path, 1, cfg.uring);
    if (!probe.ok()) {
      error_ = probe.error();
      return;
    }
  }
  if (cfg.kind == Backend::kMmap) {
    const int fd = open(cfg.path.c_str(), O_RDONLY);
    if (fd < 0) {
      error_ = "open " + cfg.path + ": " + std::strerror(errno);
      return;
    }
    mapping_bytes_ = g.file_bytes();
    void* p = mmap(nullptr, mapping_bytes_, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      error_ = "mmap " + cfg.path + ": " + std::strerror(errno);
      return;
    }
    // Random neighbour-list reads: readahead would only evict useful pages under a memory budget.
    madvise(p, mapping_bytes_, MADV_RANDOM);
    mapping_ = static_cast<const std::byte*>(p);
  }
}

BackendRuntime::~BackendRuntime() {
  if (mapping_ != nullptr) munmap(const_cast<std::byte*>(mapping_), mapping_bytes_);
}

void BackendRuntime::add_stats(const async::EngineStats& s) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ += s;
}

async::EngineStats BackendRuntime::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void BackendRuntime::reset_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = {};
}

}  // namespace dk::graph
