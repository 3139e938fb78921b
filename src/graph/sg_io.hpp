// Readers and writers for GAP's formats: .sg (serialized graph), .wsg (weighted), and the text edge
// lists .el / .wel ("u v" / "u v w" per line). Errors return false with a message naming the fix.
#pragma once
#include <string>
#include <vector>

#include "graph/csr.hpp"

namespace dk::graph {

enum class Format { kSg, kWsg, kEl, kWel, kUnknown };
Format format_of(const std::string& path);  // by file name suffix

// Reads a .sg/.wsg file. With load_edges=false only the header and offsets are read (the edges stay
// in the file for a device backend); the neighbour array is never touched then.
bool read_sg(const std::string& path, bool load_edges, Csr& g, std::string& err);
bool write_sg(const std::string& path, const Csr& g, std::string& err);

struct EdgeTriple {
  NodeId u, v;
  int32_t w;
};
bool read_el(const std::string& path, bool weighted, std::vector<EdgeTriple>& edges, int64_t& n,
             std::string& err);
bool write_el(const std::string& path, const Csr& g, std::string& err);

}  // namespace dk::graph
