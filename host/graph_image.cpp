#include "host/graph_image.hpp"

#include <cstring>

#include "common/error.hpp"

namespace gpuos::detail {
namespace {

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

GraphLayout graph_layout(const GraphPlan& plan, const Placement* place) {
  const std::uint64_t n = plan.indeg.size();
  GraphLayout l;
  l.recs = sizeof(abi::GraphExec);
  l.indeg = l.recs + n * sizeof(abi::TaskRecord);
  l.succ = l.indeg + n * sizeof(std::uint32_t);
  l.roots = l.succ + plan.succ.size() * sizeof(std::uint32_t);
  l.items = align_up(l.roots + plan.roots.size() * sizeof(std::uint32_t), 8);
  l.batches = align_up(l.items + n * sizeof(std::uint64_t), alignof(abi::ReadyBatch));
  // A ready batch holds two records or more, and a node is made ready once per launch.
  l.role_off = l.batches + (n / 2 + 1) * sizeof(abi::ReadyBatch);
  // Items are copied 16 bytes at a time (cp.async): each on its own 32-byte boundary.
  l.pitems = align_up(l.role_off + (place ? (place->roles + 1) * sizeof(std::uint32_t) : 0), sizeof(abi::PlacedItem));
  l.pwaits = l.pitems + (place ? place->items.size() * sizeof(abi::PlacedItem) : 0);
  l.pnodes = align_up(l.pwaits + (place ? place->waits.size() * sizeof(abi::PlacedWait) : 0), 8);
  l.bytes = l.pnodes + (place ? n * sizeof(abi::PlacedNode) : 0);
  for (std::uint64_t v = 0; v < n; ++v) l.nsinks += plan.succ_off[v + 1] == plan.succ_off[v];
  return l;
}

std::vector<unsigned char> graph_image(const GraphPlan& plan, const std::vector<abi::Payload>& payloads,
                                       std::uint64_t base, const Placement* place) {
  const std::uint32_t n = static_cast<std::uint32_t>(plan.indeg.size());
  if (payloads.size() != n) fail(GPUOS_ERR_INTERNAL, "graph image: payloads do not match the plan");
  if (base % alignof(abi::TaskRecord)) fail(GPUOS_ERR_INTERNAL, "graph image: the block is not 256-byte aligned");
  static_assert(abi::kSuccNodeBits >= 20, "node ids (< kMaxGraphNodes) fit a successor word");
  const GraphLayout l = graph_layout(plan, place);
  std::vector<unsigned char> img(l.bytes, 0);
  auto at = [&](std::uint64_t off) { return img.data() + off; };

  abi::GraphExec x{};
  x.shape.nodes = n;
  x.shape.nroots = static_cast<std::uint32_t>(plan.roots.size());
  x.shape.nsinks = l.nsinks;
  x.shape.recs = base + l.recs;
  x.shape.indeg = base + l.indeg;
  x.shape.succ = base + l.succ;
  x.shape.roots = base + l.roots;
  x.shape.items = base + l.items;
  x.shape.batches = base + l.batches;
  if (place && place->roles > 0) {
    x.shape.roles = place->roles;
    x.shape.role_off = base + l.role_off;
    x.shape.pitems = base + l.pitems;
    x.shape.pwaits = base + l.pwaits;
    x.shape.pnodes = base + l.pnodes;
    std::memcpy(at(l.role_off), place->role_off.data(), place->role_off.size() * sizeof(std::uint32_t));
    std::memcpy(at(l.pitems), place->items.data(), place->items.size() * sizeof(abi::PlacedItem));
    std::memcpy(at(l.pwaits), place->waits.data(), place->waits.size() * sizeof(abi::PlacedWait));
  }
  std::memcpy(at(0), &x, sizeof(x));

  for (std::uint32_t v = 0; v < n; ++v) {
    abi::TaskRecord r{};
    r.payload = payloads[v];
    r.exec = base;
    r.node = v;
    const std::uint32_t b = plan.succ_off[v], e = plan.succ_off[v + 1];
    r.succ_count = e - b;
    // One successor is named in the record itself (no read of the list on a chain's path).
    r.succ_begin = r.succ_count == 1 ? abi::succ_word(plan.succ[b], plan.indeg[plan.succ[b]]) : b;
    r.sinks = r.succ_count == 0 ? l.nsinks : 0;
    std::memcpy(at(l.recs + std::uint64_t{v} * sizeof(abi::TaskRecord)), &r, sizeof(r));
  }
  std::memcpy(at(l.indeg), plan.indeg.data(), plan.indeg.size() * sizeof(std::uint32_t));
  for (std::size_t k = 0; k < plan.succ.size(); ++k) {
    const std::uint32_t w = abi::succ_word(plan.succ[k], plan.indeg[plan.succ[k]]);
    std::memcpy(at(l.succ + k * sizeof(std::uint32_t)), &w, sizeof(w));
  }
  std::memcpy(at(l.roots), plan.roots.data(), plan.roots.size() * sizeof(std::uint32_t));
  return img;
}

}  // namespace gpuos::detail
