// `daxkit graph gen` and `daxkit graph convert`.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "async/tsc.hpp"
#include "cmds.hpp"
#include "graph/build.hpp"
#include "graph/generate.hpp"
#include "graph/page_image.hpp"
#include "graph/sg_io.hpp"
#include "options.hpp"

namespace dk::graph::cli {

namespace {

const OptionSpec kGenOptions[] = {
    {"kind", true, "kron | urand"},
    {"scale", true, "log2 of the vertex count, 1..30"},
    {"degree", true, "average degree (default 32: GAP's -k 16)"},
    {"weighted", false, "weights uniform in [1, 255] (implied by a .wsg output)"},
    {"output", true, "FILE.sg or FILE.wsg (or .el / .wel)"},
    {"seed", true, "generator seed (default 27491095)"},
    {"threads", true, "generator threads (default: online CPUs)"},
};

const OptionSpec kConvertOptions[] = {
    {"input", true, "FILE.sg | .wsg | .el | .wel"},
    {"output", true, "FILE.sg | .wsg | .el | .wel, or FILE.pages (page image for the uring backend)"},
    {"directed", false, "edge-list input: keep edges directed (default: symmetrize)"},
    {"seed", true, "seed for weights added when converting unweighted to weighted"},
};

bool write_any(const std::string& path, const Csr& g) {
  std::string err;
  const Format f = format_of(path);
  const bool ok = (f == Format::kEl || f == Format::kWel) ? write_el(path, g, err) : write_sg(path, g, err);
  if (!ok) std::fprintf(stderr, "daxkit graph: %s\n", err.c_str());
  return ok;
}

// Copies g with weights added (pair hash, both directions equal) or dropped.
Csr reweigh(const Csr& g, bool weighted, uint64_t seed) {
  Csr out;
  out.directed = g.directed;
  out.weighted = weighted;
  out.n = g.n;
  out.m = g.m;
  out.offsets = HugeArray<Offset>(size_t(g.n + 1));
  std::copy(g.offsets.data(), g.offsets.data() + g.n + 1, out.offsets.data());
  out.edges.allocate(size_t(g.m) * out.edge_bytes());
  for (int64_t u = 0; u < g.n; u++) {
    for (Offset e = g.offsets[size_t(u)]; e < g.offsets[size_t(u) + 1]; e++) {
      const NodeId v = g.neighbour(e);
      std::byte* dst = out.edges.data() + uint64_t(e) * out.edge_bytes();
      __builtin_memcpy(dst, &v, 4);
      if (weighted) {
        const uint64_t lo = uint64_t(u < v ? u : v), hi = uint64_t(u < v ? v : u);
        const int32_t w = g.weighted ? g.weight(e) : int32_t(1 + mix64((lo << 32 | hi) ^ seed) % 255);
        __builtin_memcpy(dst + 4, &w, 4);
      }
    }
  }
  return out;
}

}  // namespace

int cmd_gen(int argc, char** argv) {
  Options o;
  const size_t count = sizeof kGenOptions / sizeof kGenOptions[0];
  if (!o.parse(argc, argv, 2, kGenOptions, count, "daxkit graph gen --kind kron|urand --scale S --output FILE")) return 2;
  GenOptions g;
  long long scale, degree, seed, threads;
  const std::string out = o.str("output", "");
  if (!parse_gen_kind(o.str("kind", ""), g.kind) || out.empty() || !o.has("scale")) {
    std::fprintf(stderr, "daxkit graph gen: need --kind kron|urand, --scale S and --output FILE.sg|.wsg\n");
    return 2;
  }
  if (!o.integer("scale", 16, 1, 30, scale) || !o.integer("degree", 32, 1, 4096, degree) ||
      !o.integer("seed", 27491095, 0, INT64_MAX, seed) ||
      !o.integer("threads", sysconf(_SC_NPROCESSORS_ONLN), 1, 64, threads)) {
    return 2;
  }
  const Format f = format_of(out);
  if (f == Format::kUnknown) {
    std::fprintf(stderr, "daxkit graph gen: --output %s: suffix must be .sg, .wsg, .el or .wel\n", out.c_str());
    return 2;
  }
  g.weighted = o.has("weighted") || f == Format::kWsg || f == Format::kWel;
  if (g.weighted && f == Format::kSg) {
    std::fprintf(stderr, "daxkit graph gen: --weighted needs a .wsg output (GAP keeps weights in .wsg)\n");
    return 2;
  }
  g.scale = int(scale);
  g.degree_avg = int(degree);
  g.seed = uint64_t(seed);
  g.threads = int(threads);
  const double t0 = async::wall_s();
  Csr csr = generate(g);
  const double t1 = async::wall_s();
  if (!write_any(out, csr)) return 1;
  std::printf("gen: %s n=%lld m=%lld (%.1f MiB of edges) generate_s=%.2f write_s=%.2f\n", out.c_str(),
              (long long)csr.n, (long long)csr.m, double(csr.m) * csr.edge_bytes() / (1 << 20), t1 - t0,
              async::wall_s() - t1);
  return 0;
}

int cmd_convert(int argc, char** argv) {
  Options o;
  const size_t count = sizeof kConvertOptions / sizeof kConvertOptions[0];
  if (!o.parse(argc, argv, 2, kConvertOptions, count, "daxkit graph convert --input FILE --output FILE")) return 2;
  const std::string in = o.str("input", ""), out = o.str("output", "");
  long long seed;
  if (in.empty() || out.empty() || !o.integer("seed", 27491095, 0, INT64_MAX, seed)) {
    std::fprintf(stderr, "daxkit graph convert: need --input FILE and --output FILE\n");
    return 2;
  }
  const Format fin = format_of(in);
  const bool to_image = out.size() > 6 && out.compare(out.size() - 6, 6, ".pages") == 0;
  std::string err;
  Csr g;
  if (to_image) {  // streams: only the offsets are read into DRAM
    if (!read_sg(in, false, g, err)) {
      std::fprintf(stderr, "daxkit graph: %s\n", err.c_str());
      return 1;
    }
    const PageLayoutStats st = compute_page_layout(g);
    if (!write_page_image(in, g, out, err)) {
      std::fprintf(stderr, "daxkit graph: %s\n", err.c_str());
      return 1;
    }
    std::printf("convert: %s -> %s (%.1f MiB, %llu lists longer than a page)\n", in.c_str(), out.c_str(),
                double(st.image_bytes) / (1 << 20), (unsigned long long)st.lists_multi_page);
    return 0;
  }
  if (fin == Format::kSg || fin == Format::kWsg) {
    if (!read_sg(in, true, g, err)) {
      std::fprintf(stderr, "daxkit graph: %s\n", err.c_str());
      return 1;
    }
  } else if (fin == Format::kEl || fin == Format::kWel) {
    std::vector<EdgeTriple> el;
    int64_t n = 0;
    if (!read_el(in, fin == Format::kWel, el, n, err)) {
      std::fprintf(stderr, "daxkit graph: %s\n", err.c_str());
      return 1;
    }
    HugeArray<EdgeTriple> edges(el.size());
    std::copy(el.begin(), el.end(), edges.data());
    g = build_csr(edges, std::max<int64_t>(n, 1), o.has("directed"), fin == Format::kWel,
                  int(sysconf(_SC_NPROCESSORS_ONLN)));
  } else {
    std::fprintf(stderr, "daxkit graph convert: --input %s: suffix must be .sg, .wsg, .el or .wel\n", in.c_str());
    return 2;
  }
  const Format fout = format_of(out);
  if (fout == Format::kUnknown) {
    std::fprintf(stderr, "daxkit graph convert: --output %s: suffix must be .sg, .wsg, .el, .wel or .pages\n", out.c_str());
    return 2;
  }
  const bool want_weighted = fout == Format::kWsg || fout == Format::kWel;
  if (want_weighted != g.weighted) g = reweigh(g, want_weighted, uint64_t(seed));
  if (!write_any(out, g)) return 1;
  std::printf("convert: %s -> %s n=%lld m=%lld\n", in.c_str(), out.c_str(), (long long)g.n, (long long)g.m);
  return 0;
}

}  // namespace dk::graph::cli
