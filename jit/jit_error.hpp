// The one error path of the JIT layer: every NVRTC call goes through GPUOS_NVRTC_TRY and every nvJitLink
// call through GPUOS_NVJITLINK_TRY. A result that is not success, and not one the caller said it
// handles, throws gpuos::common::Failure (common/error.hpp) carrying the call, the API's own error name
// and file:line.
//
// The optional trailing arguments list results the caller handles itself (a compile error is a result
// for the user, not a failure of the library):
//   GPUOS_NVRTC_TRY(nvrtcGetPTXSize(p, &n));                                  // any failure throws
//   const nvrtcResult r = GPUOS_NVRTC_TRY(nvrtcCompileProgram(...), NVRTC_ERROR_COMPILATION);
#pragma once

#include <initializer_list>
#include <string>

#include <nvJitLink.h>
#include <nvrtc.h>

#include "common/error.hpp"

namespace gpuos::jit {

/// "NVRTC_ERROR_COMPILATION" (nvrtcGetErrorString), never empty.
std::string nvrtc_error_name(nvrtcResult r);
/// "NVJITLINK_ERROR_PTX_COMPILE"; nvJitLink has no name function, so this is a switch over the enum.
std::string nvjitlink_error_name(nvJitLinkResult r);

/// Which gpuos_status an unhandled result maps to: out of memory, a bad input of the user, an arch the
/// toolkit cannot target, or an internal error (a bug in how gpuos calls the library).
gpuos_status status_of(nvrtcResult r);
gpuos_status status_of(nvJitLinkResult r);

/// Returns r when it is success or in `handled`; throws Failure otherwise.
nvrtcResult nvrtc_check(nvrtcResult r, const char* call, const char* file, int line,
                        std::initializer_list<nvrtcResult> handled = {});
nvJitLinkResult nvjitlink_check(nvJitLinkResult r, const char* call, const char* file, int line,
                                std::initializer_list<nvJitLinkResult> handled = {});

}  // namespace gpuos::jit

#define GPUOS_NVRTC_TRY(call, ...) \
  ::gpuos::jit::nvrtc_check((call), #call, __FILE__, __LINE__, {__VA_ARGS__})
#define GPUOS_NVJITLINK_TRY(call, ...) \
  ::gpuos::jit::nvjitlink_check((call), #call, __FILE__, __LINE__, {__VA_ARGS__})
