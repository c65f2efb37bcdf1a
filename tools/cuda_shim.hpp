// The few CUDA driver calls the `gpuos` tool makes itself: device buffers and copies.
//
// The tool must start on a machine without a driver (to say so with exit code 3), so it never links
// libcuda: load_cuda_shim() dlopens libcuda.so.1 and resolves the entry points below with dlsym, by their
// versioned names. Everything here runs in the device's primary context, the one the runtime uses.
//
// Contract: load_cuda_shim() is idempotent; on failure it returns false and says why, and nothing else
// here may be called. Every call through the shim goes through GPUOS_TOOL_CU, which on failure prints
// the call, the driver's error name and file:line and exits with status 1.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

namespace gpuos::tools {

struct CudaShim {
  // cuda.h maps the plain names onto the versioned ABI (cuMemAlloc -> cuMemAlloc_v2), so these types
  // are those of the symbols dlsym resolves.
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpy_htod_async = nullptr;
  decltype(&::cuMemcpyDtoHAsync) memcpy_dtoh_async = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
};

/// Loads libcuda.so.1 once and resolves the shim. False (and *why) if the driver or a symbol is missing.
bool load_cuda_shim(std::string* why);
/// The loaded shim. Precondition: load_cuda_shim() returned true.
const CudaShim& cu();

[[noreturn]] void cu_fail(CUresult r, const char* call, const char* file, int line);
inline void cu_check(CUresult r, const char* call, const char* file, int line) {
  if (r != CUDA_SUCCESS) cu_fail(r, call, file, line);
}

}  // namespace gpuos::tools

#define GPUOS_TOOL_CU(call) ::gpuos::tools::cu_check((call), #call, __FILE__, __LINE__)

namespace gpuos::tools {

/// Retains a device's primary context (the runtime's context) and makes it current on the calling
/// thread. Every thread that calls the driver must make it current first (make_current()).
class PrimaryContext {
 public:
  explicit PrimaryContext(int ordinal);
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  void make_current() const;

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

/// An owning device allocation. Free it only after the runtime is destroyed: cuMemFree waits for the
/// device to be idle, which it never is while the resident kernel runs.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0, o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T>
  T* as() const { return reinterpret_cast<T*>(ptr_); }
  CUdeviceptr ptr() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

/// Copies on a stream created with CU_STREAM_NON_BLOCKING: it never synchronizes with the legacy
/// stream or other blocking streams, so a copy does not wait for the resident kernel to exit.
class CopyStream {
 public:
  CopyStream();
  ~CopyStream();
  CopyStream(const CopyStream&) = delete;
  CopyStream& operator=(const CopyStream&) = delete;

  /// Both copy and return when the bytes have arrived.
  void upload(CUdeviceptr dst, const void* src, std::size_t bytes) const;
  void download(void* dst, CUdeviceptr src, std::size_t bytes) const;

 private:
  CUstream stream_ = nullptr;
};

}  // namespace gpuos::tools
