// Shared pieces of the GPU suites: device buffers and copies through the driver (the runtime's own
// loaded driver table), on a non-blocking stream so they never wait for the resident kernel.
// Buffers must outlive the Runtime (declare them first): freeing device memory needs an idle device.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <thread>
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

/// Drains with a deadline; on timeout fails with the runtime's state report (gpuos_diagnose), twice,
/// 200 ms apart, so the report shows what still moves.
inline bool drain_or_report(Runtime& rt, std::chrono::seconds limit) {
  if (rt.drain(limit)) return true;
  const auto g = rt.generation();
  FAIL_CHECK("drain timed out (generation " << g.number << " from ticket " << g.first_ticket
                                           << "); runtime state:\n" << rt.diagnose());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  FAIL_CHECK("200 ms later:\n" << rt.diagnose());
  return false;
}

/// Waits until `running` (submitting threads count it down) reaches 0. Submitters block while the ring
/// is full, so if tasks stop completing they never finish: then fails with the runtime's state report
/// and ends the process, since the blocked threads cannot be joined.
inline void await_submitters(Runtime& rt, const std::atomic<int>& running, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (running.load() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (running.load() == 0) return;
  FAIL_CHECK("submitters did not finish within " << limit.count() << " s (tasks stopped completing); runtime state:\n"
                                                 << rt.diagnose());
  std::_Exit(1);
}

}  // namespace gpuos::test
