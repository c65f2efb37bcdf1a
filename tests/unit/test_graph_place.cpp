// Placement of an instance's tiles on roles (host/graph_place.hpp): every tile placed exactly once, each
// role's items in an order that cannot wait for ever (checked by running the roles in a simulation),
// waits for exactly the predecessors, publish and no-wait flags as the device relies on them.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "host/graph_place.hpp"

using namespace gpuos;
using namespace gpuos::detail;

namespace {

Graph graph_of(const std::vector<std::uint32_t>& tiles, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges) {
  Graph g;
  for (std::uint32_t t : tiles) g.add_node(gpuos_task{GPUOS_OP_NOP, t, nullptr, 0, 0});
  for (auto [a, b] : edges) g.add_edge(a, b);
  return g;
}

/// Checks every property the device relies on; returns the steps a simulation of the roles took (each
/// step, every role whose next item's waits are met runs it).
std::uint32_t check_placement(const GraphPlan& plan, const std::vector<std::uint32_t>& tiles, const Placement& pl,
                              std::uint32_t max_roles) {
  const std::uint32_t n = static_cast<std::uint32_t>(tiles.size());
  REQUIRE(pl.roles >= 1);
  REQUIRE(pl.roles <= max_roles);
  REQUIRE(pl.role_off.size() == pl.roles + 1);
  CHECK(pl.role_off.front() == 0);
  CHECK(pl.role_off.back() == pl.items.size());
  CHECK(pl.role_off[pl.roles] > pl.role_off[pl.roles - 1]);  // the last role has work
  std::vector<std::uint32_t> pred_count(n, 0);
  for (std::uint32_t s : plan.succ) ++pred_count[s];
  // Tiles: each exactly once; the role holding all of a node's tiles, if one does.
  std::vector<std::vector<std::uint8_t>> seen(n);
  for (std::uint32_t v = 0; v < n; ++v) seen[v].assign(tiles[v], 0);
  std::vector<std::uint32_t> role_of_item(pl.items.size()), home(n, ~0u), roles_of(n, 0), claimers(n, 0);
  for (std::uint32_t r = 0; r < pl.roles; ++r)
    for (std::uint32_t i = pl.role_off[r]; i < pl.role_off[r + 1]; ++i) {
      role_of_item[i] = r;
      const abi::PlacedItem& it = pl.items[i];
      REQUIRE(it.node < n);
      if (it.flags & abi::kPlacedClaim) {
        // Claimed at run time, by every role: a node of at least kClaimFrom tiles per role.
        CHECK(tiles[it.node] >= kClaimFrom * max_roles);
        CHECK((it.first == 0 && it.count == 0));
        ++roles_of[it.node];
        home[it.node] = ~0u;
        if (++claimers[it.node] == pl.roles) std::fill(seen[it.node].begin(), seen[it.node].end(), 1);
        continue;
      }
      CHECK((tiles[it.node] < kClaimFrom * max_roles || max_roles == 1));  // one role holds every node whole
      REQUIRE(it.count >= 1);
      REQUIRE(it.first + it.count <= tiles[it.node]);
      for (std::uint32_t t = it.first; t < it.first + it.count; ++t) {
        CHECK(seen[it.node][t] == 0);
        seen[it.node][t] = 1;
      }
      ++roles_of[it.node];
      home[it.node] = it.count == tiles[it.node] ? r : ~0u;
    }
  for (std::uint32_t v = 0; v < n; ++v) CHECK(std::count(seen[v].begin(), seen[v].end(), 1) == tiles[v]);
  // Waits: exactly the predecessors, each once; same-role only where the role completed it itself; a node
  // is published iff some other role waits for it; sinks flagged.
  std::vector<char> waited_elsewhere(n, 0);
  for (std::size_t i = 0; i < pl.items.size(); ++i) {
    const abi::PlacedItem& it = pl.items[i];
    CHECK(it.wcount == pred_count[it.node]);
    bool none = true;
    for (std::uint32_t w = it.wbegin; w < it.wbegin + it.wcount; ++w) {
      const std::uint32_t u = pl.waits[w].node & ~abi::kPlacedSameRole;
      const bool same = pl.waits[w].node & abi::kPlacedSameRole;
      CHECK(std::find(plan.succ.begin() + plan.succ_off[u], plan.succ.begin() + plan.succ_off[u + 1], it.node) !=
            plan.succ.begin() + plan.succ_off[u + 1]);
      CHECK(pl.waits[w].weight == tiles[u] + 1);
      CHECK(same == (home[u] == role_of_item[i]));
      if (!same) waited_elsewhere[u] = 1;
      none = none && same;
    }
    CHECK(((it.flags & abi::kPlacedNoWait) != 0) == none);
    CHECK(((it.flags & abi::kPlacedSink) != 0) == (plan.succ_off[it.node + 1] == plan.succ_off[it.node]));
  }
  for (const abi::PlacedItem& it : pl.items) CHECK(((it.flags & abi::kPlacedPublish) != 0) == (waited_elsewhere[it.node] != 0));
  // Run the roles: a node completes once all its items ran; an item runs once its predecessors completed
  // (and, same-role, ran before it on this role). Every role must get through.
  std::vector<std::uint32_t> next(pl.role_off.begin(), pl.role_off.end() - 1), items_left = roles_of;
  std::uint32_t left = static_cast<std::uint32_t>(pl.items.size()), steps = 0;
  while (left > 0) {
    std::vector<std::uint32_t> ran;
    for (std::uint32_t r = 0; r < pl.roles; ++r) {
      if (next[r] == pl.role_off[r + 1]) continue;
      const abi::PlacedItem& it = pl.items[next[r]];
      bool ok = true;
      for (std::uint32_t w = it.wbegin; w < it.wbegin + it.wcount; ++w) ok = ok && items_left[pl.waits[w].node & ~abi::kPlacedSameRole] == 0;
      if (ok) ran.push_back(r);
    }
    REQUIRE_MESSAGE(!ran.empty(), "the roles wait for each other for ever");
    for (std::uint32_t r : ran) {
      --items_left[pl.items[next[r]].node];
      ++next[r];
      --left;
    }
    ++steps;
  }
  return steps;
}

}  // namespace

