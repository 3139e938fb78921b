// Description: GAP file formats round-trip and the generators make GAP-shaped graphs: kron and urand
// at scale 10 are undirected (every edge present both ways with the same weight), without self loops
// or duplicate neighbours, sorted, with average degree near the requested 32; the .sg header has
// GAP's byte layout (bool directed, int64 edges, int64 nodes); .sg, .wsg and .el survive a
// write/read cycle bit for bit; the page image puts every list of at most a page inside one page.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "graph/build.hpp"
#include "graph/generate.hpp"
#include "graph/page_image.hpp"
#include "graph/sg_io.hpp"

#include "check.hpp"

using namespace dk::graph;


static bool has_edge_w(const Csr& g, NodeId u, NodeId v, int32_t w) {
  for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
    if (g.neighbour(e) == v) return !g.weighted || g.weight(e) == w;
  }
  return false;
}

// kron repeats many edges at small scales (duplicates are dropped, as GAP does): a looser bound.
static void check_shape(const Csr& g, const char* name, double avg_min) {
  CHECK(!g.directed, "%s: generator graphs are undirected", name);
  const double avg = double(g.m) / double(g.n);
  CHECK(avg > avg_min && avg <= 32, "%s: average degree %.2f not near 32", name, avg);
  for (NodeId u = 0; u < g.n; u++) {
    for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
      const NodeId v = g.neighbour(e);
      CHECK(v != u, "%s: self loop at %d", name, u);
      if (e > g.offsets[u]) CHECK(g.neighbour(e - 1) < v, "%s: list of %d not sorted/unique", name, u);
      CHECK(has_edge_w(g, v, u, g.weighted ? g.weight(e) : 0), "%s: edge %d-%d missing backwards", name, u, v);
      if (g.weighted) CHECK(g.weight(e) >= 1 && g.weight(e) <= 255, "%s: weight out of range", name);
    }
    if (g_fail > 10) return;
  }
}

static bool same(const Csr& a, const Csr& b) {
  return a.n == b.n && a.m == b.m && a.weighted == b.weighted && a.directed == b.directed &&
         std::memcmp(a.offsets.data(), b.offsets.data(), size_t(a.n + 1) * 8) == 0 &&
         std::memcmp(a.edges.data(), b.edges.data(), size_t(a.m) * a.edge_bytes()) == 0;
}

int main() {
  const char* dir = getenv("DAXKIT_BUILD");
  const std::string base = std::string(dir ? dir : "/tmp") + "/graph_files_roundtrip";
  for (GenKind kind : {GenKind::kKron, GenKind::kUrand}) {
    GenOptions opt;
    opt.kind = kind;
    opt.scale = 10;
    opt.weighted = kind == GenKind::kUrand;
    Csr g = generate(opt);
    const char* name = kind == GenKind::kKron ? "kron10" : "urand10";
    check_shape(g, name, kind == GenKind::kKron ? 16 : 30);
    opt.threads = 1;
    Csr again = generate(opt);
    CHECK(same(g, again), "%s: generator not deterministic across thread counts", name);

    std::string err;
    const std::string sg = base + (g.weighted ? ".wsg" : ".sg");
    CHECK(write_sg(sg, g, err), "%s", err.c_str());
    Csr back;
    CHECK(read_sg(sg, true, back, err), "%s", err.c_str());
    CHECK(same(g, back), "%s: .sg round trip differs", name);
    // GAP header bytes.
    unsigned char hdr[17];
    const int fd = open(sg.c_str(), O_RDONLY);
    CHECK(fd >= 0 && pread(fd, hdr, 17, 0) == 17, "read header");
    close(fd);
    int64_t m_file, n_file;
    std::memcpy(&m_file, hdr + 1, 8);
    std::memcpy(&n_file, hdr + 9, 8);
    CHECK(hdr[0] == 0 && m_file == g.m && n_file == g.n, "%s: header is not GAP's layout", name);

    // Edge list round trip (text): el -> csr rebuild gives the same graph.
    const std::string el = base + (g.weighted ? ".wel" : ".el");
    CHECK(write_el(el, g, err), "%s", err.c_str());
    std::vector<EdgeTriple> edges;
    int64_t n = 0;
    CHECK(read_el(el, g.weighted, edges, n, err), "%s", err.c_str());
    HugeArray<EdgeTriple> arr(edges.size());
    std::copy(edges.begin(), edges.end(), arr.data());
    Csr rebuilt = build_csr(arr, g.n, false, g.weighted, 2);
    CHECK(same(g, rebuilt), "%s: .el round trip differs", name);

    // Page image: lists <= one page never cross a page; bytes equal the lists.
    Csr idx;
    CHECK(read_sg(sg, false, idx, err), "%s", err.c_str());
    compute_page_layout(idx);
    const std::string img = base + ".pages";
    CHECK(write_page_image(sg, idx, img, err), "%s", err.c_str());
    CHECK(page_image_matches(img, idx), "%s: image header mismatch", name);
    const int ifd = open(img.c_str(), O_RDONLY);
    for (NodeId u = 0; u < g.n && ifd >= 0; u++) {
      const uint64_t bytes = g.list_bytes(u), a = idx.page_addr[u];
      if (bytes <= 4096 && bytes > 0) CHECK(a / 4096 == (a + bytes - 1) / 4096, "%s: list %d crosses a page", name, u);
      if (bytes > 4096) CHECK(a % 4096 == 0, "%s: long list %d not page aligned", name, u);
      std::vector<std::byte> buf(bytes);
      CHECK(pread(ifd, buf.data(), bytes, off_t(a)) == ssize_t(bytes), "read image");
      CHECK(std::memcmp(buf.data(), g.edges.data() + uint64_t(g.offsets[u]) * g.edge_bytes(), bytes) == 0,
            "%s: image bytes of list %d differ", name, u);
      if (g_fail > 10) break;
    }
    if (ifd >= 0) close(ifd);
    unlink(sg.c_str());
    unlink(el.c_str());
    unlink(img.c_str());
  }
  std::string err;
  Csr bad;
  CHECK(!read_sg("/nonexistent/x.sg", false, bad, err) && err.find("cannot open") != std::string::npos,
        "missing file must fail with a reason");
  std::printf("%s\n", g_fail == 0 ? "PASS" : "FAIL");
  return g_fail == 0 ? 0 : 1;
}
