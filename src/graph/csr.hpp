// A CSR graph in GAP's serialized layout: offsets (and so degrees) always in DRAM; the neighbour
// array either in DRAM too or left in the file for a device backend to read.
//
// Device addresses (where a neighbour list is read from) depend on where the edges live:
//   DRAM backends: byte offset in the neighbour array (addr_base = 0);
//   mmap:          byte offset in the .sg file        (addr_base = edges_file_offset());
//   uring:         byte offset in the page image      (page_addr[u], see page_image.hpp), laid out so
//                  no list of at most one page crosses a page boundary.
#pragma once
#include <cassert>
#include <cstdint>
#include <string>

#include "graph/huge_array.hpp"

namespace dk::graph {

using NodeId = int32_t;   // GAP's NodeID (SGID)
using Offset = int64_t;   // GAP's SGOffset
struct WNode {            // GAP's WSGID: NodeWeight<int32_t, int32_t>
  NodeId v;
  int32_t w;
};
static_assert(sizeof(WNode) == 8, "a weighted neighbour is (v, w), two int32");

// GAP header: bool directed, int64 edges, int64 nodes; then offsets, then neighbours.
inline constexpr uint64_t kSgHeaderBytes = 1 + 8 + 8;

struct Csr {
  bool directed = false;
  bool weighted = false;
  int64_t n = 0;                  // vertices
  int64_t m = 0;                  // neighbour entries stored (both directions when undirected)
  HugeArray<Offset> offsets;      // n + 1, in neighbour entries
  HugeArray<std::byte> edges;     // m * edge_bytes(), or empty when the edges stay on the device

  uint32_t edge_bytes() const { return weighted ? 8 : 4; }
  uint64_t edges_file_offset() const { return kSgHeaderBytes + uint64_t(n + 1) * sizeof(Offset); }
  uint64_t file_bytes() const { return edges_file_offset() + uint64_t(m) * edge_bytes(); }
  int64_t degree(NodeId u) const { return offsets[u + 1] - offsets[u]; }
  uint64_t addr_base = 0;           // see above
  HugeArray<uint64_t> page_addr;    // n entries when the page image is the device
  uint64_t list_addr(NodeId u) const {
    return page_addr.empty() ? addr_base + uint64_t(offsets[u]) * edge_bytes() : page_addr[u];
  }
  uint64_t list_bytes(NodeId u) const { return uint64_t(degree(u)) * edge_bytes(); }
  bool has_edges() const { return !edges.empty() || m == 0; }
  // Base pointer such that base + device address = the bytes in DRAM (requires has_edges()).
  const std::byte* device_base() const {
    assert(addr_base == 0 && page_addr.empty());
    return edges.data();
  }

  NodeId neighbour(int64_t edge_index) const {
    assert(!edges.empty());
    NodeId v;
    __builtin_memcpy(&v, edges.data() + uint64_t(edge_index) * edge_bytes(), sizeof v);
    return v;
  }
  int32_t weight(int64_t edge_index) const {
    assert(weighted);
    int32_t w;
    __builtin_memcpy(&w, edges.data() + uint64_t(edge_index) * 8 + 4, sizeof w);
    return w;
  }
};

}  // namespace dk::graph
