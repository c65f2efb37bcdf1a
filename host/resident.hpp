// The resident kernel's lifecycle: the memory it runs on (the ring, the completion records, the
// control block, the scheduler state, the device queue), its launches and stops, and the checks made
// at every stop.
//
// Every launch runs the image set's current image on the same memory, so the kernel can exit (suspend,
// a generation switch, an idle unload) and be launched again without losing a task. A stop asks the
// front end to exit (HostControl::stop_run); the tasks the kernel took from the ring finish first, the
// rest wait in the ring for the next launch.
//
// Locking: the control lock serializes every launch and stop, and every change of the image set (which
// needs the kernel stopped). Hold it through a Control object; suspend(), resume(),
// relaunch_if_suspended() and close() take it themselves, watch() and snapshot() try it. Lock order: Generations' lock, then this one, then RunState's and the
// diagnostics lock.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <cuda.h>

#include "common/config.hpp"
#include "host/diagnose.hpp"
#include "host/image_set.hpp"
#include "host/run_state.hpp"
#include "host/submit_queue.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

enum class KernelState { running, suspended, stopped };

/// Where the last stop's time went, in ns after the request (0: not seen before the stream was idle).
struct StopTiming {
  std::uint64_t seen_ns = 0, drained_ns = 0, done_ns = 0, max_query_ns = 0, queries = 0;
};

class ResidentKernel {
 public:
  /// Allocates and initialises the kernel's memory in `ctx` (current on the calling thread) for a ring of
  /// 2^log2_capacity slots, with the tuning of `cfg`. Launches nothing.
  ResidentKernel(CUcontext ctx, ImageSet& images, RunState& run, const common::Config& cfg, std::uint32_t log2_capacity);
  /// Frees what free_memory() has not (pinned memory only: device memory and the stream need an idle
  /// device). Never throws, never waits for the kernel.
  ~ResidentKernel();
  ResidentKernel(const ResidentKernel&) = delete;
  ResidentKernel& operator=(const ResidentKernel&) = delete;

  SubmitQueue& queue() { return *queue_; }
  const SubmitQueue& queue() const { return *queue_; }
  CUstream stream() const { return stream_; }
  /// The heap's control block every launch passes to the kernel (LaunchParams::heap); before the first launch.
  void set_heap(void* heap) { heap_ = heap; }
  KernelState state() const { return state_.load(); }
  /// The state as diagnose and the metrics name it: running, parked (stopped by the monitor while idle,
  /// launched again by the next submission), suspended or stopped.
  const char* state_name() const;
  std::uint64_t launches() const { return launches_.load(); }
  std::uint64_t heartbeat() const;

  /// Holds the control lock: the kernel neither starts nor stops under it except through it.
  class Control {
   public:
    bool running() const { return k_->state_.load() == KernelState::running; }
    /// Launches the image set's current image and waits until every block runs (control_limit_ at
    /// most).
    void launch() { k_->launch_locked(); }
    /// Asks the running kernel to stop and waits until it has (control_limit_ at most, then throws
    /// GPUOS_ERR_INTERNAL). A driver error on the kernel's stream sets the fault and throws.
    void stop() { k_->stop_locked(); }
    /// Tickets [0, fetched) were taken from the ring by kernels that have stopped (after stop()).
    std::uint64_t fetched() const;
    const StopTiming& last_stop() const { return k_->last_stop_; }
    std::uint64_t run_id() const { return k_->run_id_; }
    ImageSet& images() { return k_->images_; }

   private:
    friend class ResidentKernel;
    Control(ResidentKernel* k, std::unique_lock<std::mutex> l) : k_(k), lock_(std::move(l)) {}
    ResidentKernel* k_;
    std::unique_lock<std::mutex> lock_;
  };
  Control control() { return Control(this, std::unique_lock<std::mutex>(control_mutex_)); }
  std::optional<Control> try_control();

  /// Holds off a user's suspend while a request that the running kernel serves (a heap request) is in
  /// flight; throws Failure(GPUOS_ERR_UNAVAILABLE) when the user has suspended the runtime. Internal
  /// stops (a generation switch, an idle unload) do not refuse: the request waits in the ring for the
  /// relaunch, milliseconds at most.
  class ServeGuard {
   public:
    explicit ServeGuard(ResidentKernel& k);
    ~ServeGuard() { k_.serving_.fetch_sub(1, std::memory_order_seq_cst); }
    ServeGuard(const ServeGuard&) = delete;
    ServeGuard& operator=(const ServeGuard&) = delete;

