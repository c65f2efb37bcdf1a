#include "host/cu_check.hpp"

#include "host/driver.hpp"

namespace gpuos::detail {

std::string cu_error_name(CUresult r) {
  const char* name = nullptr;
  if (driver_loaded() && drv().cuGetErrorName(r, &name) == CUDA_SUCCESS && name) {
    std::string s = name;
    const char* desc = nullptr;
    if (drv().cuGetErrorString(r, &desc) == CUDA_SUCCESS && desc) s += std::string(" (") + desc + ")";
    return s;
  }
  return "CUresult " + std::to_string(static_cast<int>(r));
}

bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

gpuos_status status_of(CUresult r) {
  if (is_sticky(r)) return GPUOS_ERR_DEVICE_FAULT;
  switch (r) {
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
      return GPUOS_ERR_NO_DEVICE;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return GPUOS_ERR_OUT_OF_MEMORY;
    case CUDA_ERROR_INVALID_VALUE:
      return GPUOS_ERR_INVALID_ARG;
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return GPUOS_ERR_UNSUPPORTED;
    default:
      return GPUOS_ERR_DRIVER;
  }
}

void cu_check(CUresult r, const char* call, const char* file, int line) {
  if (r == CUDA_SUCCESS) return;
  fail(status_of(r), std::string(call) + " failed: " + cu_error_name(r) + " at " + file + ":" +
                         std::to_string(line));
}

}  // namespace gpuos::detail
