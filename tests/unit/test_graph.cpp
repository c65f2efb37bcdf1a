// Task graphs, host side: construction, validation (bad ids, self edges, cycles named), argument
// updates, and the plan an instantiation uploads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "host/graph.hpp"

using namespace gpuos::detail;
using gpuos::common::Failure;

namespace {

gpuos_task nop() { return gpuos_task{GPUOS_OP_NOP, 1, nullptr, 0, 0}; }

std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Failure& e) {
    CHECK(e.status() == GPUOS_ERR_INVALID_ARG);
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// True when every edge of g goes forward in `order` and every node is in it once.
bool is_topological(const Graph& g, const std::vector<std::uint32_t>& order) {
  std::vector<std::int64_t> pos(g.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] >= g.size() || pos[order[i]] >= 0) return false;
    pos[order[i]] = static_cast<std::int64_t>(i);
  }
  if (order.size() != g.size()) return false;
  for (const Graph::Edge& e : g.edges())
    if (pos[e.from] >= pos[e.to]) return false;
  return true;
}

}  // namespace

TEST_CASE("graph: nodes keep their operator, tiles and a copy of their arguments") {
  Graph g;
  gpuos_binary_args a{reinterpret_cast<float*>(16), nullptr, nullptr, 7};
  const std::uint32_t id = g.add_node(gpuos_task{GPUOS_OP_ADD, 3, &a, sizeof(a), 0});
  a.n = 99;  // the graph copied them
  CHECK(id == 0);
  CHECK(g.node(0).op == GPUOS_OP_ADD);
  CHECK(g.node(0).tiles == 3);
  CHECK(g.node(0).arg_bytes == sizeof(a));
  gpuos_binary_args b;
  std::memcpy(&b, g.node(0).args, sizeof(b));
  CHECK(b.n == 7);
}

TEST_CASE("graph: bad nodes and edges are refused with a clear error") {
  Graph g;
  CHECK(contains(failure_of([&] { g.add_node(gpuos_task{GPUOS_OP_NOP, 0, nullptr, 0, 0}); }), "tiles must be in [1, 2^30]"));
  char big[GPUOS_MAX_ARG_BYTES + 1] = {};
  CHECK(contains(failure_of([&] { g.add_node(gpuos_task{GPUOS_OP_ADD, 1, big, sizeof(big), 0}); }), "exceed"));
  CHECK(contains(failure_of([&] { g.add_node(gpuos_task{GPUOS_OP_ADD, 1, nullptr, 32, 0}); }), "args is NULL"));
  CHECK(contains(failure_of([&] { g.add_node(gpuos_task{GPUOS_MAX_OPS, 1, nullptr, 0, 0}); }), "unknown operator id"));
  g.add_node(nop());
  g.add_node(nop());
  CHECK(contains(failure_of([&] { g.add_edge(0, 2); }), "no such node (the graph has 2)"));
  CHECK(contains(failure_of([&] { g.add_edge(5, 0); }), "no such node"));
  CHECK(contains(failure_of([&] { g.add_edge(1, 1); }), "cannot wait for itself"));
  CHECK(g.size() == 2);
  CHECK(g.edges().empty());
  CHECK(contains(failure_of([&] { (void)plan_graph(Graph{}); }), "the graph has no node"));
}

TEST_CASE("graph: the plan has successors, in-degrees, roots and a topological order; duplicate edges count once") {
  // 0 -> 1 -> 3, 0 -> 2 -> 3, 4 alone; the edge 0 -> 1 given twice.
  Graph g;
  for (int i = 0; i < 5; ++i) g.add_node(nop());
  g.add_edge(0, 1);
  g.add_edge(0, 1);
  g.add_edge(0, 2);
  g.add_edge(1, 3);
  g.add_edge(2, 3);
  const GraphPlan p = plan_graph(g);
  CHECK(p.indeg == std::vector<std::uint32_t>{0, 1, 1, 2, 0});
  CHECK(p.roots == std::vector<std::uint32_t>{0, 4});
  CHECK(p.succ_off == std::vector<std::uint32_t>{0, 2, 3, 4, 4, 4});
  CHECK(p.succ == std::vector<std::uint32_t>{1, 2, 3, 3});
  CHECK(is_topological(g, p.order));
}

TEST_CASE("graph: a cycle is refused and its nodes are named") {
  Graph g;
  for (int i = 0; i < 6; ++i) g.add_node(nop());
  g.add_edge(0, 1);
  g.add_edge(1, 2);
  g.add_edge(2, 3);
  g.add_edge(3, 1);  // 1 -> 2 -> 3 -> 1
  g.add_edge(3, 4);
  g.add_edge(5, 0);
  const std::string why = failure_of([&] { (void)plan_graph(g); });
  CHECK(contains(why, "the graph has a cycle: "));
  // The named cycle is the real one, in edge order, closed.
  CHECK((contains(why, "1 -> 2 -> 3 -> 1") || contains(why, "2 -> 3 -> 1 -> 2") || contains(why, "3 -> 1 -> 2 -> 3")));
  Graph two;
  two.add_node(nop());
  two.add_node(nop());
  two.add_edge(0, 1);
  two.add_edge(1, 0);
  CHECK(contains(failure_of([&] { (void)plan_graph(two); }), "cycle"));
}

TEST_CASE("graph: random DAGs of 1 to 100,000 nodes plan to a valid order; adding a back edge makes a cycle") {
  std::mt19937_64 rng(42);
  for (std::uint32_t n : {1u, 2u, 17u, 1000u, 100000u}) {
    Graph g;
    for (std::uint32_t i = 0; i < n; ++i) g.add_node(nop());
    // Edges go from a lower to a higher id in a random permutation: a DAG whatever the fan-in/out.
    std::vector<std::uint32_t> perm(n);
    for (std::uint32_t i = 0; i < n; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    const std::uint64_t edges = n < 2 ? 0 : std::uint64_t(n) * 3;
    for (std::uint64_t k = 0; k < edges; ++k) {
      std::uint32_t a = static_cast<std::uint32_t>(rng() % n), b = static_cast<std::uint32_t>(rng() % n);
      if (a == b) continue;
      if (a > b) std::swap(a, b);
      g.add_edge(perm[a], perm[b]);
    }
    const GraphPlan p = plan_graph(g);
    CHECK(is_topological(g, p.order));
    std::uint64_t sum = 0;
    for (std::uint32_t d : p.indeg) sum += d;
    CHECK(sum == p.succ.size());
    CHECK_FALSE(p.roots.empty());
    if (n >= 2 && !g.edges().empty()) {
      const Graph::Edge e = g.edges().front();
      g.add_edge(e.to, e.from);
      CHECK(contains(failure_of([&] { (void)plan_graph(g); }), "cycle"));
    }
  }
}

TEST_CASE("graph: an argument update keeps the operator and its argument size") {
  Graph g;
  gpuos_fill_args f{nullptr, 4, 1.0f, 0};
  g.add_node(gpuos_task{GPUOS_OP_FILL, 1, &f, sizeof(f), 0});
  f.value = 2.5f;
  g.set_args(0, &f, sizeof(f));
  gpuos_fill_args got;
  std::memcpy(&got, g.node(0).args, sizeof(got));
  CHECK(got.value == 2.5f);
  CHECK(contains(failure_of([&] { g.set_args(0, &f, 8); }), "takes 24 bytes of arguments, got 8"));
  CHECK(contains(failure_of([&] { g.set_args(3, &f, sizeof(f)); }), "does not exist"));
  CHECK(contains(failure_of([&] { g.set_args(0, nullptr, sizeof(f)); }), "args is NULL"));
}