   private:
    ResidentKernel& k_;
  };

  /// The kernel's blocks finish their current task and the kernel exits; retired images are unloaded.
  /// Waits first for the requests under a ServeGuard (they complete: the kernel still runs).
  void suspend();
  /// Launches the current image again.
  void resume();
  /// For shutdown: a suspended kernel is relaunched (the queued tasks must drain).
  void relaunch_if_suspended();
  /// For shutdown, after the drain: stops the kernel (one a host-side failure left running after a fault
  /// too, within 5 s) and marks it stopped for good.
  void close();
  /// For the monitor: a driver error on the kernel's stream, or an exit nobody asked for, sets the fault.
  void watch();
  /// Stops a kernel that may still run whatever the state says (a host-side failure can leave one
  /// running); true once none runs (or the stream reports a sticky error).
  bool stop_if_running(double timeout_s) noexcept;
  /// Ends the running kernel with a fault, without waiting (the watchdog's last resort, after the runtime
  /// has failed every pending task): HostControl::stop_run and DeviceState::abort say kAbortRun, and the
  /// front end or the first worker between calls that sees it faults (kernel/scheduler.cu,
  /// abort_kernel). A kernel whose every block is held by an operator cannot see it.
  void abort() noexcept;
  /// The scheduler state's device address (DeviceState), for the watchdog's copies.
  CUdeviceptr device_state() const { return dstate_; }
  /// Blocks of the current image's launch.
  std::uint32_t grid() const { return images_.current_grid(); }
  /// Frees the device memory and the streams. Call only once no kernel runs (stop_if_running returned
  /// true) and the context is healthy: a free waits for an idle device.
  void free_memory() noexcept;

  /// Fills the host, control-block and device parts of a diagnosis snapshot. Safe while the kernel runs.
  void snapshot(Snapshot& s);

 private:
  void free_pinned() noexcept;
  void launch_locked();
  void stop_locked();
  /// Asks the kernel of run_id_ to stop, unless it was told to abort (which a stop must not undo).
  void request_stop() noexcept;
  /// Checks the scheduler invariants of the last stop's snapshot (once its copy completed).
  void check_stopped_state();

  CUcontext ctx_;
  ImageSet& images_;
  RunState& run_;
  /// How long a launch may take to start every block, a stop to see the kernel exit, and suspend to see
  /// the heap requests in flight served: 30 s, times GPUOS_DEADLINE_SCALE (tools that slow the GPU
  /// slow these as much as any operator).
  const std::chrono::seconds control_limit_;
  void* heap_ = nullptr;

  // Mapped pinned host memory (host pointer == device pointer under unified addressing).
  abi::Slot* ring_ = nullptr;
  abi::Completion* completions_ = nullptr;
  abi::HostControl* control_ = nullptr;
  abi::DeviceState* stop_snapshot_ = nullptr;  // pinned: the state copied at the last stop
  // Device memory.
  CUdeviceptr dstate_ = 0;  // abi::DeviceState
  CUdeviceptr dq_ = 0;
  CUdeviceptr trace_ = 0;  // the front end's flight recorder (GPUOS_TRACE=1)
  CUstream stream_ = nullptr;
  CUstream diag_stream_ = nullptr;  // reads device state while the kernel runs (created on first use)
  std::unique_ptr<SubmitQueue> queue_;

  std::mutex control_mutex_;
  std::atomic<KernelState> state_{KernelState::stopped};
  std::atomic<bool> user_suspended_{false};  // suspend() .. resume(): requests are refused
  std::atomic<int> serving_{0};              // requests under a ServeGuard
  std::atomic<std::uint64_t> launches_{0};
  // Under the control lock:
  std::uint64_t run_id_ = 0;
  StopTiming last_stop_;
  std::uint64_t last_exit_head_ = 0;  // device `head` after the last stop
  bool snapshot_pending_ = false;     // the stop snapshot is copied, not yet checked
  // Under diag_mutex_:
  std::mutex diag_mutex_;
  std::vector<std::string> anomalies_;
};

}  // namespace gpuos::detail
