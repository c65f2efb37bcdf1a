// Placement of an instance's tiles on the resident kernel's worker blocks, computed once at
// instantiation (docs/design.md, "Placed launches"). Pure logic: no CUDA; unit-tested on the CPU
// (tests/unit/test_graph_place.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "host/graph.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

/// A node of at least this many tiles per role is claimed at run time (kPlacedClaim), each block taking
/// batches while tiles are left: blocks' speeds differ (the 1B Llama LM head's fixed shares, ~30 tiles of
/// ~4 us a block, end 12 us apart on an H200), which claims even out. Below it the node is cut in fixed
/// shares, which cost nothing to start: claiming takes a round trip a claim and starts a block's stream
/// ~5 us later through the operator's claiming adapter, so the 1B step with that LM head claimed took
/// 1.0139-1.0179 ms against 1.0067-1.0073 fixed (H200, one call, docs/bench/h200-2026-11-28-s44); on an
/// H100 a 1,024-tile node over 527 roles took 65-78 us claimed, 50-58 fixed.
inline constexpr std::uint32_t kClaimFrom = 32;

/// Each role's items in order (role r: items[role_off[r] .. role_off[r+1])), each item's waits
/// (waits[item.wbegin .. + item.wcount]). `roles` is the highest role used + 1.
struct Placement {
  std::uint32_t roles = 0;
  std::vector<std::uint32_t> role_off;
  std::vector<abi::PlacedItem> items;
  std::vector<abi::PlacedWait> waits;
};

/// Places the nodes of `plan` (node v has tiles[v] tiles) on at most `max_roles` roles by list scheduling
/// in the plan's topological order, every tile costing four units and a dependency between roles one more:
/// a node of one tile goes to the role where it can start first (a predecessor's role on a tie: no wait
/// there); a node of several tiles is split into min(tiles, roles) even chunks on the roles where it can
/// start first, the lower roles among equals (the device gives consecutive roles to blocks on different
/// SMs: a chain's nodes take the first roles; nodes that can run at once take different ones), and
/// a node of at least kClaimFrom tiles per role gets a claiming item (kPlacedClaim) on every role instead.
/// Every role's items follow the topological order, so a launch in which every role runs cannot wait for
/// ever. An item waits for each predecessor some other role completes (or whose tiles are spread).
Placement place_graph(const GraphPlan& plan, const std::vector<std::uint32_t>& tiles, std::uint32_t max_roles);

}  // namespace gpuos::detail
