// The one error path of the host library.
//
// Every CUDA driver, NVRTC and nvJitLink call goes through GPUOS_CU_TRY / GPUOS_NVRTC_TRY /
// GPUOS_NVJITLINK_TRY. A failure throws gpuos::detail::Failure carrying a gpuos_status and a message with
// the call, the API's own error name and file:line. The C ABI boundary turns it into a status plus
// gpuos_last_error(); nothing else catches it.
#pragma once

#include <exception>
#include <string>

#include <cuda.h>

#include "gpuos/gpuos.h"

namespace gpuos::detail {

class Failure : public std::exception {
 public:
  Failure(gpuos_status s, std::string msg) : status_(s), msg_(std::move(msg)) {}
  gpuos_status status() const noexcept { return status_; }
  const char* what() const noexcept override { return msg_.c_str(); }

 private:
  gpuos_status status_;
  std::string msg_;
};

[[noreturn]] void fail(gpuos_status s, std::string msg);

/// Name of a driver result ("CUDA_ERROR_ILLEGAL_ADDRESS"), also when the driver is not loaded.
std::string cu_error_name(CUresult r);
/// Which gpuos_status a driver error maps to (sticky faults -> GPUOS_ERR_DEVICE_FAULT, ...).
gpuos_status status_of(CUresult r);
/// True for the errors that leave the context unusable.
bool is_sticky(CUresult r);

void cu_check(CUresult r, const char* call, const char* file, int line);

}  // namespace gpuos::detail

#define GPUOS_CU_TRY(call) ::gpuos::detail::cu_check((call), #call, __FILE__, __LINE__)
