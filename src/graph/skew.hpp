// Degree skew: do the vertex-state accesses of a walk mostly hit the cache on their own?
//
// Every neighbour entry names a vertex whose state (parent, depth, dist) the kernel then touches, and an
// undirected vertex is named once per edge it has, so the share of those touches that land on the H
// highest-degree vertices is the sum of their degrees over m. When the H vertices whose state lines fit in
// the cache take most touches (Kronecker: a few hubs), the state is cache-resident and prefetching it is
// pure overhead (an extra pass and a yield per batch); on uniform graphs the share is small and the
// prefetch is what hides the misses. (Measured: docs/graph.md, "Target prefetch".)
#pragma once
#include <cstdint>

#include "graph/csr.hpp"

namespace dk::graph {

// Share (0..1) of all neighbour entries that name one of the `hot_vertices` highest-degree vertices.
double hot_endpoint_share(const Csr& g, uint64_t hot_vertices);

// The last-level cache size of this machine in bytes (sysfs, else sysconf; 32 MiB when unknown).
uint64_t llc_bytes();

// True when the vertices whose state lines fill half the LLC (one 64-byte line each: hubs are scattered)
// take at least half of all neighbour entries: the target prefetch should be off.
bool targets_mostly_cached(const Csr& g, uint64_t cache_bytes);
inline uint64_t hot_lines(uint64_t cache_bytes) { return cache_bytes / 2 / 64; }

}  // namespace dk::graph
