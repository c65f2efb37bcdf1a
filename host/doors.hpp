// Doorbells rung by CUDA streams and answered by a host thread: what stream-ordered submission
// (host/stream_submit.*) puts between a stream's earlier and later work.
//
// A door is two words of mapped pinned memory, `req` and `flag`. A stream rings it with memory operations
// of its own (no host function): it writes flag = 0, then req = 1 (the write's fence makes the stream's
// earlier work and the first write visible before it), then waits until flag == 1.0f. The poller thread
// scans the doors it watches; a door whose req it finds set it clears and answers: it runs the door's
// work, which submits the task, and once the work's Done says the task has completed (its completion
// record seen) the poller writes 1.0f into the flag. Work that cannot run (the runtime closed or faulted,
// or the doors were detached) is counted as a failure and the poller writes the flag at once, so a
// stream never waits for ever on a door.
//
// Doors are shared by every stream of a runtime. An uncaptured door serves one submission: it is free
// again once its stream has passed its wait, which is known when the poller answers the stream's next
// door (stream order). A door rung inside a stream capture belongs to the captured graph for good: every
// replay rings it again (its req goes back to 0 before its flag is signaled, so a replay's ring is never
// lost and never answered twice). A stream holds at most kMaxInFlight doors not yet answered (the driver
// hung with about a thousand waits queued on one stream; 64 were fine on an H100); open() waits for room.
//
// The poller spins while a door was answered or armed in the last `spin`, and otherwise sleeps between
// scans (50 us, woken at once by a newly armed door; 1 ms once detached): a door rung after a quiet
// period is answered up to a sleep later. With no door watched it blocks. The class makes no CUDA call:
// it is tested on the CPU with threads in the streams' place (tests/unit/test_doors.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda.h>

namespace gpuos::detail {

class Doors {
 public:
  static constexpr std::uint32_t kMaxInFlight = 64;  ///< per stream, uncaptured doors opened, not yet answered
  static constexpr std::uint32_t kSignaled = 0x3f800000u;  ///< 1.0f: the flag's value once answered

  /// The doors' words: req[i] and flag[i] for i < count (memory the streams can write; zeroed).
  struct Memory {
    std::uint32_t* req = nullptr;
    std::uint32_t* flag = nullptr;
    std::uint32_t count = 0;
  };
  /// Whether what an answered door submitted has completed (failed or not): the poller then writes the
  /// door's flag. Throwing counts as completed.
  using Done = std::function<bool()>;
  /// Answers a ring: submits what the door stands for and returns how to tell when it has completed.
  /// Throws, or returns an empty Done, when it could not submit (the flag is then written at once).
  using Work = std::function<Done()>;

  /// The memory operations that ring a door whose words are at device addresses `req` and `flag`, for
  /// one cuStreamBatchMemOp: flag = 0, then req = 1 (each write fenced: the stream's earlier work and the
  /// first write are visible before it), then a wait until flag == kSignaled. One batch captures as one
  /// graph node.
  static void ring_ops(CUdeviceptr req, CUdeviceptr flag, CUstreamBatchMemOpParams (&ops)[3]);

  /// Starts the poller thread.
  static std::shared_ptr<Doors> start(Memory m, std::chrono::microseconds spin);
  ~Doors();
  Doors(const Doors&) = delete;
  Doors& operator=(const Doors&) = delete;

  /// Takes a free door for `stream` (any key naming the stream) and work to run at its every ring
  /// (`captured`: for good; otherwise once). A stream's doors must be opened in the order their rings go
  /// on the stream (the caller serializes open .. arm per stream): a door is freed when the stream's
  /// next one is answered. Uncaptured, waits while the stream has kMaxInFlight doors not answered,
  /// calling `check` every millisecond of the wait (it throws to give up). Throws
  /// Failure(GPUOS_ERR_QUEUE_FULL) when every door is in use.
  std::uint32_t open(const void* stream, bool captured, Work work, const std::function<void()>& check);
  /// The door's ring has been put on its stream: the poller watches it from now.
  void arm(std::uint32_t door);
  /// The ring could not be put on the stream: the door goes back as if never opened.
  void cancel(std::uint32_t door);
  /// From now on no work runs: every ring is answered by the flag alone (counted as a failure). The
  /// poller goes on while doors are watched (captured doors are for ever) and ends once none is.
  void detach();
  /// Rings answered without running their work.
  std::uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  /// Device-visible words of door `i` (the stream writes req and waits on flag).
  std::uint32_t* req(std::uint32_t i) const { return mem_.req + i; }
  std::uint32_t* flag(std::uint32_t i) const { return mem_.flag + i; }

 private:
  Doors(Memory m, std::chrono::microseconds spin);
  void poll();
  /// Answers a ring of `door`; returns what the poller must wait for before it writes the flag (or null).
  Done answer(std::uint32_t door);

  struct Door {
    Work work;
    const void* stream = nullptr;
    std::int64_t release = -1;  // the stream's door before this one: its wait has passed once this rings
    bool captured = false;
  };
  struct PerStream {
    std::uint64_t opened = 0, answered = 0;  // uncaptured doors
    std::int64_t newest = -1;               // the stream's newest uncaptured door
  };

  const Memory mem_;
  const std::chrono::microseconds spin_;
  std::vector<Door> doors_;  // one per door; a captured door's entry never changes again
  std::atomic<std::uint64_t> failures_{0};
  std::atomic<bool> detached_{false};
  std::thread thread_;
  // Under mu_:
  std::mutex mu_;
  std::condition_variable room_cv_;  // an uncaptured door was answered
  std::condition_variable wake_cv_;  // a door was armed, or detach()
  std::vector<std::uint32_t> free_;
  std::vector<std::uint32_t> watched_;  // armed doors: uncaptured ones until answered, captured for good
  std::uint64_t version_ = 0;           // changes with watched_
  std::uint64_t arms_ = 0;              // doors armed so far
  std::map<const void*, PerStream> streams_;
};

}  // namespace gpuos::detail
