// Whether a runtime can still serve: shared by every component of the runtime.
//
// Two one-way flags. A fault (the device faulted, the watchdog gave up on a hung operator, or the host
// declared the runtime unusable): every call that needs the device fails with the reason and its status
// (GPUOS_ERR_DEVICE_FAULT, or GPUOS_ERR_HUNG), every waiter is released with them. Closing (shutdown has
// begun): new submissions, suspends and resumes are refused; waits and statistics keep working.
//
// Contract: set_fault is first-wins (later reasons are ignored); every member is thread-safe and
// faulted()/closing() are lock-free reads.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "common/error.hpp"

namespace gpuos::detail {

class RunState {
 public:
  /// Records the fault; false if one was recorded before (that reason and status stand).
  bool set_fault(const std::string& why, gpuos_status status = GPUOS_ERR_DEVICE_FAULT) {
    std::lock_guard<std::mutex> lock(mu_);
    if (faulted_.load()) return false;
    why_ = why;
    status_ = status;
    faulted_.store(true);
    return true;
  }
  /// The status waiters and calls fail with once faulted.
  gpuos_status fault_status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  bool faulted() const noexcept { return faulted_.load(std::memory_order_acquire); }
  std::string fault_reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return why_;
  }
  /// Throws Failure(fault_status()) with the reason once faulted.
  void check_usable() const {
    if (faulted()) common::fail(fault_status(), fault_reason());
  }

  void begin_close() noexcept { closing_.store(true, std::memory_order_seq_cst); }
  bool closing() const noexcept { return closing_.load(std::memory_order_seq_cst); }
  /// Throws Failure(GPUOS_ERR_UNAVAILABLE) once closing.
  void check_open() const {
    if (closing()) common::fail(GPUOS_ERR_UNAVAILABLE, "the runtime is shut down (or shutting down)");
  }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> faulted_{false};
  std::atomic<bool> closing_{false};
  std::string why_;
  gpuos_status status_ = GPUOS_ERR_DEVICE_FAULT;
};

}  // namespace gpuos::detail
