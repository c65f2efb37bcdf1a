// Whether a runtime can still serve: shared by every component of the runtime.
//
// Two one-way flags. A fault (the device faulted, or the host declared the runtime unusable): every call
// that needs the device fails with the reason, every waiter is released with it. Closing (shutdown has
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
  /// Records the fault; false if one was recorded before (that reason stands).
  bool set_fault(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (faulted_.load()) return false;
    why_ = why;
    faulted_.store(true);
    return true;
  }
  bool faulted() const noexcept { return faulted_.load(std::memory_order_acquire); }
  std::string fault_reason() const {
    std::lock_guard<std::mutex> lock(mu_);
    return why_;
  }
  /// Throws Failure(GPUOS_ERR_DEVICE_FAULT) with the reason once faulted.
  void check_usable() const {
    if (faulted()) common::fail(GPUOS_ERR_DEVICE_FAULT, fault_reason());
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
};

}  // namespace gpuos::detail
