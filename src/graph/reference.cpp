#include "graph/reference.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

#include "graph/kernels.hpp"

namespace dk::graph {

std::vector<int32_t> serial_bfs_depth(const Csr& g, NodeId source) {
  std::vector<int32_t> depth(size_t(g.n), -1);
  std::vector<NodeId> q{source};
  depth[size_t(source)] = 0;
  for (size_t i = 0; i < q.size(); i++) {
    const NodeId u = q[i];
    for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
      const NodeId v = g.neighbour(e);
      if (depth[size_t(v)] < 0) {
        depth[size_t(v)] = depth[size_t(u)] + 1;
        q.push_back(v);
      }
    }
  }
  return depth;
}

static bool has_edge(const Csr& g, NodeId u, NodeId v) {
  for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
    if (g.neighbour(e) == v) return true;
  }
  return false;
}

bool verify_bfs(const Csr& g, NodeId source, const HugeArray<NodeId>& parent, std::string& why) {
  const std::vector<int32_t> depth = serial_bfs_depth(g, source);
  for (int64_t v = 0; v < g.n; v++) {
    const NodeId p = parent[size_t(v)];
    const std::string at = "vertex " + std::to_string(v) + " (parent " + std::to_string(p) + ", depth " +
                           std::to_string(depth[size_t(v)]) + "): ";
    if (v == source) {
      if (p != source) return why = at + "the source must be its own parent", false;
    } else if (depth[size_t(v)] < 0) {
      if (p != -1) return why = at + "unreachable but has a parent", false;
    } else if (p < 0 || p >= g.n) {
      return why = at + "reachable but has no parent", false;
    } else if (depth[size_t(p)] != depth[size_t(v)] - 1) {
      return why = at + "parent is not one level closer to the source", false;
    } else if (!has_edge(g, p, NodeId(v))) {
      return why = at + "no edge from the parent", false;
    }
  }
  return true;
}

std::vector<double> serial_bc(const Csr& g, NodeId source) {
  std::vector<int32_t> depth(size_t(g.n), -1);
  std::vector<double> sigma(size_t(g.n), 0), delta(size_t(g.n), 0);
  std::vector<NodeId> order{source};
  depth[size_t(source)] = 0;
  sigma[size_t(source)] = 1;
  for (size_t i = 0; i < order.size(); i++) {
    const NodeId u = order[i];
    for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
      const NodeId v = g.neighbour(e);
      if (depth[size_t(v)] < 0) {
        depth[size_t(v)] = depth[size_t(u)] + 1;
        order.push_back(v);
      }
      if (depth[size_t(v)] == depth[size_t(u)] + 1) sigma[size_t(v)] += sigma[size_t(u)];
    }
  }
  for (size_t i = order.size(); i-- > 0;) {
    const NodeId u = order[i];
    for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
      const NodeId v = g.neighbour(e);
      if (depth[size_t(v)] == depth[size_t(u)] + 1) {
        delta[size_t(u)] += sigma[size_t(u)] / sigma[size_t(v)] * (1 + delta[size_t(v)]);
      }
    }
  }
  delta[size_t(source)] = 0;
  const double biggest = *std::max_element(delta.begin(), delta.end());
  if (biggest > 0) {
    for (double& d : delta) d /= biggest;
  }
  return delta;
}

bool verify_bc(const Csr& g, NodeId source, const HugeArray<double>& scores, std::string& why) {
  const std::vector<double> ref = serial_bc(g, source);
  for (int64_t v = 0; v < g.n; v++) {
    if (!(std::fabs(ref[size_t(v)] - scores[size_t(v)]) <= 1e-6)) {
      why = "vertex " + std::to_string(v) + ": score " + std::to_string(scores[size_t(v)]) + ", reference " +
            std::to_string(ref[size_t(v)]);
      return false;
    }
  }
  return true;
}

std::vector<int32_t> serial_dijkstra(const Csr& g, NodeId source) {
  std::vector<int32_t> dist(size_t(g.n), kDistInf);
  using Item = std::pair<int32_t, NodeId>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
  dist[size_t(source)] = 0;
  pq.push({0, source});
  while (!pq.empty()) {
    const auto [d, u] = pq.top();
    pq.pop();
    if (d > dist[size_t(u)]) continue;
    for (Offset e = g.offsets[u]; e < g.offsets[u + 1]; e++) {
      const NodeId v = g.neighbour(e);
      const int32_t nd = d + g.weight(e);
      if (nd < dist[size_t(v)]) {
        dist[size_t(v)] = nd;
        pq.push({nd, v});
      }
    }
  }
  return dist;
}

bool verify_sssp(const Csr& g, NodeId source, const HugeArray<int32_t>& dist, std::string& why) {
  const std::vector<int32_t> ref = serial_dijkstra(g, source);
  for (int64_t v = 0; v < g.n; v++) {
    if (ref[size_t(v)] != dist[size_t(v)]) {
      why = "vertex " + std::to_string(v) + ": distance " + std::to_string(dist[size_t(v)]) + ", reference " +
            std::to_string(ref[size_t(v)]);
      return false;
    }
  }
  return true;
}

}  // namespace dk::graph
