// An instantiated graph as the device holds it (GraphExec, kernel/wire.h): one block of device memory
// laid out here, written by one copy. Pure logic: no CUDA; unit-tested on the CPU
// (tests/unit/test_graph_image.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "host/graph.hpp"
#include "host/graph_place.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

/// Where each part of an instance's block lies (byte offsets from its start).
struct GraphLayout {
  std::uint64_t recs = 0, indeg = 0, succ = 0, roots = 0, items = 0, batches = 0;
  std::uint64_t role_off = 0, pitems = 0, pwaits = 0, pnodes = 0, bytes = 0;
  std::uint32_t nsinks = 0;
};
/// `place`: the instance's placement (its tables follow the rest), or null (launches run unplaced).
GraphLayout graph_layout(const GraphPlan& plan, const Placement* place);

/// The block's bytes for an instance at device address `base` (256-byte aligned): the header, a record
/// per node (its payload from `payloads`, operator ids as the device runs them), successor lists with
/// in-degrees, roots, room for the ready lists and the placement's tables (`place`, or null).
std::vector<unsigned char> graph_image(const GraphPlan& plan, const std::vector<abi::Payload>& payloads,
                                       std::uint64_t base, const Placement* place);

}  // namespace gpuos::detail
