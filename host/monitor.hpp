// The monitor: a thread per runtime that reaps completions (so the ring keeps room without a waiter),
// watches the kernel (a sticky fault, or an exit nobody asked for, fails every pending task at once
// instead of leaving waiters hanging), and unloads retired images once the runtime has been idle for
// kIdleReclaim (an unload needs the kernel stopped: a stop, the unloads, a relaunch; a task submitted
// meanwhile waits in the ring, delayed, never lost).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include <cuda.h>

#include "host/resident.hpp"
#include "host/run_state.hpp"

namespace gpuos::detail {

class Monitor {
 public:
  static constexpr std::chrono::milliseconds kIdleReclaim{20};

  /// `activity()` counts events besides tickets that delay the idle unload (image switches).
  Monitor(CUcontext ctx, ResidentKernel& kernel, RunState& run, std::function<std::uint64_t()> activity);
  ~Monitor() { stop(); }
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  void start();
  /// Stops and joins the thread (idempotent).
  void stop();

 private:
  void loop();
  void reclaim_retired();

  CUcontext ctx_;
  ResidentKernel& kernel_;
  RunState& run_;
  std::function<std::uint64_t()> activity_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gpuos::detail
