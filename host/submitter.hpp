// Tasks in and out: validation of a submission against the operators the runtime accepts, admission
// (back-pressure on a full ring, refusal once closing or faulted), waits and drains.
//
// Every task, the user's, a heap request or a control task, enters through enqueue(): a reserved
// ticket is always published (the device consumes tickets in order and would wait for it for ever), so
// everything that can fail is checked before the reservation.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/wait.hpp"
#include "gpuos/gpuos.h"
#include "host/dep_plan.hpp"
#include "host/op_registry.hpp"
#include "host/run_state.hpp"
#include "host/submit_queue.hpp"
#include "host/watchdog.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

/// Tasks submitted to a lane run one after the other: each after the lane's previous one completed,
/// whether that one succeeded or not (a lane orders; a failure passes on only through a dependency).
struct Lane {
  std::mutex mu;
  std::optional<std::uint64_t> last;  ///< the lane's latest task
};

class Submitter {
 public:
  /// Tasks' own deadlines (gpuos_task.deadline_ms) go into `deadlines` before they are published.
  Submitter(SubmitQueue& q, RunState& run, const AcceptTable& accept, Deadlines& deadlines);

  /// Validates n user tasks (operator accepted, argument size, tiles) and enqueues them with consecutive
  /// tickets from `first`. blocking=false: returns false, submitting nothing, when the ring is full.
  bool submit(const gpuos_task* tasks, std::size_t n, bool blocking, std::uint64_t& first);
  /// Validates a user task and enqueues it to run after every ticket of after[0..n) and, with a lane,
  /// after the lane's previous task. Returns its ticket. Blocks while the ring is full.
  std::uint64_t submit_after(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane);
  /// Throws Failure(GPUOS_ERR_INVALID_ARG) unless `task` could be submitted (operator, arguments, tiles).
  void validate(const gpuos_task& task) const { (void)payload_of(task, ""); }
  /// True once tickets first..first+n-1 have all completed, failed or not, or the runtime has faulted
  /// (then they never will). Never blocks.
  bool settled(std::uint64_t first, std::size_t n) const;
  /// Enqueues validated payloads (the runtime's own requests). Blocks while the ring is full.
  std::uint64_t enqueue_one(const abi::Payload& p);
  /// Enqueues validated payload `p` to run after `deps` (each issued before; checked by the caller) and
  /// the lane's previous task: its dependency slot, join tasks past kMaxDeps, then `p`, whose ticket it
  /// returns. Dependencies already retired are dropped here (a failed one that is not order-only fails
  /// `p`); with none left, `p` goes alone. Blocks while the ring is full.
  std::uint64_t enqueue_after(const abi::Payload& p, const std::vector<Dep>& deps, Lane* lane,
                              std::uint32_t deadline_ms = 0);
  /// Throws Failure(GPUOS_ERR_INVALID_ARG) unless every ticket of after[0..n) was issued.
  void check_issued(const std::uint64_t* after, std::size_t n) const;

  /// Enqueues an alias switch (a control task: `logical` runs jump-table slot `slot` from its ticket on)
  /// and records the slot for slot_of(), in ticket order with every call made under ordered().
  std::uint64_t enqueue_alias(std::uint32_t logical, std::uint32_t slot);
  /// The slot a task naming operator `id` runs when enqueued now: the front end resolves ordinary tasks
  /// itself, graph launches carry their nodes' slots (read under ordered()).
  std::uint32_t slot_of(std::uint32_t id) const { return slots_[id].load(std::memory_order_acquire); }
  /// Runs f under the lock that orders alias switches with the enqueues made under it.
  template <class F>
  auto ordered(F&& f) {
    std::lock_guard<std::mutex> lock(order_mu_);
    return f();
  }

  /// GPUOS_OK, GPUOS_ERR_TIMEOUT, GPUOS_ERR_TASK_FAILED (why in `why`) or GPUOS_ERR_DEVICE_FAULT.
  gpuos_status wait(std::uint64_t ticket, const common::Deadline& deadline, std::string& why);
  /// Waits for every ticket issued before the call.
  gpuos_status drain(const common::Deadline& deadline, std::string& why);
  /// Every ticket below `end` completed; throws on a fault, GPUOS_ERR_TIMEOUT (saying `what`) past the deadline.
  void wait_completed(std::uint64_t end, const common::Deadline& deadline, const std::string& what);

  /// Refuses submissions from now on and waits until those in flight have published their tickets.
  void close();

 private:
  /// Publishes payloads[i] at tickets first + i; `internal`: the runtime's own (dependency slots, joins),
  /// not counted per operator or as failures. reserve(): the tickets, once there is room (blocking).
  /// `deadlines` (may be null): each payload's own deadline (0: none), recorded before it is published.
  bool enqueue(const abi::Payload* payloads, std::uint32_t n, bool blocking, std::uint64_t& first,
               const std::uint32_t* deadlines = nullptr);
  bool reserve(std::uint32_t n, bool blocking, std::uint64_t& first);
  void publish(std::uint64_t first, const std::vector<abi::Payload>& payloads, std::size_t task_index);
  /// The payload of a validated user task.
  abi::Payload payload_of(const gpuos_task& t, const std::string& where) const;

  SubmitQueue& q_;
  RunState& run_;
  const AcceptTable& accept_;
  Deadlines& deadlines_;
  std::atomic<int> active_{0};  // submitters between the closing check and their last publish
  std::mutex order_mu_;
  std::atomic<std::uint16_t> slots_[GPUOS_MAX_OPS];
};

}  // namespace gpuos::detail
