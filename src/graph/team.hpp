// A team of threads that runs one kernel like an OpenMP parallel region: every thread gets its own
// driver; phases are separated by a std::barrier whose completion step runs on one thread.
#pragma once
#include <barrier>
#include <functional>
#include <thread>
#include <vector>

#include "graph/backend.hpp"

namespace dk::graph {

// body(tid, driver) runs on each thread. Returns false if a driver could not be created.
template <class Body>
bool run_team(BackendRuntime& rt, int threads, const Body& body) {
  std::vector<std::thread> pool;
  std::atomic<bool> ok{true};
  auto one = [&](int tid) {
    if (!rt.with_driver(tid, [&](auto& driver) { body(tid, driver); })) ok = false;
  };
  for (int t = 1; t < threads; t++) pool.emplace_back(one, t);
  one(0);
  for (auto& th : pool) th.join();
  return ok;
}

}  // namespace dk::graph
