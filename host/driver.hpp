// The CUDA driver API, loaded at run time.
//
// libgpuos does not link libcuda: a machine without a driver must still load the library (and the
// `gpuos` binary) and get a clear GPUOS_ERR_NO_DEVICE. load_driver() dlopens libcuda.so.1 once and
// resolves every entry point below through cuGetProcAddress for the CUDA version the library was built
// with, so each name binds to the ABI version cuda.h declares.
// Contract: load_driver() is thread-safe, idempotent, and throws Failure(GPUOS_ERR_NO_DEVICE) when the
// library or an entry point is missing, Failure(GPUOS_ERR_DRIVER) when the driver is older than the
// toolkit gpuos was built with. drv() requires a successful load_driver().
#pragma once

#include <cuda.h>

#define GPUOS_DRIVER_FUNCTIONS(X)               \
  X(cuInit)                                     \
  X(cuDriverGetVersion)                         \
  X(cuGetErrorName)                             \
  X(cuGetErrorString)                           \
  X(cuDeviceGet)                                \
  X(cuDeviceGetCount)                           \
  X(cuDeviceGetName)                            \
  X(cuDeviceGetAttribute)                       \
  X(cuDeviceTotalMem)                           \
  X(cuDevicePrimaryCtxRetain)                   \
  X(cuDevicePrimaryCtxRelease)                  \
  X(cuDevicePrimaryCtxReset)                    \
  X(cuDevicePrimaryCtxSetFlags)                 \
  X(cuCtxSetCurrent)                            \
  X(cuCtxGetCurrent)                            \
  X(cuCtxCreate)                                \
  X(cuCtxDestroy)                               \
  X(cuCtxSetLimit)                              \
  X(cuThreadExchangeStreamCaptureMode)          \
  X(cuModuleLoadData)                           \
  X(cuModuleUnload)                             \
  X(cuModuleGetFunction)                        \
  X(cuModuleGetGlobal)                          \
  X(cuFuncGetAttribute)                         \
  X(cuFuncSetAttribute)                         \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuLaunchKernel)                             \
  X(cuLaunchKernelEx)                           \
  X(cuLaunchCooperativeKernel)                  \
  X(cuStreamCreate)                             \
  X(cuStreamDestroy)                            \
  X(cuStreamQuery)                              \
  X(cuStreamSynchronize)                        \
  X(cuStreamWaitValue32)                        \
  X(cuStreamBatchMemOp)                         \
  X(cuStreamIsCapturing)                        \
  X(cuStreamBeginCapture)                       \
  X(cuStreamEndCapture)                         \
  X(cuEventCreate)                              \
  X(cuEventDestroy)                             \
  X(cuEventRecord)                              \
  X(cuEventQuery)                               \
  X(cuEventSynchronize)                         \
  X(cuEventElapsedTime)                         \
  X(cuMemAlloc)                                 \
  X(cuMemFree)                                  \
  X(cuMemGetInfo)                               \
  X(cuMemHostAlloc)                             \
  X(cuMemFreeHost)                              \
  X(cuMemHostGetDevicePointer)                  \
  X(cuMemcpyHtoD)                               \
  X(cuMemcpyDtoH)                               \
  X(cuMemcpyHtoDAsync)                          \
  X(cuMemcpyDtoHAsync)                          \
  X(cuMemcpyDtoDAsync)                          \
  X(cuMemsetD8Async)                            \
  X(cuMemsetD32Async)                           \
  X(cuGraphCreate)                              \
  X(cuGraphAddKernelNode)                       \
  X(cuGraphInstantiateWithFlags)                \
  X(cuGraphLaunch)                              \
  X(cuGraphExecDestroy)                         \
  X(cuGraphDestroy)

/// Names whose entry point at this CUDA version takes other arguments than cuda.h's declaration of the
/// name, with the declaration that matches it: at CUDA 13.0 "cuCtxSynchronize" resolves to
/// cuCtxSynchronize_v2(CUcontext) (NULL: the current context), while cuda.h still declares
/// cuCtxSynchronize(void).
#define GPUOS_DRIVER_VERSIONED(X) X(cuCtxSynchronize, cuCtxSynchronize_v2)

namespace gpuos::detail {

struct Driver {
#define GPUOS_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  GPUOS_DRIVER_FUNCTIONS(GPUOS_DRIVER_MEMBER)
#undef GPUOS_DRIVER_MEMBER
#define GPUOS_DRIVER_MEMBER_AS(name, declared) decltype(&::declared) name = nullptr;
  GPUOS_DRIVER_VERSIONED(GPUOS_DRIVER_MEMBER_AS)
#undef GPUOS_DRIVER_MEMBER_AS
  int version = 0;  ///< cuDriverGetVersion
};

/// Loads the driver (once) and calls cuInit(0). Throws Failure on error.
const Driver& load_driver();
/// True once load_driver() has succeeded.
bool driver_loaded() noexcept;
/// The loaded driver. Precondition: load_driver() succeeded.
const Driver& drv() noexcept;

}  // namespace gpuos::detail
