// Backend selection: where the edge data lives and how it is read.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "async/dev_emu_thread.hpp"
#include "async/dev_emu_time.hpp"
#include "async/dev_memory.hpp"
#include "async/dev_uring.hpp"
#include "graph/csr.hpp"
#include "graph/driver.hpp"

namespace dk::graph {

enum class Backend { kDram, kDramPrefetch, kEmu, kUring, kMmap };
enum class EmuMode { kTime, kThread };

bool parse_backend(const std::string& s, Backend& b);
const char* backend_name(Backend b);
inline bool backend_needs_edges_in_dram(Backend b) {
  return b == Backend::kDram || b == Backend::kDramPrefetch || b == Backend::kEmu;
}

struct BackendConfig {
  Backend kind = Backend::kDram;
  uint32_t contexts = 64;          // per thread
  bool prefetch_targets = true;    // prefetch + yield before touching the vertices a piece names
  EmuMode emu_mode = EmuMode::kTime;
  async::EmuModel emu;
  async::UringOptions uring;
  std::string path;                // the .sg/.wsg file (uring, mmap)
};

// Shared per-run state (mapping, device thread) plus a per-thread driver factory.
class BackendRuntime {
 public:
  BackendRuntime(const Csr& g, const BackendConfig& cfg, int threads);
  ~BackendRuntime();
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const BackendConfig& config() const { return cfg_; }

  // Calls f(driver) on the calling thread with the driver for thread `tid`.
  template <class F>
  bool with_driver(int tid, F&& f);

  async::EngineStats stats() const;
  void reset_stats();
  // The first vertex whose neighbour list, read from the device (mmap, uring), held an id that is not a
  // vertex or a negative weight; -1 when none. Such a list is not visited: the run's result is void.
  int64_t corrupt_vertex() const { return edge_fault_.vertex.load(std::memory_order_relaxed); }

 private:
  void add_stats(const async::EngineStats& s);
  const Csr& g_;
  BackendConfig cfg_;
  std::string error_;
  const std::byte* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  std::unique_ptr<async::EmuHub> hub_;
  mutable std::mutex mu_;
  async::EngineStats stats_;
  EdgeFault edge_fault_;
  PieceCheck device_check() { return PieceCheck{&edge_fault_, g_.n, g_.weighted}; }
};

template <class F>
bool BackendRuntime::with_driver(int tid, F&& f) {
  switch (cfg_.kind) {
    case Backend::kDram: {
      PlainDriver d(g_.device_base());
      f(d);
      return true;
    }
    case Backend::kMmap: {
      PlainDriver d(mapping_, device_check());
      f(d);
      return true;
    }
    case Backend::kDramPrefetch: {
      async::PrefetchDevice dev(g_.device_base());
      auto d = std::make_unique<CoroDriver<async::PrefetchDevice>>(dev, cfg_.contexts, cfg_.prefetch_targets, g_.edge_bytes());
      f(*d);
      add_stats(d->stats());
      return true;
    }
    case Backend::kEmu: {
      if (cfg_.emu_mode == EmuMode::kThread) {
        auto d = std::make_unique<CoroDriver<async::EmuQueueDevice>>(hub_->queue(uint32_t(tid)), cfg_.contexts,
                                                                      cfg_.prefetch_targets, g_.edge_bytes());
        f(*d);
        add_stats(d->stats());
        return true;
      }
      async::EmuTimeDevice dev(g_.device_base(), cfg_.emu);
      auto d = std::make_unique<CoroDriver<async::EmuTimeDevice>>(dev, cfg_.contexts, cfg_.prefetch_targets, g_.edge_bytes());
      f(*d);
      add_stats(d->stats());
      return true;
    }
    case Backend::kUring: {
      auto dev = std::make_unique<async::UringDevice>(cfg_.path, cfg_.contexts, cfg_.uring);
      if (!dev->ok()) {
        std::lock_guard<std::mutex> lock(mu_);
        if (error_.empty()) error_ = dev->error();
        return false;
      }
      auto d = std::make_unique<CoroDriver<async::UringDevice>>(*dev, cfg_.contexts, cfg_.prefetch_targets,
                                                                g_.edge_bytes(), device_check());
      f(*d);
      add_stats(d->stats());
      return true;
    }
  }
  return false;
}

}  // namespace dk::graph
