// The runtime behind the C ABI: owns the device memory, the mapped ring, the loaded image, the kernel's
// stream and the monitor thread. One per gpuos_runtime handle.
#pragma once

#include <atomic>
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

/// What the host knows of an operator id.
struct OpInfo {
  const char* name = nullptr;  ///< nullptr: no operator at this id
  uint32_t arg_bytes = 0;
};
/// The operators of the built-in image, by id.
const OpInfo& builtin_op(uint32_t id);

/// Device properties and the grid the kernel launches with, computed without booting.
gpuos_device_info describe_device(const gpuos_options& o);

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

 private:
  enum class State { Running, Suspended, Stopped, Faulted };

  void launch();
  void stop_kernel(double timeout_s);
  void check_stopped_state();
  void monitor_loop();
  void set_fault(const std::string& why);
  void check_usable() const;
  void shutdown() noexcept;

  gpuos_options opts_;
  gpuos_device_info info_{};
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction kernel_ = nullptr;
  CUstream stream_ = nullptr;
  CUstream diag_stream_ = nullptr;  // reads device state while the kernel runs (created on first use)
  std::mutex diag_mutex_;
  uint64_t last_exit_head_ = 0;         // device `head` after the last stop (control_mutex_)
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
