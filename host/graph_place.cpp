#include "host/graph_place.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "common/error.hpp"

namespace gpuos::detail {
namespace {

constexpr std::uint32_t kNoRole = ~0u;
/// The model's costs: a tile, and a dependency between roles. A role runs its items one after another,
/// while the signal between roles (a release, an atomic and the waiter's poll, ~0.7 us on an H100 against
/// ~1.3 us for a tiny tile's item) overlaps other roles' work: weighed as a quarter of a tile, mostly a
/// tie-breaker. Measured on an H100, the random 10,000-node DAG of bench_graph: 1.52 ms at a quarter,
/// 1.57 at a half, 2.23 when a dependency cost a whole tile (roles queued behind each other).
constexpr std::uint64_t kTileCost = 4;
constexpr std::uint64_t kCrossRole = 1;
/// Roles of predecessors tried for a node of one tile (the others: the role free first).
constexpr std::size_t kMaxCandidates = 16;

struct Item {
  std::uint32_t node, first, count;
  bool claim;
};

}  // namespace

Placement place_graph(const GraphPlan& plan, const std::vector<std::uint32_t>& tiles, std::uint32_t max_roles) {
  const std::uint32_t n = static_cast<std::uint32_t>(plan.indeg.size());
  if (tiles.size() != n || plan.order.size() != n) fail(GPUOS_ERR_INTERNAL, "graph placement: tiles do not match the plan");
  if (max_roles == 0) fail(GPUOS_ERR_INTERNAL, "graph placement: no role");
  const std::uint32_t R = max_roles;

  // Predecessors (CSR), from the successor lists.
  std::vector<std::uint32_t> pred_off(n + 1, 0), pred(plan.succ.size());
  for (std::uint32_t s : plan.succ) ++pred_off[s + 1];
  for (std::uint32_t v = 0; v < n; ++v) pred_off[v + 1] += pred_off[v];
  {
    std::vector<std::uint32_t> at(pred_off.begin(), pred_off.end() - 1);
    for (std::uint32_t v = 0; v < n; ++v)
      for (std::uint32_t k = plan.succ_off[v]; k < plan.succ_off[v + 1]; ++k) pred[at[plan.succ[k]]++] = v;
  }

  std::vector<std::uint64_t> free_at(R, 0), fin(n, 0);
  std::vector<std::uint32_t> home(n, kNoRole);  // the role holding all of a node's tiles, if one does
  std::vector<std::vector<Item>> per_role(R);
  // Roles by the time they are free (lazy: an entry is current while free_at still says so).
  using Entry = std::pair<std::uint64_t, std::uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> idle;
  for (std::uint32_t r = 0; r < R; ++r) idle.push({0, r});
  auto earliest = [&] {
    while (idle.top().first != free_at[idle.top().second]) idle.pop();
    return idle.top().second;
  };
  auto take = [&](std::uint32_t r, std::uint32_t v, std::uint32_t first, std::uint32_t count, std::uint64_t end,
                  bool claim = false) {
    per_role[r].push_back(Item{v, first, count, claim});
    free_at[r] = end;
    idle.push({end, r});
  };

  std::vector<std::uint32_t> cand;
  std::vector<Entry> order;  // a spread node's roles by when it could start there
  for (const std::uint32_t v : plan.order) {
    const std::uint32_t t = tiles[v];
    const std::uint32_t pb = pred_off[v], pe = pred_off[v + 1];
    // When v could start on role r, given where its predecessors ran.
    auto start_on = [&](std::uint32_t r) {
      std::uint64_t s = free_at[r];
      for (std::uint32_t k = pb; k < pe; ++k) {
        const std::uint32_t u = pred[k];
        s = std::max(s, fin[u] + (home[u] == r ? 0 : kCrossRole));
      }
      return s;
    };
    const std::uint32_t chunks = std::min(t, R);
    if (chunks == 1) {
      cand.clear();
      for (std::uint32_t k = pb; k < pe && cand.size() < kMaxCandidates; ++k)
        if (const std::uint32_t h = home[pred[k]]; h != kNoRole && std::find(cand.begin(), cand.end(), h) == cand.end())
          cand.push_back(h);
      std::uint32_t best = earliest();
      std::uint64_t best_start = start_on(best);
      for (const std::uint32_t r : cand)
        if (const std::uint64_t s = start_on(r); s <= best_start) {  // a predecessor's role on a tie
          best = r;
          best_start = s;
        }
      take(best, v, 0, t, best_start + kTileCost * t);
      home[v] = best;
      fin[v] = best_start + kTileCost * t;
      continue;
    }
    if (R > 1 && t >= kClaimFrom * R) {
      // Many more tiles than roles: every role claims them at run time (an item each); in the model, an
      // even share.
      std::uint64_t end = 0;
      for (std::uint32_t r = 0; r < R; ++r) {
        const std::uint64_t s = start_on(r), share = kTileCost * ((t + R - 1) / R);
        take(r, v, 0, 0, s + share, true);
        end = std::max(end, s + share);
      }
      fin[v] = end;
      continue;
    }
    // Spread: chunk i (tiles as even as can be, the larger first) on the i-th of the roles where it can
    // start first, lower roles first among equals: a chain's nodes take the first roles (consecutive roles
    // run on different SMs, as far as SMs go), and nodes that can run at the same time take different ones.
    const std::uint32_t base = t / chunks, extra = t % chunks;
    order.clear();
    for (std::uint32_t r = 0; r < R; ++r) order.push_back({start_on(r), r});
    std::partial_sort(order.begin(), order.begin() + chunks, order.end());
    std::uint32_t first = 0;
    std::uint64_t end = 0;
    for (std::uint32_t i = 0; i < chunks; ++i) {
      const auto [s, r] = order[i];
      const std::uint32_t count = base + (i < extra ? 1u : 0u);
      take(r, v, first, count, s + kTileCost * count);
      end = std::max(end, s + kTileCost * count);
      first += count;
    }
    fin[v] = end;
  }

  Placement out;
  out.roles = 0;
  for (std::uint32_t r = 0; r < R; ++r)
    if (!per_role[r].empty()) out.roles = r + 1;
  out.role_off.assign(out.roles + 1, 0);
  std::vector<char> publish(n, 0);
  for (std::uint32_t r = 0; r < out.roles; ++r) {
    for (const Item& it : per_role[r]) {
      abi::PlacedItem p{};
      p.node = it.node;
      p.first = it.first;
      p.count = it.count;
      p.flags = (plan.succ_off[it.node + 1] == plan.succ_off[it.node] ? abi::kPlacedSink : 0u) |
                (it.claim ? abi::kPlacedClaim : 0u);
      p.wbegin = static_cast<std::uint32_t>(out.waits.size());
      for (std::uint32_t k = pred_off[it.node]; k < pred_off[it.node + 1]; ++k) {
        const std::uint32_t u = pred[k];
        const bool same = home[u] == r;  // placed in topological order: earlier on this role
        if (!same) publish[u] = 1;
        out.waits.push_back(abi::PlacedWait{u | (same ? abi::kPlacedSameRole : 0u), abi::placed_weight(tiles[u])});
      }
      p.wcount = static_cast<std::uint32_t>(out.waits.size()) - p.wbegin;
      bool none = true;
      for (std::uint32_t w = p.wbegin; w < p.wbegin + p.wcount; ++w) none = none && (out.waits[w].node & abi::kPlacedSameRole);
      if (none) p.flags |= abi::kPlacedNoWait;
      out.items.push_back(p);
    }
    out.role_off[r + 1] = static_cast<std::uint32_t>(out.items.size());
  }
  for (abi::PlacedItem& p : out.items)
    if (publish[p.node]) p.flags |= abi::kPlacedPublish;
  return out;
}

}  // namespace gpuos::detail
