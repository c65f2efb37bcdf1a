// The monitor: a thread per runtime that reaps completions (so the ring keeps room without a waiter),
// watches the kernel (a sticky fault, or an exit nobody asked for, fails every pending task at once
// instead of leaving waiters hanging), unloads retired images once the runtime has been idle for
// kIdleReclaim (an unload needs the kernel stopped: a stop, the unloads, a relaunch; a task submitted
// meanwhile waits in the ring, delayed, never lost), and bounds the kernel's residency so that other
// CUDA code in the process never waits for ever (gpuos_options slice_us, park_us; docs/design.md,
// "Sharing the GPU"): under load it stops the kernel every slice and launches it again at once; idle
// for park_us, it stops the kernel and launches it again when a task is submitted.
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
  /// `slice`, `park`: gpuos_options slice_us, park_us (0: never).
  Monitor(CUcontext ctx, ResidentKernel& kernel, RunState& run, std::function<std::uint64_t()> activity,
          std::chrono::microseconds slice, std::chrono::microseconds park);
  ~Monitor() { stop(); }
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  void start();
  /// Stops and joins the thread (idempotent).
  void stop();

 private:
  void loop();
  void reclaim_retired();
  /// A slice ended: the running kernel stops and is launched again at once.
  void end_slice();
  /// Idle: the kernel stops and stays off the GPU until a submission (unpark).
  void park();
  void unpark();

  CUcontext ctx_;
  ResidentKernel& kernel_;
  RunState& run_;
  std::function<std::uint64_t()> activity_;
  std::chrono::microseconds slice_, park_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gpuos::detail
