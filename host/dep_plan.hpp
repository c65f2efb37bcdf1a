// Dependencies of a submitted task, planned as tickets: the task's dependency slot (GPUOS_OP_DEPS, the
// tickets it waits for) and the task, preceded by join tasks when it waits for more than kMaxDeps
// tickets (a nop that waits for up to kMaxDeps of them; the task then waits for the joins). Pure logic:
// no CUDA; unit-tested on the CPU (tests/unit/test_dep_plan.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "kernel/wire.h"

namespace gpuos::detail {

/// A ticket a task waits for. order_only: it only orders the task (a lane's previous task, a graph
/// instance's previous launch): its failure does not fail the task.
struct Dep {
  std::uint64_t ticket = 0;
  bool order_only = false;
};

/// Tickets a task waiting for `n` tickets takes: its dependency slot and itself, plus two (a dependency
/// slot and a nop) per join task, of which there is a tree when n > kMaxDeps.
std::uint32_t dep_tickets(std::size_t n);

/// The payloads of tickets [first, first + dep_tickets(planned)): the joins, then the task's dependency
/// slot, then `task` (which gets kHintDeps). `live` (at most `planned` of them; the rest of the planned
/// dependencies completed before the plan and were dropped) are each earlier than `first` and less than a
/// ring's capacity before the task's ticket; `failed_cause` is 0 or the root cause (ticket + 1) of a
/// dependency already known to have failed. Joins left with nothing to wait for stay (their tickets are
/// reserved): they complete at once.
std::vector<abi::Payload> plan_dependent(std::uint64_t first, std::size_t planned, const abi::Payload& task,
                                         const std::vector<Dep>& live, std::uint64_t failed_cause);

/// The root cause a dependency's failure passes on: ticket + 1 of the task that failed itself, from the
/// failed ticket `t` and its completion record's status and detail.
std::uint64_t root_cause(std::uint64_t t, std::uint32_t status, std::uint32_t detail);

}  // namespace gpuos::detail
