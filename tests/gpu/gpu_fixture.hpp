// Shared pieces of the GPU suites: device buffers and copies through the driver (the runtime's own
// loaded driver table), on a non-blocking stream so they never wait for the resident kernel.
// Buffers must outlive the Runtime (declare them first): freeing device memory needs an idle device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda.h>

#include "gpuos/gpuos.hpp"

namespace gpuos::test {

/// Retains device 0's primary context (the one the runtime uses) and makes it current.
void use_device(int ordinal = 0);

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t floats);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* get() const { return reinterpret_cast<float*>(ptr_); }
  size_t size() const { return n_; }
  void upload(const std::vector<float>& h, size_t offset = 0);
  std::vector<float> download(size_t count, size_t offset = 0) const;
  std::vector<float> download() const { return download(n_); }

 private:
  CUdeviceptr ptr_ = 0;
  size_t n_ = 0;
};

/// Copies between host memory and any device pointer (e.g. a block of the gpuos heap), on a
/// non-blocking stream, synchronously.
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);

/// Deterministic random floats in [-1, 1).
std::vector<float> random_floats(size_t n, uint64_t seed);

}  // namespace gpuos::test
