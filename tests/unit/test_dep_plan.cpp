// Dependencies planned as tickets (host/dep_plan.hpp): the dependency slot's back offsets and order-only
// bits, join trees past kMaxDeps (every dependency reached through exactly one join path), root causes.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <set>

#include "host/dep_plan.hpp"

using namespace gpuos;
using namespace gpuos::detail;

namespace {

abi::DepsArgs deps_of(const abi::Payload& p) {
  REQUIRE(p.op == GPUOS_OP_DEPS);
  REQUIRE(p.arg_bytes == sizeof(abi::DepsArgs));
  abi::DepsArgs a;
  std::memcpy(&a, p.args, sizeof(a));
  return a;
}

abi::Payload task(std::uint32_t op) {
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = static_cast<std::uint16_t>(op);
  p.tiles = 3;
  return p;
}

/// What the plan makes the final task wait for, through joins: each dependency ticket with whether
/// every path to it is order-only.
std::map<std::uint64_t, bool> reached(std::uint64_t first, const std::vector<abi::Payload>& plan) {
  std::map<std::uint64_t, std::map<std::uint64_t, bool>> waits;  // waiter ticket -> what it waits for
  for (std::size_t i = 0; i + 1 < plan.size(); i += 2) {
    const std::uint64_t waiter = first + i + 1;
    waits[waiter];  // a join, even one left with nothing to wait for
    const abi::DepsArgs a = deps_of(plan[i]);
    CHECK((plan[i + 1].hints & abi::kHintDeps) != 0);
    for (std::uint32_t j = 0; j < a.count; ++j)
      waits[waiter][waiter - (a.back[j] & ~abi::kDepOrderOnly)] = (a.back[j] & abi::kDepOrderOnly) != 0;
    for (std::uint32_t j = a.count; j < abi::kMaxDeps; ++j) CHECK(a.back[j] == 0);
  }
  std::map<std::uint64_t, bool> out;
  std::vector<std::pair<std::uint64_t, bool>> stack{{first + plan.size() - 1, false}};
  while (!stack.empty()) {
    auto [t, weak] = stack.back();
    stack.pop_back();
    for (auto [d, w] : waits[t]) {
      if (waits.contains(d)) {
        CHECK_FALSE(w);  // joins are waited for as real dependencies
        stack.push_back({d, weak || w});
      } else {
        CHECK_FALSE(out.contains(d));  // reached once
        out[d] = weak || w;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("dep plan: up to kMaxDeps tickets take the dependency slot and the task") {
  CHECK(dep_tickets(0) == 2);
  CHECK(dep_tickets(abi::kMaxDeps) == 2);
  const std::vector<Dep> deps{{90, false}, {95, true}, {99, false}};
  const auto plan = plan_dependent(100, deps.size(), task(GPUOS_OP_ADD), deps, 42);
  REQUIRE(plan.size() == 2);
  const abi::DepsArgs a = deps_of(plan[0]);
  CHECK(a.count == 3);
  CHECK(a.failed_cause == 42);
  CHECK(a.back[0] == 11);
  CHECK(a.back[1] == (6 | abi::kDepOrderOnly));
  CHECK(a.back[2] == 2);
  CHECK(plan[1].op == GPUOS_OP_ADD);
  CHECK(plan[1].tiles == 3);
  CHECK((plan[1].hints & abi::kHintDeps) != 0);
}

TEST_CASE("dep plan: past kMaxDeps a tree of joins reaches every dependency once, order-only bits kept") {
  for (std::size_t n : {17ul, 32ul, 33ul, 256ul, 257ul, 5000ul}) {
    const std::uint64_t first = 100000;
    std::vector<Dep> deps;
    for (std::size_t i = 0; i < n; ++i) deps.push_back({first - 1 - 3 * i, i % 5 == 0});
    const auto plan = plan_dependent(first, n, task(GPUOS_OP_NOP), deps, 0);
    CHECK(plan.size() == dep_tickets(n));
    CHECK(plan.size() < 2 * n / 15 + 8);
    const auto r = reached(first, plan);
    REQUIRE(r.size() == n);
    for (const Dep& d : deps) CHECK(r.at(d.ticket) == d.order_only);
    for (std::size_t i = 1; i + 1 < plan.size(); i += 2) CHECK(plan[i].op == GPUOS_OP_NOP);  // the joins
  }
}

TEST_CASE("dep plan: dependencies dropped after the reservation leave joins waiting for less") {
  const std::uint64_t first = 1000;
  std::vector<Dep> planned;
  for (std::size_t i = 0; i < 40; ++i) planned.push_back({first - 1 - i, false});
  const std::vector<Dep> live(planned.begin(), planned.begin() + 5);  // the other 35 completed
  const auto plan = plan_dependent(first, planned.size(), task(GPUOS_OP_NOP), live, 0);
  CHECK(plan.size() == dep_tickets(planned.size()));
  CHECK(reached(first, plan).size() == 5);
}

TEST_CASE("dep plan: the root cause of a failed dependency") {
  CHECK(root_cause(77, abi::kTaskBadOp, 300) == 78);
  CHECK(root_cause(77, abi::kTaskNodeFailed | (abi::kTaskBadArgs << 8), 5) == 78);
  CHECK(root_cause(77, abi::kTaskDepFailed, 70) == 71);
  // The root's low 32 bits, before the failed ticket across a 2^32 boundary.
  const std::uint64_t t = (5ull << 32) + 3;
  CHECK(root_cause(t, abi::kTaskDepFailed, 0xfffffff0u) == (4ull << 32) + 0xfffffff0u + 1);
}
