// Builds a GAP-style CSR from an edge list: symmetrize (undirected), drop self loops, sort each
// neighbour list, drop duplicate neighbours (keeping the smallest weight), parallel over threads.
#pragma once
#include <cstdint>

#include "graph/csr.hpp"
#include "graph/huge_array.hpp"
#include "graph/sg_io.hpp"

namespace dk::graph {

Csr build_csr(const HugeArray<EdgeTriple>& edges, int64_t n, bool directed, bool weighted, int threads);

// Runs body(t) on threads t = 0..threads-1 and joins.
void parallel_threads(int threads, const auto& body);

}  // namespace dk::graph

#include <thread>
#include <vector>

namespace dk::graph {
void parallel_threads(int threads, const auto& body) {
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; t++) pool.emplace_back([&body, t] { body(t); });
  body(0);
  for (auto& th : pool) th.join();
}
}  // namespace dk::graph
