#include "host/graph.hpp"

#include <algorithm>
#include <cstring>

#include "common/error.hpp"

namespace gpuos::detail {

std::uint32_t Graph::add_node(const gpuos_task& t) {
  if (t.tiles == 0 || t.tiles > GPUOS_MAX_TILES)
    fail(GPUOS_ERR_INVALID_ARG, "graph node: tiles must be in [1, 2^30], got " + std::to_string(t.tiles));
  if (t.arg_bytes > GPUOS_MAX_ARG_BYTES)
    fail(GPUOS_ERR_INVALID_ARG, "graph node: arguments of " + std::to_string(t.arg_bytes) + " bytes exceed " +
                                    std::to_string(GPUOS_MAX_ARG_BYTES));
  if (t.arg_bytes != 0 && !t.args) fail(GPUOS_ERR_INVALID_ARG, "graph node: args is NULL");
  if (t.op >= GPUOS_MAX_OPS) fail(GPUOS_ERR_INVALID_ARG, "graph node: unknown operator id " + std::to_string(t.op));
  if (nodes_.size() >= kMaxGraphNodes)
    fail(GPUOS_ERR_INVALID_ARG, "a graph holds at most " + std::to_string(kMaxGraphNodes) + " nodes");
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = static_cast<std::uint16_t>(t.op);
  p.arg_bytes = static_cast<std::uint8_t>(t.arg_bytes);
  p.tiles = t.tiles;
  if (t.arg_bytes) std::memcpy(p.args, t.args, t.arg_bytes);
  nodes_.push_back(p);
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

void Graph::add_edge(std::uint32_t from, std::uint32_t to) {
  if (from >= nodes_.size() || to >= nodes_.size())
    fail(GPUOS_ERR_INVALID_ARG, "graph edge " + std::to_string(from) + " -> " + std::to_string(to) +
                                    ": no such node (the graph has " + std::to_string(nodes_.size()) + ")");
  if (from == to) fail(GPUOS_ERR_INVALID_ARG, "graph edge " + std::to_string(from) + " -> itself: a node cannot wait for itself");
  edges_.push_back({from, to});
}

void Graph::set_args(std::uint32_t id, const void* args, std::uint32_t arg_bytes) {
  if (id >= nodes_.size()) fail(GPUOS_ERR_INVALID_ARG, "graph node " + std::to_string(id) + " does not exist");
  abi::Payload& p = nodes_[id];
  if (arg_bytes != p.arg_bytes)
    fail(GPUOS_ERR_INVALID_ARG, "graph node " + std::to_string(id) + " takes " + std::to_string(p.arg_bytes) +
                                    " bytes of arguments, got " + std::to_string(arg_bytes));
  if (arg_bytes != 0 && !args) fail(GPUOS_ERR_INVALID_ARG, "args is NULL");
  if (arg_bytes) std::memcpy(p.args, args, arg_bytes);
}

GraphPlan plan_graph(const Graph& g) {
  const std::uint32_t n = g.size();
  if (n == 0) fail(GPUOS_ERR_INVALID_ARG, "the graph has no node");
  // Successors, each once (a duplicate edge adds no constraint), in CSR form.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> e;
  e.reserve(g.edges().size());
  for (const Graph::Edge& x : g.edges()) e.emplace_back(x.from, x.to);
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  GraphPlan p;
  p.indeg.assign(n, 0);
  p.succ_off.assign(n + 1, 0);
  p.succ.reserve(e.size());
  for (const auto& [from, to] : e) {
    ++p.succ_off[from + 1];
    ++p.indeg[to];
    p.succ.push_back(to);
  }
  for (std::uint32_t v = 0; v < n; ++v) p.succ_off[v + 1] += p.succ_off[v];
  for (std::uint32_t v = 0; v < n; ++v)
    if (p.indeg[v] == 0) p.roots.push_back(v);
  // Kahn's algorithm: a node left over is on a cycle or after one.
  std::vector<std::uint32_t> left = p.indeg;
  p.order = p.roots;
  p.order.reserve(n);
  for (std::size_t i = 0; i < p.order.size(); ++i) {
    const std::uint32_t v = p.order[i];
    for (std::uint32_t k = p.succ_off[v]; k < p.succ_off[v + 1]; ++k)
      if (--left[p.succ[k]] == 0) p.order.push_back(p.succ[k]);
  }
  if (p.order.size() != n) {
    // Name one cycle: walk predecessors that are still blocked until a node repeats.
    std::vector<std::vector<std::uint32_t>> pred(n);
    for (const auto& [from, to] : e)
      if (left[from] && left[to]) pred[to].push_back(from);
    std::uint32_t v = 0;
    while (left[v] == 0) ++v;
    std::vector<std::uint32_t> path;
    std::vector<int> seen(n, -1);
    while (seen[v] < 0) {
      seen[v] = static_cast<int>(path.size());
      path.push_back(v);
      v = pred[v].front();  // a blocked node has a blocked predecessor
    }
    std::string cycle;
    for (std::size_t i = path.size(); i-- > static_cast<std::size_t>(seen[v]);)
      cycle += std::to_string(path[i]) + " -> ";
    cycle += std::to_string(path[path.size() - 1]);
    fail(GPUOS_ERR_INVALID_ARG, "the graph has a cycle: " + cycle);
  }
  return p;
}

}  // namespace gpuos::detail
