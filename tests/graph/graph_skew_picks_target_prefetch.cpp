// Description: the degree-skew measure behind `--prefetch-targets auto`: hot_endpoint_share is exact on
// a hand-made graph (a star and a path), and at scale 14 with a cache of 1024 hot lines it says "mostly
// cached" for kron (hubs take most neighbour entries) and "not cached" for urand, so auto turns the
// target prefetch off on kron and on for urand. Deterministic (fixed generator seed).
#include <cmath>
#include <vector>
#include <cstdio>

#include "graph/generate.hpp"
#include "graph/skew.hpp"

#include "check.hpp"

using namespace dk::graph;


// Undirected CSR from degrees alone (neighbour ids do not matter to the measure).
static Csr csr_with_degrees(const std::vector<int64_t>& deg) {
  Csr g;
  g.n = int64_t(deg.size());
  g.offsets = HugeArray<Offset>(deg.size() + 1);
  g.offsets[0] = 0;
  for (size_t i = 0; i < deg.size(); i++) g.offsets[i + 1] = g.offsets[i] + deg[i];
  g.m = g.offsets[deg.size()];
  return g;
}

int main() {
  // Star of 100 leaves: the hub holds 100 of 200 entries; hub + 10 leaves hold 110.
  std::vector<int64_t> star(101, 1);
  star[37] = 100;
  const Csr s = csr_with_degrees(star);
  CHECK(std::fabs(hot_endpoint_share(s, 1) - 0.5) < 1e-12, "star, 1 hot vertex: %f", hot_endpoint_share(s, 1));
  CHECK(std::fabs(hot_endpoint_share(s, 11) - 0.55) < 1e-12, "star, 11 hot: %f", hot_endpoint_share(s, 11));
  CHECK(std::fabs(hot_endpoint_share(s, 1000) - 1.0) < 1e-12, "star, all hot: %f", hot_endpoint_share(s, 1000));
  // A hub beyond the histogram cap (degree 100000) still counts first.
  std::vector<int64_t> big(100001, 1);
  big[5] = 100000;
  CHECK(std::fabs(hot_endpoint_share(csr_with_degrees(big), 1) - 0.5) < 1e-12, "big hub");

  const uint64_t cache_bytes = 1024 * 64 * 2;  // 1024 hot lines of 16384 vertices
  GenOptions o;
  o.scale = 14;
  o.kind = GenKind::kKron;
  const Csr kron = generate(o);
  o.kind = GenKind::kUrand;
  const Csr urand = generate(o);
  const double ks = hot_endpoint_share(kron, 1024), us = hot_endpoint_share(urand, 1024);
  std::printf("hot share (1024 of 16384 vertices): kron14 %.3f urand14 %.3f\n", ks, us);
  CHECK(targets_mostly_cached(kron, cache_bytes), "kron14 share %.3f should be >= 0.5", ks);
  CHECK(!targets_mostly_cached(urand, cache_bytes), "urand14 share %.3f should be < 0.5", us);
  CHECK(us > 1024.0 / 16384 && us < 0.15, "urand14 share %.3f: about 1024/16384 and a bit more", us);
  if (g_fail) return 1;
  std::printf("ok\n");
  return 0;
}
