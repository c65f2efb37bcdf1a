// Stream-ordered submission (gpuos_submit_on_stream): a task that runs in a CUDA stream's order, after
// the stream's earlier work and before its later work, so it mixes with a framework's kernels on that
// stream and is recorded when the stream is captured into a CUDA graph.
//
// What goes on the stream, per task, is one batch of memory operations ringing a door (host/doors.hpp):
// a write of the door's flag (0) and of its req word (1), then a wait until the flag reads 1.0f. The
// doors' poller thread sees req, submits the task (or a graph launch) through the ring, and writes 1.0f
// into the flag once the task's completion record is there, whether it failed or not. The batch captures
// as a graph node, so every replay rings the door again and submits the task again.
//
// Bounds and failures: a stream holds at most Doors::kMaxInFlight doors not yet answered; submit waits
// for room beyond that. A ring that cannot submit (the runtime closed or faulted, or destroyed) is
// answered with the flag alone, so the stream never waits for ever; it counts as not run
// (stream_failures). Once the runtime is destroyed the poller goes on answering the doors still watched
// (those rung inside a capture, for ever) that way.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include <cuda.h>

#include "gpuos/gpuos.h"
#include "host/doors.hpp"
#include "host/run_state.hpp"
#include "host/submitter.hpp"

namespace gpuos::detail {

class StreamSubmitter {
 public:
  static constexpr std::uint32_t kDoors = 8192;  ///< doors in the pool (submissions in flight + captured)

  /// `spin`: how long the doors' poller spins after its last activity before it sleeps between scans.
  StreamSubmitter(CUcontext ctx, Submitter& submitter, RunState& run, std::chrono::microseconds spin);
  /// Detaches the doors: rings from now on release their streams without submitting.
  ~StreamSubmitter();
  StreamSubmitter(const StreamSubmitter&) = delete;
  StreamSubmitter& operator=(const StreamSubmitter&) = delete;

  /// Tickets a ring issued: first..first+n-1; the stream goes on once all of them have completed.
  struct Issued {
    std::uint64_t first;
    std::size_t n;
  };
  /// What a ring submits: the work (tasks, a graph launch), returning the tickets the stream waits for.
  /// Runs on the doors' poller thread: it must make no CUDA call. Throws when it cannot submit.
  using Work = std::function<Issued(Submitter&)>;
  /// Validates tasks[0..n) and puts one ring submitting them (consecutive tickets) and its wait on
  /// `stream` (a CUstream; 0 is the legacy default stream): the stream's later work waits for all of
  /// them. Blocks while the stream holds Doors::kMaxInFlight rings not yet answered.
  void submit(const gpuos_task* tasks, std::size_t n, CUstream stream);
  /// The same for one task that also waits for the tickets after[0..n) (issued before this call) and the
  /// lane's previous task when the stream reaches it (Submitter::submit_after).
  void submit_after(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane, CUstream stream);
  /// The same for work the caller has validated.
  void submit(Work work, CUstream stream);
  /// Stream-ordered tasks whose ring could not submit them (the runtime closed or faulted).
  std::uint64_t failures() const;

  struct Shared;  // what the doors' work reaches (host/stream_submit.cpp)

 private:
  /// The lock that orders submissions on `stream` (one per stream ever used; a few bytes each).
  std::mutex& stream_turn(CUstream stream);

  CUcontext ctx_;
  RunState& run_;
  std::mutex turns_mu_;
  std::map<CUstream, std::unique_ptr<std::mutex>> turns_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Doors> doors_;
};

}  // namespace gpuos::detail
