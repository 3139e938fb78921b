// The page image: the neighbour lists of a .sg/.wsg file re-laid for a block device (paper §4.3.2).
// A list of at most one page never crosses a page boundary (padding before it when needed); a longer
// list starts on a page boundary, so each of its pages is one read. The layout is a pure function of
// the degrees, recomputed at load; the file starts with a one-page header that ties it to its graph.
#pragma once
#include <string>

#include "graph/csr.hpp"

namespace dk::graph {

inline constexpr uint64_t kImageMagic = 0x67616d6978616464ULL;  // "ddaximag"

struct PageLayoutStats {
  uint64_t image_bytes = 0;
  uint64_t lists_multi_page = 0;  // lists longer than one page
  uint64_t pad_bytes = 0;
};

// Fills g.page_addr (n entries); returns sizes.
PageLayoutStats compute_page_layout(Csr& g);

// Streams the lists from sg_path into img_path in page-image layout (bounded memory: 2 x 64 MiB).
bool write_page_image(const std::string& sg_path, const Csr& g, const std::string& img_path, std::string& err);

// True when img_path exists and its header matches g.
bool page_image_matches(const std::string& img_path, const Csr& g);

}  // namespace dk::graph
