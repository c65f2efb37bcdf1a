// Stream-ordered submission (gpuos_submit_on_stream): a task that runs in a CUDA stream's order, after
// the stream's earlier work and before its later work, so it mixes with a framework's kernels on that
// stream and is recorded when the stream is captured into a CUDA graph.
//
// What goes on the stream, per task:
//   1. a host function (cuLaunchHostFunc): when the stream reaches it (the earlier work is done), it
//      resets a flag word (mapped pinned memory) and submits the task (or a graph launch) through the
//      ring, followed by a
//      signal task that writes 1.0f into the flag once the task has completed (the built-in fill, with
//      an order-only dependency: it runs whether the task failed or not);
//   2. a wait for the flag (cuStreamWaitValue32): the stream's later work starts after the task.
// Both capture as graph nodes (a host node and a memop node), so every replay submits the task again.
//
// Bounds and failures: a stream may hold at most kMaxInFlight such tasks whose host function has not
// run yet (the driver hangs with about a thousand queued waits; 64 are fine on an H100), submit_on_stream
// waits for room beyond that. A host function that cannot submit (the runtime closed or faulted) writes
// the flag itself, so the stream never waits for ever; it counts the task as not run (stream_failures).
// A flag is reused once the stream has passed its wait: when the stream's next host function runs. A
// captured task keeps its flag and its host function's data for good (the graph may be replayed at any
// time); when anything was captured, destroying the runtime leaves the flags' memory allocated, and a
// replay after that releases its stream without running the task.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda.h>

#include "gpuos/gpuos.h"
#include "host/run_state.hpp"
#include "host/submitter.hpp"

namespace gpuos::detail {

class StreamSubmitter {
 public:
  static constexpr std::uint32_t kFlags = 8192;      ///< flags in the pool (submissions in flight + captured)
  static constexpr std::uint32_t kMaxInFlight = 64;  ///< per stream, host functions not yet run

  StreamSubmitter(CUcontext ctx, Submitter& submitter, RunState& run);
  /// Detaches the host functions still to run (they release their streams without submitting) and frees
  /// the flags unless a capture may still use them.
  ~StreamSubmitter();
  StreamSubmitter(const StreamSubmitter&) = delete;
  StreamSubmitter& operator=(const StreamSubmitter&) = delete;

  /// Tickets a host function issued: first..first+n-1; the signal follows all of them.
  struct Issued {
    std::uint64_t first;
    std::size_t n;
  };
  /// What a host function submits: the work (tasks, a graph launch), returning the tickets the signal
  /// follows. Runs on the driver's thread: it must make no CUDA call. Throws when it cannot submit.
  using Work = std::function<Issued(Submitter&)>;
  /// Validates tasks[0..n) and puts one host function submitting them (consecutive tickets) and its wait
  /// on `stream` (a CUstream; 0 is the legacy default stream): the stream's later work waits for all of
  /// them. Blocks while the stream holds kMaxInFlight host functions not yet run.
  void submit(const gpuos_task* tasks, std::size_t n, CUstream stream);
  /// The same for one task that also waits for the tickets after[0..n) (issued before this call) and the
  /// lane's previous task when the stream reaches it (Submitter::submit_after).
  void submit_after(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane, CUstream stream);
  /// The same for work the caller has validated.
  void submit(Work work, CUstream stream);
  /// Stream-ordered tasks whose host function could not submit them (the runtime closed or faulted).
  std::uint64_t failures() const;

  struct Shared;  // what the host functions reach (host/stream_submit.cpp)

 private:
  CUcontext ctx_;
  RunState& run_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace gpuos::detail
