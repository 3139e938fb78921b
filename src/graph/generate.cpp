#include "graph/generate.hpp"

#include <cassert>
#include <numeric>
#include <algorithm>
#include <atomic>

#include "graph/build.hpp"
#include "graph/progress.hpp"

namespace dk::graph {

bool parse_gen_kind(const std::string& s, GenKind& k) {
  if (s == "urand") k = GenKind::kUrand;
  else if (s == "kron") k = GenKind::kKron;
  else return false;
  return true;
}

namespace {

struct Rng {
  uint64_t state;
  uint64_t next() { return mix64(state++); }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
};

constexpr uint64_t kBlockEdges = 1u << 16;

NodeId kron_vertex_pair(Rng& r, int scale, NodeId& v_out) {
  constexpr double A = 0.57, B = 0.19, C = 0.19;
  uint64_t u = 0, v = 0;
  for (int bit = 0; bit < scale; bit++) {
    const double p = r.uniform();
    if (p < A) {
    } else if (p < A + B) {
      v |= uint64_t{1} << bit;
    } else if (p < A + B + C) {
      u |= uint64_t{1} << bit;
    } else {
      u |= uint64_t{1} << bit;
      v |= uint64_t{1} << bit;
    }
  }
  v_out = NodeId(v);
  return NodeId(u);
}

HugeArray<NodeId> permutation(int64_t n, uint64_t seed) {
  HugeArray<NodeId> p{static_cast<size_t>(n)};
  std::iota(p.begin(), p.end(), 0);
  Rng r{seed ^ 0x5eed};
  for (int64_t i = n - 1; i > 0; i--) std::swap(p[i], p[r.next() % uint64_t(i + 1)]);
  return p;
}

int32_t pair_weight(NodeId u, NodeId v, uint64_t seed) {
  const uint64_t lo = uint64_t(u < v ? u : v), hi = uint64_t(u < v ? v : u);
  return int32_t(1 + mix64((lo << 32 | hi) ^ seed) % 255);
}

}  // namespace

Csr generate(const GenOptions& opt) {
  assert(opt.scale >= 1 && opt.scale <= 30);
  assert(opt.degree_avg >= 1);
  const int64_t n = int64_t{1} << opt.scale;
  const uint64_t m_und = uint64_t(n) * uint64_t(opt.degree_avg) / 2;
  HugeArray<EdgeTriple> el(m_und);
  HugeArray<NodeId> perm;
  if (opt.kind == GenKind::kKron) perm = permutation(n, opt.seed);
  const uint64_t blocks = (m_und + kBlockEdges - 1) / kBlockEdges;
  std::atomic<uint64_t> next{0};
  Progress bar("generate", blocks);
  parallel_threads(opt.threads, [&](int t) {
    for (;;) {
      const uint64_t b = next.fetch_add(1);
      if (b >= blocks) break;
      if (t == 0) bar.update(b);
      Rng r{mix64(opt.seed + b * 0x9e37)};
      const uint64_t hi = std::min(m_und, (b + 1) * kBlockEdges);
      for (uint64_t i = b * kBlockEdges; i < hi; i++) {
        EdgeTriple& e = el[i];
        if (opt.kind == GenKind::kUrand) {
          e.u = NodeId(r.next() % uint64_t(n));
          e.v = NodeId(r.next() % uint64_t(n));
        } else {
          e.u = perm[kron_vertex_pair(r, opt.scale, e.v)];
          e.v = perm[e.v];
        }
        e.w = opt.weighted ? pair_weight(e.u, e.v, opt.seed) : 1;
      }
    }
  });
  bar.finish();
  return build_csr(el, n, /*directed=*/false, opt.weighted, opt.threads);
}

}  // namespace dk::graph
