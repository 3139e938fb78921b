#include "graph/skew.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <functional>
#include <vector>

namespace dk::graph {

double hot_endpoint_share(const Csr& g, uint64_t hot_vertices) {
  if (g.m == 0 || g.n == 0) return 0;
  // Histogram of degrees below kCap; the (few) larger ones are kept and sorted.
  constexpr int64_t kCap = 1 << 16;
  std::vector<uint64_t> count(kCap, 0);
  std::vector<int64_t> big;
  for (int64_t u = 0; u < g.n; u++) {
    const int64_t d = g.degree(NodeId(u));
    if (d < kCap) count[size_t(d)]++;
    else big.push_back(d);
  }
  std::sort(big.begin(), big.end(), std::greater<>());
  uint64_t left = hot_vertices, entries = 0;
  for (size_t i = 0; i < big.size() && left > 0; i++, left--) entries += uint64_t(big[i]);
  for (int64_t d = kCap - 1; d > 0 && left > 0; d--) {
    const uint64_t take = std::min<uint64_t>(left, count[size_t(d)]);
    entries += take * uint64_t(d);
    left -= take;
  }
  return double(entries) / double(g.m);
}

// sysfs first: in a VM, sysconf may report the host's cache (this one says 256 MiB for a 32 MiB L3).
uint64_t llc_bytes() {
  uint64_t best = 0;
  for (int i = 0; i < 8; i++) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream type(dir + "type"), size(dir + "size");
    std::string t, sz;
    if (!(type >> t) || !(size >> sz)) break;
    if (t == "Instruction" || sz.empty()) continue;
    uint64_t bytes = std::strtoull(sz.c_str(), nullptr, 10);
    if (sz.back() == 'K') bytes <<= 10;
    if (sz.back() == 'M') bytes <<= 20;
    best = std::max(best, bytes);
  }
  if (best > 0) return best;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return l3 > 0 ? uint64_t(l3) : uint64_t{32} << 20;
}

bool targets_mostly_cached(const Csr& g, uint64_t cache_bytes) {
  return hot_endpoint_share(g, hot_lines(cache_bytes)) >= 0.5;
}

}  // namespace dk::graph
