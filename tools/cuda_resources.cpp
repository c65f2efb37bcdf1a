#include "cuda_resources.hpp"

#include "driver.hpp"
#include "error.hpp"

namespace gpuos::tools {

using detail::drv;

// ---- PrimaryContext ---------------------------------------------------------------------------------

PrimaryContext::PrimaryContext(int ordinal) {
  detail::load_driver();  // idempotent; the runtime loads it too
  GPUOS_CU_TRY(drv().cuDeviceGet(&dev_, ordinal));
  GPUOS_CU_TRY(drv().cuDevicePrimaryCtxRetain(&ctx_, dev_));
  make_current();
}

PrimaryContext::~PrimaryContext() {
  if (ctx_) drv().cuDevicePrimaryCtxRelease(dev_);
}

void PrimaryContext::make_current() const { GPUOS_CU_TRY(drv().cuCtxSetCurrent(ctx_)); }

// ---- DeviceBuffer -----------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  GPUOS_CU_TRY(drv().cuMemAlloc(&ptr_, bytes ? bytes : 1));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) drv().cuMemFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) drv().cuMemFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

// ---- CopyStream -------------------------------------------------------------------------------------

CopyStream::CopyStream() { GPUOS_CU_TRY(drv().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING)); }

CopyStream::~CopyStream() {
  if (stream_) drv().cuStreamDestroy(stream_);
}

void CopyStream::upload(CUdeviceptr dst, const void* src, std::size_t bytes) const {
  GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(dst, src, bytes, stream_));
  GPUOS_CU_TRY(drv().cuStreamSynchronize(stream_));
}

void CopyStream::download(void* dst, CUdeviceptr src, std::size_t bytes) const {
  GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(dst, src, bytes, stream_));
  GPUOS_CU_TRY(drv().cuStreamSynchronize(stream_));
}

}  // namespace gpuos::tools
