// An instance's device image (host/graph_image.hpp): the header's arrays, every record's successors
// (inline for one, through the list for more), in-degrees in successor words, sinks, alignment.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "host/graph_image.hpp"

using namespace gpuos;
using namespace gpuos::detail;

namespace {

gpuos_task nop_task() { return gpuos_task{GPUOS_OP_NOP, 1, nullptr, 0, 0}; }

template <class T>
T read_at(const std::vector<unsigned char>& img, std::uint64_t off) {
  T v;
  std::memcpy(&v, img.data() + off, sizeof(T));
  return v;
}

}  // namespace

TEST_CASE("graph image: header, records and successor words of random DAGs") {
  std::mt19937_64 rng(11);
  for (std::uint32_t n : {1u, 2u, 7u, 300u, 5000u}) {
    Graph g;
    for (std::uint32_t v = 0; v < n; ++v) g.add_node(nop_task());
    for (std::uint32_t k = 0; k < 3 * n; ++k) {
      const std::uint32_t a = rng() % n, b = rng() % n;
      if (a < b) g.add_edge(a, b);
    }
    const GraphPlan plan = plan_graph(g);
    std::vector<abi::Payload> payloads;
    for (std::uint32_t v = 0; v < n; ++v) payloads.push_back(g.node(v));
    const std::uint64_t base = 0x7f0000000000ull;
    std::vector<std::uint32_t> tiles(n, 1);
    const Placement place = place_graph(plan, tiles, 7);
    const auto img = graph_image(plan, payloads, base, &place);
    const GraphLayout l = graph_layout(plan, &place);
    REQUIRE(img.size() == l.bytes);
    const auto x = read_at<abi::GraphExec>(img, 0);
    // The placement's tables, where the header says; every node's counters start at 0.
    CHECK(x.shape.roles == place.roles);
    CHECK(x.shape.role_off == base + l.role_off);
    CHECK(x.shape.pitems == base + l.pitems);
    CHECK(x.shape.pwaits == base + l.pwaits);
    CHECK(x.shape.pnodes == base + l.pnodes);
    CHECK(x.shape.pitems % 32 == 0);
    CHECK(x.shape.pnodes % 8 == 0);
    for (std::uint32_t r = 0; r <= place.roles; ++r) CHECK(read_at<std::uint32_t>(img, l.role_off + 4ull * r) == place.role_off[r]);
    for (std::size_t i = 0; i < place.items.size(); ++i) {
      const auto it = read_at<abi::PlacedItem>(img, l.pitems + 32 * i);
      CHECK(std::memcmp(&it, &place.items[i], sizeof(it)) == 0);
    }
    for (std::size_t i = 0; i < place.waits.size(); ++i) {
      const auto w = read_at<abi::PlacedWait>(img, l.pwaits + 8 * i);
      CHECK((w.node == place.waits[i].node && w.weight == place.waits[i].weight));
    }
    for (std::uint32_t v = 0; v < n; ++v) {
      const auto pn = read_at<abi::PlacedNode>(img, l.pnodes + 8ull * v);
      CHECK((pn.done == 0 && pn.bad == 0));
    }
    CHECK(x.shape.nodes == n);
    CHECK(x.shape.nroots == plan.roots.size());
    CHECK(x.shape.recs == base + l.recs);
    CHECK(x.shape.recs % 256 == 0);
    CHECK(x.shape.batches % 64 == 0);
    CHECK(x.shape.items % 8 == 0);
    CHECK(x.run.sinks_done == 0);
    std::uint32_t sinks = 0;
    for (std::uint32_t v = 0; v < n; ++v) {
      const auto r = read_at<abi::TaskRecord>(img, l.recs + 256ull * v);
      CHECK(r.exec == base);
      CHECK(r.node == v);
      CHECK(r.claim == 0);  // nothing to claim until a launch arms it
      CHECK(r.arrived == 0);
      const std::uint32_t b = plan.succ_off[v], e = plan.succ_off[v + 1];
      REQUIRE(r.succ_count == e - b);
      auto check_word = [&](std::uint32_t w, std::uint32_t expect) {
        CHECK((w & abi::kSuccNodeMask) == expect);
        const std::uint32_t d = w >> abi::kSuccNodeBits;
        const bool ok = d == plan.indeg[expect] || (d == abi::kSuccIndegMax && plan.indeg[expect] >= abi::kSuccIndegMax);
        CHECK(ok);
      };
      if (r.succ_count == 1) check_word(r.succ_begin, plan.succ[b]);
      if (r.succ_count > 1) {
        CHECK(r.succ_begin == b);
        for (std::uint32_t k = b; k < e; ++k) check_word(read_at<std::uint32_t>(img, l.succ + 4ull * k), plan.succ[k]);
      }
      if (r.succ_count == 0) ++sinks;
    }
    for (std::uint32_t v = 0; v < n; ++v)
      CHECK(read_at<abi::TaskRecord>(img, l.recs + 256ull * v).sinks ==
            (plan.succ_off[v + 1] == plan.succ_off[v] ? sinks : 0u));
    CHECK(x.shape.nsinks == sinks);
    for (std::size_t k = 0; k < plan.roots.size(); ++k) CHECK(read_at<std::uint32_t>(img, l.roots + 4 * k) == plan.roots[k]);
  }
}

TEST_CASE("graph image: an in-degree too large for a successor word is looked up in the table") {
  Graph g;
  const std::uint32_t fan = abi::kSuccIndegMax + 5;
  for (std::uint32_t v = 0; v <= fan; ++v) g.add_node(nop_task());
  for (std::uint32_t v = 0; v < fan; ++v) g.add_edge(v, fan);
  const GraphPlan plan = plan_graph(g);
  std::vector<abi::Payload> payloads;
  for (std::uint32_t v = 0; v <= fan; ++v) payloads.push_back(g.node(v));
  const auto img = graph_image(plan, payloads, 0, nullptr);
  const GraphLayout l = graph_layout(plan, nullptr);
  CHECK(read_at<abi::GraphExec>(img, 0).shape.roles == 0);  // no placement: every launch unplaced
  const auto r = read_at<abi::TaskRecord>(img, l.recs);
  CHECK((r.succ_begin >> abi::kSuccNodeBits) == abi::kSuccIndegMax);
  CHECK(read_at<std::uint32_t>(img, l.indeg + 4ull * fan) == fan);
}
