// Tasks in and out: validation of a submission against the operators the runtime accepts, admission
// (back-pressure on a full ring, refusal once closing or faulted), waits and drains.
//
// Every task, the user's, a heap request or a control task, enters through enqueue(): a reserved
// ticket is always published (the device consumes tickets in order and would wait for it for ever), so
// everything that can fail is checked before the reservation.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/wait.hpp"
#include "gpuos/gpuos.h"
#include "host/op_registry.hpp"
#include "host/run_state.hpp"
#include "host/submit_queue.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

class Submitter {
 public:
  Submitter(SubmitQueue& q, RunState& run, const AcceptTable& accept) : q_(q), run_(run), accept_(accept) {}

  /// Validates n user tasks (operator accepted, argument size, tiles) and enqueues them with consecutive
  /// tickets from `first`. blocking=false: returns false, submitting nothing, when the ring is full.
  bool submit(const gpuos_task* tasks, std::size_t n, bool blocking, std::uint64_t& first);
  /// Enqueues validated payloads (the runtime's own requests). Blocks while the ring is full.
  std::uint64_t enqueue_one(const abi::Payload& p);

  /// GPUOS_OK, GPUOS_ERR_TIMEOUT, GPUOS_ERR_TASK_FAILED (why in `why`) or GPUOS_ERR_DEVICE_FAULT.
  gpuos_status wait(std::uint64_t ticket, const common::Deadline& deadline, std::string& why);
  /// Waits for every ticket issued before the call.
  gpuos_status drain(const common::Deadline& deadline, std::string& why);
  /// Every ticket below `end` completed; throws on a fault, GPUOS_ERR_TIMEOUT (saying `what`) past the deadline.
  void wait_completed(std::uint64_t end, const common::Deadline& deadline, const std::string& what);

  /// Refuses submissions from now on and waits until those in flight have published their tickets.
  void close();

 private:
  bool enqueue(const abi::Payload* payloads, std::uint32_t n, bool blocking, std::uint64_t& first);

  SubmitQueue& q_;
  RunState& run_;
  const AcceptTable& accept_;
  std::atomic<int> active_{0};  // submitters between the closing check and their last publish
};

}  // namespace gpuos::detail
