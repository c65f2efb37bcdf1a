// Task graphs, host side: building a graph (nodes with operators and arguments, edges), checking it, and
// the plan an instantiation uploads (successor lists, in-degrees, roots, a topological order). Pure logic:
// no CUDA; unit-tested on the CPU (tests/unit/test_graph.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuos/gpuos.h"
#include "kernel/wire.h"

namespace gpuos::detail {

/// Most nodes one graph holds (the device's records of an instance are 256 bytes each).
inline constexpr std::uint32_t kMaxGraphNodes = 1u << 20;

/// A graph being built. Node ids are dense from 0 in the order nodes were added.
class Graph {
 public:
  /// Adds a node running `task` (its operator, tiles and a copy of its arguments). Checks what can be
  /// checked without a runtime (tiles, argument size bound, args pointer); the operator itself is checked
  /// at instantiation. Throws Failure(GPUOS_ERR_INVALID_ARG).
  std::uint32_t add_node(const gpuos_task& task);
  /// `to` runs after `from` has completed. Both must exist; a self edge is refused; a duplicate edge is
  /// ignored (it adds no constraint). Cycles are found at plan().
  void add_edge(std::uint32_t from, std::uint32_t to);

  std::uint32_t size() const { return static_cast<std::uint32_t>(nodes_.size()); }
  const abi::Payload& node(std::uint32_t id) const { return nodes_.at(id); }
  /// Replaces node `id`'s arguments (same size as before: an update does not change the operator).
  void set_args(std::uint32_t id, const void* args, std::uint32_t arg_bytes);

  struct Edge {
    std::uint32_t from, to;
  };
  const std::vector<Edge>& edges() const { return edges_; }

 private:
  std::vector<abi::Payload> nodes_;
  std::vector<Edge> edges_;
};

/// What an instantiation needs: successors in CSR form, in-degrees, the roots, a topological order.
struct GraphPlan {
  std::vector<std::uint32_t> indeg;     ///< per node
  std::vector<std::uint32_t> succ_off;  ///< node v's successors are succ[succ_off[v] .. succ_off[v+1])
  std::vector<std::uint32_t> succ;
  std::vector<std::uint32_t> roots;     ///< nodes with no predecessor, in id order
  std::vector<std::uint32_t> order;     ///< a topological order
};

/// Checks `g` (at least one node; no cycle: the message names the nodes of one) and plans it. Throws
/// Failure(GPUOS_ERR_INVALID_ARG).
GraphPlan plan_graph(const Graph& g);

}  // namespace gpuos::detail