TEST_CASE("placement: a chain of one-tile nodes runs on one role without a wait") {
  std::vector<std::uint32_t> tiles(256, 1);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t v = 0; v + 1 < 256; ++v) edges.push_back({v, v + 1});
  const GraphPlan plan = plan_graph(graph_of(tiles, edges));
  const Placement pl = place_graph(plan, tiles, 527);
  CHECK(pl.roles == 1);
  CHECK(check_placement(plan, tiles, pl, 527) == 256);
  for (const abi::PlacedItem& it : pl.items) {
    CHECK((it.flags & abi::kPlacedNoWait) != 0);
    CHECK(((it.flags & abi::kPlacedPublish) != 0) == false);
  }
}

TEST_CASE("placement: a fan 1 -> 128 -> 1 spreads the middle over the roles") {
  std::vector<std::uint32_t> tiles(130, 1);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t v = 1; v <= 128; ++v) edges.push_back({0, v}), edges.push_back({v, 129});
  const GraphPlan plan = plan_graph(graph_of(tiles, edges));
  const Placement pl = place_graph(plan, tiles, 527);
  // The root's role takes the first of the middle, every other one a role of its own (a dependency
  // between roles costs less than waiting for a tile).
  CHECK(pl.roles == 128);
  CHECK(check_placement(plan, tiles, pl, 527) == 3);
}

TEST_CASE("placement: a chain of many-tile nodes spreads each over the roles, evenly, or claims on every role") {
  // The shape of a decode step: every node larger or smaller than the grid (the LM head's a multiple of
  // the roles, so that the one-tile node after it finds every role free at once and takes the first).
  const std::vector<std::uint32_t> tiles{8, 192, 64, 128, 1024, 128, 16 * 527, 1, 527, 528, kClaimFrom * 527};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t v = 0; v + 1 < tiles.size(); ++v) edges.push_back({v, v + 1});
  const GraphPlan plan = plan_graph(graph_of(tiles, edges));
  const std::uint32_t R = 527;
  const Placement pl = place_graph(plan, tiles, R);
  check_placement(plan, tiles, pl, R);
  for (std::uint32_t v = 0; v < tiles.size(); ++v) {
    std::vector<std::uint32_t> counts, roles;
    for (std::uint32_t r = 0; r < pl.roles; ++r)
      for (std::uint32_t i = pl.role_off[r]; i < pl.role_off[r + 1]; ++i)
        if (pl.items[i].node == v) counts.push_back(pl.items[i].count), roles.push_back(r);
    if (tiles[v] >= kClaimFrom * R) {
      // Claimed at run time: an item on every role.
      CHECK(counts.size() == R);
      CHECK(std::count(counts.begin(), counts.end(), 0u) == R);
      continue;
    }
    CHECK(counts.size() == std::min(tiles[v], R));
    CHECK(*std::max_element(counts.begin(), counts.end()) - *std::min_element(counts.begin(), counts.end()) <= 1);
    // The first roles (the device puts consecutive roles on different SMs).
    for (std::size_t i = 0; i < roles.size(); ++i) CHECK(roles[i] == i);
  }
}

