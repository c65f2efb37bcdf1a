// The runtime behind the C ABI: owns the device memory, the mapped ring, the loaded image, the kernel's
// stream and the monitor thread. One per gpuos_runtime handle.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <cuda.h>

#include "gpuos/abi.h"
#include "gpuos/gpuos.h"
#include "submit_queue.hpp"

namespace gpuos::detail {

/// Host view of one row of an image's jump table (gpuos::OpEntry in gpuos/op.cuh, which the host
/// compiler cannot include): read from device memory at boot and from a linked image's ELF.
struct OpEntryRow {
  uint64_t tile, claim, finish;  ///< device function addresses; tile 0 = no operator
  uint32_t arg_bytes, flags;
};
static_assert(sizeof(OpEntryRow) == 32 && offsetof(OpEntryRow, arg_bytes) == 24, "gpuos::OpEntry layout");

/// Device properties and the grid the kernel launches with, computed without booting.
gpuos_device_info describe_device(const gpuos_options& o);

/// Sets the resident kernel's shared-memory carve-out to what GPUOS_MIN_BLOCKS_PER_SM blocks need, so
/// the rest of each SM's unified memory is L1 (host/runtime.cpp says why). Before occupancy queries.
CUresult prefer_l1(CUfunction fn, int ordinal);

class Runtime {
 public:
  explicit Runtime(const gpuos_options& o);
  ~Runtime();  // drains, stops, frees; never throws
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// blocking=false: returns false (nothing submitted) when the ring is full.
  bool submit(const gpuos_task* tasks, size_t n, bool blocking, uint64_t& first);
  /// GPUOS_OK, GPUOS_ERR_TIMEOUT, GPUOS_ERR_TASK_FAILED (message in `why`) or GPUOS_ERR_DEVICE_FAULT.
  gpuos_status wait(uint64_t ticket, int64_t timeout_ns, std::string& why);
  gpuos_status drain(int64_t timeout_ns, std::string& why);
  gpuos_stats stats();
  gpuos_device_info device_info() const { return info_; }
  void suspend();
  void resume();
  /// Plain-text report of the internal state (host, control block, device state, oldest pending task).
  std::string diagnose();
  /// Stops accepting tasks, drains, stops the kernel. Idempotent. Waits and stats keep working.
  void close();

  // ---- hot-patching (host/hotpatch.cpp; contracts in gpuos/gpuos.h) --------------------------------
  /// `text` null: read the file `source_name`. Throws Failure with the diagnostics on a broken source.
  gpuos_generation load_operator(const std::string& source_name, const std::string* text);
  /// Compiles all (concurrently), then ONE generation with every source that compiled. Sources that
  /// failed are reported in `errors` (and by list_ops); the others load.
  gpuos_generation load_operators(const std::vector<std::string>& paths, std::vector<std::string>& errors);
  gpuos_generation remove_operator_source(const std::string& source_name);
  uint32_t op_id(const std::string& name);
  uint64_t alias_set(const std::string& alias, const std::string& target);
  uint64_t alias_rollback(const std::string& alias);
  gpuos_generation rollback_generation();
  gpuos_generation generation();
  std::vector<gpuos_op_info> list_ops();
  // The device heap, served by the resident kernel (operator GPUOS_OP_HEAP_CTL): one round trip each.
  void* heap_alloc(uint64_t bytes, uint64_t align);
  void heap_free(void* p);
  gpuos_heap_stats heap_stats();
  /// Runs the device-side invariant checker; false with the first violation in `why`.
  bool heap_check(std::string& why);

 private:
  enum class State { Running, Suspended, Stopped, Faulted };

  /// Publishes n validated payloads with consecutive tickets (false: ring full and !blocking).
  bool enqueue(const abi::Payload* payloads, uint32_t n, bool blocking, uint64_t& first);
  /// Accepts in submissions exactly the operators the loaded image's jump table holds, with their
  /// argument sizes.
  void accept_image_ops();
  /// Allocates the heap's control block and pool and initialises them on the device (before launch).
  void init_heap();
  /// One heap request through the ring; returns the device's reply.
  abi::HeapReply heap_call(uint32_t cmd, uint64_t a, uint64_t b);

  void launch();
  void stop_kernel(double timeout_s);
  /// Asks a kernel that may still run (whatever the state says) to stop; true once none runs.
  bool stop_if_running(double timeout_s);
  void check_stopped_state();
  void monitor_loop();
  void set_fault(const std::string& why);
  void check_usable() const;
  void shutdown() noexcept;

  // Hot-patching internals (host/hotpatch.cpp).
 public:
  struct Hotpatch;
  struct HotpatchBuild;

