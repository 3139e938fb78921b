// Serial reference implementations and verifiers with the definitions GAP's verifiers use:
//   BFS : every reached vertex's parent is an in-neighbour one level closer to the source (levels
//         from a serial BFS); parent[source] = source; unreached vertices have parent -1.
//   BC  : Brandes from the same source, scores normalised by the largest; equal within 1e-6 (relative
//         to the largest score, which is 1 after normalisation).
//   SSSP: Dijkstra distances, equal exactly (integer weights); unreached = kDistInf.
// All need the edges in DRAM.
#pragma once
#include <string>
#include <vector>

#include "graph/csr.hpp"
#include "graph/huge_array.hpp"

namespace dk::graph {

std::vector<int32_t> serial_bfs_depth(const Csr& g, NodeId source);
std::vector<double> serial_bc(const Csr& g, NodeId source);
std::vector<int32_t> serial_dijkstra(const Csr& g, NodeId source);

// Each returns true when the result is correct; otherwise `why` names the first bad vertex.
bool verify_bfs(const Csr& g, NodeId source, const HugeArray<NodeId>& parent, std::string& why);
bool verify_bc(const Csr& g, NodeId source, const HugeArray<double>& scores, std::string& why);
bool verify_sssp(const Csr& g, NodeId source, const HugeArray<int32_t>& dist, std::string& why);

}  // namespace dk::graph
