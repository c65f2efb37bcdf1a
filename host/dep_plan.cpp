#include "host/dep_plan.hpp"

#include <algorithm>
#include <cstring>

namespace gpuos::detail {
namespace {

/// Join tasks per level of the tree over n dependencies: level 1 groups the dependencies by kMaxDeps,
/// each next level groups the joins below it, until kMaxDeps or fewer are left for the task.
std::vector<std::size_t> join_levels(std::size_t n) {
  std::vector<std::size_t> levels;
  while (n > abi::kMaxDeps) {
    n = (n + abi::kMaxDeps - 1) / abi::kMaxDeps;
    levels.push_back(n);
  }
  return levels;
}

abi::Payload deps_slot(std::uint64_t waiter, const std::vector<Dep>& deps, std::uint64_t failed_cause) {
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = GPUOS_OP_DEPS;
  p.arg_bytes = sizeof(abi::DepsArgs);
  p.tiles = 1;
  abi::DepsArgs a{};
  a.count = static_cast<std::uint32_t>(deps.size());
  a.failed_cause = failed_cause;
  for (std::size_t j = 0; j < deps.size(); ++j)
    a.back[j] = static_cast<std::uint32_t>(waiter - deps[j].ticket) | (deps[j].order_only ? abi::kDepOrderOnly : 0u);
  std::memcpy(p.args, &a, sizeof(a));
  return p;
}

abi::Payload join_task() {
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = GPUOS_OP_NOP;
  p.tiles = 1;
  p.hints = abi::kHintDeps;
  return p;
}

}  // namespace

std::uint32_t dep_tickets(std::size_t n) {
  std::size_t joins = 0;
  for (std::size_t l : join_levels(n)) joins += l;
  return static_cast<std::uint32_t>(2 * joins + 2);
}

std::vector<abi::Payload> plan_dependent(std::uint64_t first, std::size_t planned, const abi::Payload& task,
                                         const std::vector<Dep>& live, std::uint64_t failed_cause) {
  std::vector<abi::Payload> out;
  out.reserve(dep_tickets(planned));
  // What the next level waits for: the live dependencies, then each level's joins (which only pass on
  // a failure of what they wait for that is not order-only).
  std::vector<Dep> below = live;
  std::uint64_t t = first;
  for (std::size_t count : join_levels(planned)) {
    std::vector<Dep> joins;
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t lo = std::min(below.size(), k * abi::kMaxDeps);
      const std::size_t hi = std::min(below.size(), lo + abi::kMaxDeps);
      const std::vector<Dep> group(below.begin() + static_cast<std::ptrdiff_t>(lo),
                                   below.begin() + static_cast<std::ptrdiff_t>(hi));
      out.push_back(deps_slot(t + 1, group, 0));
      out.push_back(join_task());
      joins.push_back(Dep{t + 1, false});
      t += 2;
    }
    below = std::move(joins);
  }
  out.push_back(deps_slot(t + 1, below, failed_cause));
  abi::Payload p = task;
  p.hints = static_cast<std::uint8_t>(p.hints | abi::kHintDeps);
  out.push_back(p);
  return out;
}

std::uint64_t root_cause(std::uint64_t t, std::uint32_t status, std::uint32_t detail) {
  if (abi::status_code(status) != abi::kTaskDepFailed) return t + 1;
  // detail: the low 32 bits of the root, which is at or before t.
  std::uint64_t root = (t & ~0xffffffffull) | detail;
  if (root > t) root -= 1ull << 32;
  return root + 1;
}

}  // namespace gpuos::detail
