// The watchdog: what every block of the resident kernel is running, and a deadline on each call of an
// operator (gpuos_options.deadline_ms, gpuos_task.deadline_ms, gpuos_set_op_deadline).
//
// The kernel writes a record per block before and after each call of an operator (abi::BlockWork, two
// plain stores); a thread of the runtime copies the table every kPeriod while tasks are in flight (a
// copy on a stream of its own, which does not wait for the kernel) and judges a call by how long it has
// seen the same record. A call past its deadline makes the runtime give up: the fault names the task,
// operator, tile, block and SM, every pending task fails with GPUOS_ERR_HUNG, and the kernel is ended
// with a fault (ResidentKernel::abort), so that nothing in the process (a framework's device syncs and
// frees, this runtime's own stops) waits for the hung operator for ever.
//
// Deadlines: a task's own, else its operator's, else the runtime's (0 = none). Calls are seen at
// kPeriod, so one is reported 0 to kPeriod (plus scheduling) past its deadline, never before.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <cuda.h>

#include "gpuos/limits.h"
#include "host/resident.hpp"
#include "host/run_state.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

/// The deadlines in force: per task (by ticket), per operator (by jump-table slot), and the runtime's,
/// each multiplied by `scale` where it is read (GPUOS_DEADLINE_SCALE). Thread-safe.
class Deadlines {
 public:
  Deadlines(std::uint32_t runtime_ms, std::uint32_t scale);
  /// 0 restores the runtime's.
  void set_op(std::uint32_t op, std::uint32_t ms);
  /// Before the ticket is published (Submitter), so that no call of it is judged by another deadline.
  void set_task(std::uint64_t ticket, std::uint32_t ms);
  /// The deadline of a call of `op` for `ticket` in ms, scaled (0: none).
  std::uint32_t of(std::uint64_t ticket, std::uint32_t op) const;
  /// Forgets the tasks' deadlines below `retired` (they cannot run any more).
  void forget_below(std::uint64_t retired);
  /// The longest deadline in force anywhere, scaled (for the drain's stall bound).
  std::uint32_t longest() const;

 private:
  std::uint32_t scaled(std::uint32_t ms) const;

  const std::uint32_t runtime_ms_;
  const std::uint32_t scale_;
  std::atomic<std::uint32_t> op_ms_[GPUOS_MAX_OPS];
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::uint32_t> task_ms_;
  std::atomic<bool> have_tasks_{false};
};

/// What the watchdog knows of the blocks: each one's last record and when a call was first seen, from
/// copies of the table (abi::BlockWork), and the calls past their deadlines. Pure: no driver, no thread
/// (the Watchdog feeds it). Not thread-safe.
class BlockWatch {
 public:
  using Clock = std::chrono::steady_clock;
  /// One copy of the table: `sm[b]` and `work[b]` for blocks 0..n-1, seen at `now`. A busy record equal
  /// to the last one seen (ticket, tile and call: the call count tells two calls apart) is the same call;
  /// its age counts from the copy that first saw it, so a call is never judged older than it is.
  void update(const std::uint16_t* sm, const abi::BlockWork* work, std::uint32_t n, Clock::time_point now);
  /// The first call past its deadline, described with it; "" when none.
  std::string overdue(const Deadlines& deadlines, Clock::time_point now, const std::function<std::string(std::uint32_t)>& op_name) const;
  /// One line per block inside a call (with its deadline), and how many are between calls.
  std::string report(const Deadlines& deadlines, Clock::time_point now, const std::function<std::string(std::uint32_t)>& op_name) const;
  bool seen() const { return !seen_.empty(); }

 private:
  struct Seen {
    abi::BlockWork work{};
    Clock::time_point since{};
  };
  std::string describe(std::uint32_t block, const Seen& s, Clock::time_point now,
                       const std::function<std::string(std::uint32_t)>& op_name) const;
  std::vector<Seen> seen_;
  std::vector<std::uint16_t> sm_;
};

class Watchdog {
 public:
  static constexpr std::chrono::milliseconds kPeriod{5};

  /// `op_name(slot)`: the operator's name for reports.
  Watchdog(CUcontext ctx, ResidentKernel& kernel, RunState& run, Deadlines& deadlines,
           std::function<std::string(std::uint32_t)> op_name);
  ~Watchdog() { stop(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void start();
  /// Stops and joins the thread (idempotent).
  void stop();

  /// Gives up on the runtime: the fault (GPUOS_ERR_HUNG) with `why`, then the kernel is ended. The
  /// first reason wins (false when a fault was recorded before).
  bool give_up(const std::string& why);

  /// For gpuos_diagnose: one line per busy block (operator, ticket, tile, block, SM, for how long), and
  /// how many blocks are idle. Takes a fresh look when the runtime has not faulted.
  std::string report();

 private:
  using Clock = std::chrono::steady_clock;
  void loop();
  /// Copies the table into watch_ (under mu_); false when the copy failed (a faulted context) or there
  /// is no grid.
  bool sample(Clock::time_point now);

  CUcontext ctx_;
  ResidentKernel& kernel_;
  RunState& run_;
  Deadlines& deadlines_;
  std::function<std::string(std::uint32_t)> op_name_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  std::mutex mu_;  // the copy and what it found
  CUstream stream_ = nullptr;
  std::vector<std::uint16_t> sm_;      // DeviceState::block_sm, as copied
  std::vector<abi::BlockWork> work_;  // DeviceState::work, as copied
  BlockWatch watch_;
};

}  // namespace gpuos::detail
