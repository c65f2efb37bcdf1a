// The few CUDA resources the `gpuos` tool owns itself: the primary context, device buffers, a copy
// stream. Every driver call goes through the library's one loader and error path (host/driver.hpp,
// GPUOS_CU_TRY in host/error.hpp): a failure throws gpuos::detail::Failure naming the call, the
// driver's error name and file:line. Everything here runs in the device's primary context, the one the
// runtime uses.
#pragma once

#include <cuda.h>

#include <cstddef>

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
/// device to be idle, which it never is while the resident kernel runs. A failing free (after a device
/// fault) is ignored: the fault has been reported already.
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
