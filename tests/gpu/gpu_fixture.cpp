#include "gpu_fixture.hpp"

#include <random>

#include "driver.hpp"
#include "error.hpp"

namespace gpuos::test {
namespace {
CUstream copy_stream() {
  static CUstream s = [] {
    CUstream st = nullptr;
    GPUOS_CU_TRY(detail::drv().cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    return st;
  }();
  return s;
}
}  // namespace

void use_device(int ordinal) {
  detail::load_driver();
  CUdevice d = 0;
  GPUOS_CU_TRY(detail::drv().cuDeviceGet(&d, ordinal));
  CUcontext c = nullptr;
  GPUOS_CU_TRY(detail::drv().cuDevicePrimaryCtxRetain(&c, d));
  GPUOS_CU_TRY(detail::drv().cuCtxSetCurrent(c));
}

DeviceBuffer::DeviceBuffer(size_t floats) : n_(floats) {
  use_device();
  GPUOS_CU_TRY(detail::drv().cuMemAlloc(&ptr_, (floats ? floats : 1) * sizeof(float)));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) detail::drv().cuMemFree(ptr_);
}

void DeviceBuffer::upload(const std::vector<float>& h, size_t offset) {
  use_device();
  GPUOS_CU_TRY(detail::drv().cuMemcpyHtoDAsync(ptr_ + offset * sizeof(float), h.data(), h.size() * sizeof(float),
                                               copy_stream()));
  GPUOS_CU_TRY(detail::drv().cuStreamSynchronize(copy_stream()));
}

std::vector<float> DeviceBuffer::download(size_t count, size_t offset) const {
  use_device();
  std::vector<float> h(count);
  GPUOS_CU_TRY(detail::drv().cuMemcpyDtoHAsync(h.data(), ptr_ + offset * sizeof(float), count * sizeof(float),
                                               copy_stream()));
  GPUOS_CU_TRY(detail::drv().cuStreamSynchronize(copy_stream()));
  return h;
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  use_device();
  GPUOS_CU_TRY(detail::drv().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, copy_stream()));
  GPUOS_CU_TRY(detail::drv().cuStreamSynchronize(copy_stream()));
}

void copy_to_host(void* dst, const void* src, size_t bytes) {
  use_device();
  GPUOS_CU_TRY(detail::drv().cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, copy_stream()));
  GPUOS_CU_TRY(detail::drv().cuStreamSynchronize(copy_stream()));
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace gpuos::test
