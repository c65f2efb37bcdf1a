#include "jit/jit_error.hpp"

namespace gpuos::jit {

std::string nvrtc_error_name(nvrtcResult r) {
  const char* s = nvrtcGetErrorString(r);  // never fails; "NVRTC_ERROR unknown" for unknown codes
  return s ? std::string(s) : "nvrtcResult " + std::to_string(static_cast<int>(r));
}

std::string nvjitlink_error_name(nvJitLinkResult r) {
  switch (r) {
#define GPUOS_NAME_(x) \
  case x:              \
    return #x;
    GPUOS_NAME_(NVJITLINK_SUCCESS)
    GPUOS_NAME_(NVJITLINK_ERROR_UNRECOGNIZED_OPTION)
    GPUOS_NAME_(NVJITLINK_ERROR_MISSING_ARCH)
    GPUOS_NAME_(NVJITLINK_ERROR_INVALID_INPUT)
    GPUOS_NAME_(NVJITLINK_ERROR_PTX_COMPILE)
    GPUOS_NAME_(NVJITLINK_ERROR_NVVM_COMPILE)
    GPUOS_NAME_(NVJITLINK_ERROR_INTERNAL)
    GPUOS_NAME_(NVJITLINK_ERROR_THREADPOOL)
    GPUOS_NAME_(NVJITLINK_ERROR_UNRECOGNIZED_INPUT)
    GPUOS_NAME_(NVJITLINK_ERROR_FINALIZE)
    GPUOS_NAME_(NVJITLINK_ERROR_NULL_INPUT)
    GPUOS_NAME_(NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS)
    GPUOS_NAME_(NVJITLINK_ERROR_INCORRECT_INPUT_TYPE)
    GPUOS_NAME_(NVJITLINK_ERROR_ARCH_MISMATCH)
    GPUOS_NAME_(NVJITLINK_ERROR_OUTDATED_LIBRARY)
    GPUOS_NAME_(NVJITLINK_ERROR_MISSING_FATBIN)
    GPUOS_NAME_(NVJITLINK_ERROR_UNRECOGNIZED_ARCH)
    GPUOS_NAME_(NVJITLINK_ERROR_UNSUPPORTED_ARCH)
    GPUOS_NAME_(NVJITLINK_ERROR_LTO_NOT_ENABLED)
#undef GPUOS_NAME_
  }
  return "nvJitLinkResult " + std::to_string(static_cast<int>(r));
}

gpuos_status status_of(nvrtcResult r) {
  switch (r) {
    case NVRTC_SUCCESS:
      return GPUOS_OK;
    case NVRTC_ERROR_OUT_OF_MEMORY:
    case NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED:
      return GPUOS_ERR_OUT_OF_MEMORY;
    case NVRTC_ERROR_INVALID_OPTION:  // options come from the caller's CompileOptions
    case NVRTC_ERROR_COMPILATION:
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
      return GPUOS_ERR_INVALID_ARG;
    default:
      return GPUOS_ERR_INTERNAL;
  }
}

gpuos_status status_of(nvJitLinkResult r) {
  switch (r) {
    case NVJITLINK_SUCCESS:
      return GPUOS_OK;
    case NVJITLINK_ERROR_INVALID_INPUT:
    case NVJITLINK_ERROR_PTX_COMPILE:
    case NVJITLINK_ERROR_NVVM_COMPILE:
    case NVJITLINK_ERROR_UNRECOGNIZED_INPUT:
    case NVJITLINK_ERROR_INCORRECT_INPUT_TYPE:
    case NVJITLINK_ERROR_ARCH_MISMATCH:
    case NVJITLINK_ERROR_MISSING_FATBIN:
    case NVJITLINK_ERROR_UNRECOGNIZED_OPTION:
    case NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS:
      return GPUOS_ERR_INVALID_ARG;
    case NVJITLINK_ERROR_UNRECOGNIZED_ARCH:
    case NVJITLINK_ERROR_UNSUPPORTED_ARCH:
    case NVJITLINK_ERROR_OUTDATED_LIBRARY:
      return GPUOS_ERR_UNSUPPORTED;
    default:
      return GPUOS_ERR_INTERNAL;
  }
}

nvrtcResult nvrtc_check(nvrtcResult r, const char* call, const char* file, int line,
                        std::initializer_list<nvrtcResult> handled) {
  if (r == NVRTC_SUCCESS) return r;
  for (nvrtcResult h : handled)
    if (r == h) return r;
  throw common::Failure(status_of(r), std::string(call) + " failed: " + nvrtc_error_name(r) + " at " + file +
                                  ":" + std::to_string(line));
}

nvJitLinkResult nvjitlink_check(nvJitLinkResult r, const char* call, const char* file, int line,
                                std::initializer_list<nvJitLinkResult> handled) {
  if (r == NVJITLINK_SUCCESS) return r;
  for (nvJitLinkResult h : handled)
    if (r == h) return r;
  throw common::Failure(status_of(r), std::string(call) + " failed: " + nvjitlink_error_name(r) + " at " +
                                  file + ":" + std::to_string(line));
}

}  // namespace gpuos::jit