 private:
  /// Checks names, assigns ids, links, retires what goes away (after its tasks) and switches.
  gpuos_generation rebuild(Hotpatch& h, HotpatchBuild& b);
  Hotpatch& hotpatch();  // created on first use
  struct Image {
    CUmodule module = nullptr;
    CUfunction kernel = nullptr;
    uint32_t grid = 0;
    size_t bytes = 0;  // of the cubin
  };
  /// Quiesces the kernel (the tasks it took from the queue finish), loads `cubin` (null: swaps back to
  /// the previous image), makes it current (the current one becomes the previous; the one before is
  /// unloaded) and relaunches on the same state. first_ticket: the first ticket the new image runs.
  /// On a load failure the old image is relaunched and the failure thrown.
  void switch_image(const std::vector<char>* cubin, gpuos_generation& g);
  void submit_control(const abi::ControlArgs& c, uint64_t& ticket);
  void wait_retired(uint64_t end);  // every ticket below `end` completed (or throws)
  std::unique_ptr<Hotpatch> hp_;
  Image prev_;  // the previous generation, kept loaded for rollback
  /// Older generations' modules, still loaded: unloading needs an idle device, so they go when the
  /// runtime is idle (monitor_loop), at a suspend or at shutdown; past kMaxRetiredBytes of images, in a
  /// switch.
  std::vector<Image> retired_;
  std::atomic<uint64_t> switches_{0};  // image switches so far (the monitor's idle detection)
  size_t retired_bytes_ = 0;
  static constexpr size_t kMaxRetiredBytes = size_t{64} << 20;
  /// How long a switch lets the new image's load run (host-side work) before it stops the kernel;
  /// doubled after a switch whose load was still busy when the kernel stopped.
  std::chrono::nanoseconds load_lead_{std::chrono::milliseconds(2)};
  /// Unloads every retired module. The kernel must not be running (control_mutex_ held).
  void unload_retired();
  /// From the monitor, when no task has been in flight for a while: stop, unload_retired, relaunch.
  void reclaim_retired_if_idle();
  /// Host view of each operator id for submit: 0 = no operator; else kAccept | argument bytes.
  static constexpr uint32_t kAccept = 1u << 31;
  std::atomic<uint32_t> accept_[GPUOS_MAX_OPS] = {};

  gpuos_options opts_;
  gpuos_device_info info_{};
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
  size_t image_bytes_ = 0;  // of module_'s cubin
  CUstream stream_ = nullptr;
  CUstream diag_stream_ = nullptr;  // reads device state while the kernel runs (created on first use)
  std::mutex diag_mutex_;
  /// The last stop_kernel's timing in ns after the request (0 = not seen before the stream was idle).
  struct StopTiming {
    uint64_t seen_ns = 0, drained_ns = 0, done_ns = 0, max_query_ns = 0, queries = 0;
  };
  StopTiming last_stop_;                // control_mutex_
  uint64_t last_exit_head_ = 0;         // device `head` after the last stop (control_mutex_)
  abi::DeviceState* stop_snapshot_ = nullptr;  // pinned: the state copied at the last stop
  bool snapshot_pending_ = false;              // copied, not yet checked (control_mutex_)
  std::vector<std::string> anomalies_;  // scheduler invariants found violated at a stop (diag_mutex_)
  uint32_t grid_ = 0;

  // Mapped pinned host memory (host pointer == device pointer under unified addressing).
  abi::Slot* ring_ = nullptr;
  abi::Completion* completions_ = nullptr;
  abi::HostControl* control_ = nullptr;
  // Device memory.
  CUdeviceptr state_ = 0;
  CUdeviceptr dq_ = 0;
  CUdeviceptr trace_ = 0;  // front-end flight recorder (GPUOS_TRACE=1), diagnostics only

  std::unique_ptr<SubmitQueue> queue_;

  // The heap: device memory (control block + pool), replies in mapped host memory, one per request in
  // flight.
  CUdeviceptr heap_ctl_ = 0;
  CUdeviceptr heap_pool_ = 0;
  abi::HeapReply* replies_ = nullptr;
  std::mutex reply_mutex_;
  std::condition_variable reply_cv_;
  std::vector<uint32_t> free_replies_;

  std::mutex control_mutex_;  // serializes launch/suspend/resume/shutdown
  std::atomic<State> state_flag_{State::Stopped};
  uint64_t run_id_ = 0;
  std::atomic<uint64_t> launches_{0};

  std::mutex close_mutex_;
  bool closed_ = false;
  std::atomic<bool> closing_{false};
  std::atomic<int> active_submitters_{0};

  std::atomic<bool> faulted_{false};
  mutable std::mutex fault_mutex_;
  std::string fault_message_;

  std::atomic<bool> monitor_stop_{false};
  std::thread monitor_;
};

}  // namespace gpuos::detail
