// Host side of the submission ring and the completion records.
//
// Tickets are dense and increasing. Ticket t uses ring slot t % capacity and completion record
// t % capacity. A ticket can be issued only while fewer than `capacity` tickets are unretired, so a slot
// (and the device-queue entry of the same index) is rewritten only after its previous task completed.
// `retired` is the watermark below which every ticket is known complete; it advances in ticket order
// (reap). Statuses of failed tasks are remembered past their record's reuse, so wait() on an old ticket
// still tells the truth.
//
// Contract: try_reserve/publish/poll/reap/stats may be called from any number of threads. A reserved
// ticket must be published (the device consumes tickets in order and would wait for it forever).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "kernel/wire.h"

namespace gpuos::detail {

class SubmitQueue {
 public:
  /// `ring` and `completions` each hold 2^log2_capacity entries and start zeroed.
  SubmitQueue(abi::Slot* ring, const abi::Completion* completions, uint32_t log2_capacity);

  uint64_t capacity() const noexcept { return 1ull << log2_; }
  uint32_t log2_capacity() const noexcept { return log2_; }

  /// Reserves n consecutive tickets when the ring has room for all of them; never blocks.
  bool try_reserve(uint32_t n, uint64_t& first);

  /// Writes ticket t's slot: each 16-byte chunk (12 payload bytes + stamp) with one 16-byte store.
  /// `internal`: a ticket of the runtime's own (a dependency slot, a join task): not counted per operator
  /// nor as a failure.
  void publish(uint64_t t, const abi::Payload& p, bool internal = false);

  struct Result {
    uint32_t status = abi::kTaskOk;
    uint32_t detail = 0;
  };
  /// True when ticket t (< issued()) has completed; fills its result.
  bool poll(uint64_t t, Result& r) const;

  /// Advances the retired watermark over completed tickets, in order; counts per-op completions and
  /// remembers failures. Returns the watermark. Cheap when another thread is already reaping: then it
  /// returns the watermark as that thread last left it, which may lag what poll() has seen.
  uint64_t reap();
  /// reap(), waiting for a reap in progress instead of skipping it: every ticket below the returned
  /// watermark completed, and every ticket poll() had seen complete (with all before it) is below it.
  /// The counts behind gpuos_get_stats, which must not lag the waits that returned before it.
  uint64_t reap_current();

  /// The ring has no consumer: the resident kernel left the GPU while idle (parked). A publish then
  /// wakes the thread in wait_for_work (the monitor), which launches the kernel again. (That thread also
  /// sees issued() move on its own: the wake only spares the new task its polling interval.)
  void set_parked(bool parked) noexcept { parked_.store(parked, std::memory_order_seq_cst); }
  bool parked() const noexcept { return parked_.load(std::memory_order_seq_cst); }
  /// Returns after a publish while parked, or after `timeout`.
  void wait_for_work(std::chrono::microseconds timeout);

  uint64_t issued() const noexcept { return tail_.load(std::memory_order_acquire); }
  uint64_t retired() const noexcept { return retired_.load(std::memory_order_acquire); }
  uint64_t failed() const noexcept { return failed_count_.load(std::memory_order_relaxed); }
  uint64_t completed_of_op(uint32_t op) const noexcept {
    return per_op_completed_[op].load(std::memory_order_relaxed);
  }
  uint64_t failed_of_op(uint32_t op) const noexcept { return per_op_failed_[op].load(std::memory_order_relaxed); }

  /// Failures remembered for retired tickets (the oldest are forgotten beyond this many).
  static constexpr size_t kFailureMemory = 1u << 16;

 private:
  uint64_t reap_locked();
  bool read_record(uint64_t t, abi::Completion& c) const;

  abi::Slot* ring_;
  const abi::Completion* comp_;
  uint32_t log2_;
  uint64_t mask_;
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> retired_{0};
  alignas(64) std::mutex reap_mutex_;
  std::vector<uint16_t> ops_;  // op of the ticket occupying each slot (for per-op counts; kInternal: none)
  static constexpr uint16_t kInternal = GPUOS_OP_DEPS;
  std::atomic<uint64_t> failed_count_{0};
  alignas(64) std::atomic<bool> parked_{false};
  std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  bool woken_ = false;  // under wake_mutex_
  std::atomic<uint64_t> per_op_completed_[GPUOS_MAX_OPS] = {};
  std::atomic<uint64_t> per_op_failed_[GPUOS_MAX_OPS] = {};
  mutable std::mutex failures_mutex_;
  std::map<uint64_t, Result> failures_;  // retired tickets that failed
};

}  // namespace gpuos::detail