TEST_CASE("placement: a node is claimed from kClaimFrom tiles per role") {
  for (const std::uint32_t t : {kClaimFrom * 527 - 1, kClaimFrom * 527}) {
    const std::vector<std::uint32_t> tiles{t};
    const GraphPlan plan = plan_graph(graph_of(tiles, {}));
    const Placement pl = place_graph(plan, tiles, 527);
    check_placement(plan, tiles, pl, 527);
    REQUIRE(pl.items.size() == 527);
    for (const abi::PlacedItem& it : pl.items) CHECK(((it.flags & abi::kPlacedClaim) != 0) == (t >= kClaimFrom * 527));
  }
}

TEST_CASE("placement: many-tile nodes that can run at once take the roles free first") {
  // A node of 128 tiles, 4 of 256 after it, and 4 of 128, the i-th after the i-th of 256 (a projection
  // cut in chunks over its inputs, after the chunks that write them), on 264 roles: 1,024 tiles of the
  // second kind and 512 of the third, spread over every role rather than piled on the first ones.
  std::vector<std::uint32_t> tiles{128, 256, 256, 256, 256, 128, 128, 128, 128};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t i = 1; i <= 4; ++i) edges.push_back({0, i}), edges.push_back({i, i + 4});
  const GraphPlan plan = plan_graph(graph_of(tiles, edges));
  const Placement pl = place_graph(plan, tiles, 264);
  check_placement(plan, tiles, pl, 264);
  CHECK(pl.roles == 264);
  std::vector<std::uint32_t> second(pl.roles, 0), third(pl.roles, 0);
  for (std::uint32_t r = 0; r < pl.roles; ++r)
    for (std::uint32_t i = pl.role_off[r]; i < pl.role_off[r + 1]; ++i) {
      const abi::PlacedItem& it = pl.items[i];
      if (it.node >= 1 && it.node <= 4) second[r] += it.count;
      if (it.node >= 5) third[r] += it.count;
    }
  CHECK(*std::max_element(second.begin(), second.end()) <= 4);  // 1,024 / 264 = 3.9
  CHECK(*std::max_element(third.begin(), third.end()) <= 2);    // 512 / 264 = 1.9
}

TEST_CASE("placement: random DAGs with random tiles on 1 to 527 roles can always complete") {
  std::mt19937_64 rng(5);
  for (std::uint32_t n : {1u, 2u, 10u, 200u, 3000u}) {
    for (std::uint32_t R : {1u, 2u, 3u, 64u, 527u}) {
      std::vector<std::uint32_t> tiles(n);
      for (auto& t : tiles) t = rng() % 4 == 0 ? 1 + rng() % (rng() % 8 == 0 ? 3000 : 700) : 1;
      std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
      for (std::uint32_t v = 1; v < n; ++v)
        for (std::uint32_t k = rng() % 5; k > 0; --k) {
          const std::uint32_t back = 1 + rng() % std::min<std::uint32_t>(v, 64);
          edges.push_back({v - back, v});
        }
      const GraphPlan plan = plan_graph(graph_of(tiles, edges));
      check_placement(plan, tiles, place_graph(plan, tiles, R), R);
    }
  }
}

TEST_CASE("placement: a DAG of one-tile nodes uses about as many roles as it is wide and runs in about its depth") {
  // 32 independent chains of 100: 32 roles, no wait, 100 steps.
  std::vector<std::uint32_t> tiles(3200, 1);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t c = 0; c < 32; ++c)
    for (std::uint32_t k = 0; k + 1 < 100; ++k) edges.push_back({c * 100 + k, c * 100 + k + 1});
  const GraphPlan plan = plan_graph(graph_of(tiles, edges));
  const Placement pl = place_graph(plan, tiles, 527);
  CHECK(pl.roles == 32);
  CHECK(check_placement(plan, tiles, pl, 527) == 100);
  CHECK(pl.items.size() == 3200);
}
