// Synthetic graphs as GAP makes them: uniform random (`urand`) and Kronecker (`kron`, Graph500
// initiator A=0.57, B=0.19, C=0.19, vertex ids permuted). Undirected; `degree_avg` is the average
// degree of the result (GAP's -k 16 gives 32): scale S generates 2^S * degree_avg / 2 edges.
// Weights (for .wsg) are uniform in [1, 255], a function of the unordered pair, so both directions
// of an edge carry the same weight. Deterministic for a given seed whatever the thread count.
#pragma once
#include <cstdint>
#include <string>

#include "graph/csr.hpp"

namespace dk::graph {

enum class GenKind { kUrand, kKron };

struct GenOptions {
  GenKind kind = GenKind::kKron;
  int scale = 16;
  int degree_avg = 32;
  bool weighted = false;
  uint64_t seed = 27491095;
  int threads = 2;
};

bool parse_gen_kind(const std::string& s, GenKind& k);
Csr generate(const GenOptions& opt);

// SplitMix64: the generator and hash used everywhere a reproducible random number is needed.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace dk::graph
