// The project's one internal error type, below every component that can fail (jit, host, tools).
//
// A failure is a gpuos_status plus a message that names the cause; the C ABI boundary (host/capi.cpp)
// turns it into the status and gpuos_last_error(), the tools into one line and an exit status. This file
// knows nothing of CUDA: the driver's, NVRTC's and nvJitLink's checking macros (host/cu_check.hpp,
// jit/jit_error.hpp) build their messages and throw this.
#pragma once

#include <stdexcept>
#include <string>

#include "gpuos/gpuos.h"

namespace gpuos::common {

class Failure : public std::runtime_error {
 public:
  Failure(gpuos_status s, const std::string& msg) : std::runtime_error(msg), status_(s) {}
  gpuos_status status() const noexcept { return status_; }

 private:
  gpuos_status status_;
};

[[noreturn]] inline void fail(gpuos_status s, const std::string& msg) { throw Failure(s, msg); }

}  // namespace gpuos::common

// The host library's components (namespace gpuos::detail) use them unqualified.
namespace gpuos::detail {
using common::fail;
using common::Failure;
}  // namespace gpuos::detail
