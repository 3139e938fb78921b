// The graph kernels, parallel over threads, each thread driving its backend's driver:
//   bfs  - top-down BFS (GAP semantics: parent[source] = source, unreached = -1);
//   bc   - Brandes betweenness centrality from one source (forward BFS counting shortest paths, then
//          backward dependency accumulation), scores normalised by the largest (as GAP);
//   sssp - delta-stepping shortest paths on a weighted graph (GAP's algorithm without bin fusion).
#pragma once
#include <cstdint>

#include "graph/backend.hpp"
#include "graph/csr.hpp"
#include "graph/huge_array.hpp"

namespace dk::graph {

inline constexpr int32_t kDistInf = INT32_MAX / 2;

HugeArray<NodeId> run_bfs(const Csr& g, NodeId source, BackendRuntime& rt, int threads);
HugeArray<double> run_bc(const Csr& g, NodeId source, BackendRuntime& rt, int threads);
HugeArray<int32_t> run_sssp(const Csr& g, NodeId source, int32_t delta, BackendRuntime& rt, int threads);

}  // namespace dk::graph
