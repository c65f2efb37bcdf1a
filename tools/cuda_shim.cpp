#include "cuda_shim.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace gpuos::tools {
namespace {

CudaShim g_shim;
bool g_loaded = false;
std::string g_why;
std::once_flag g_once;

void load_once() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    g_why = std::string("no CUDA driver: cannot load libcuda.so.1 (") + (e ? e : "unknown") + ")";
    return;
  }
  CudaShim s;
  std::string missing;
  // Versioned names: the unversioned symbols of libcuda keep the old (CUDA 3.x) ABI for compatibility.
  auto bind = [&](auto& fn, const char* name) {
    void* p = dlsym(lib, name);
    if (!p) missing += std::string(missing.empty() ? "" : ", ") + name;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  bind(s.init, "cuInit");
  bind(s.get_error_name, "cuGetErrorName");
  bind(s.device_get, "cuDeviceGet");
  bind(s.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  bind(s.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
  bind(s.ctx_set_current, "cuCtxSetCurrent");
  bind(s.mem_alloc, "cuMemAlloc_v2");
  bind(s.mem_free, "cuMemFree_v2");
  bind(s.memcpy_htod, "cuMemcpyHtoD_v2");
  bind(s.memcpy_dtoh, "cuMemcpyDtoH_v2");
  bind(s.memcpy_htod_async, "cuMemcpyHtoDAsync_v2");
  bind(s.memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2");
  bind(s.stream_create, "cuStreamCreate");
  bind(s.stream_synchronize, "cuStreamSynchronize");
  bind(s.stream_destroy, "cuStreamDestroy_v2");
  if (!missing.empty()) {
    g_why = "the CUDA driver is too old: libcuda.so.1 lacks " + missing;
    return;
  }
  g_shim = s;
  g_loaded = true;
}

}  // namespace

bool load_cuda_shim(std::string* why) {
  std::call_once(g_once, load_once);
  if (!g_loaded && why) *why = g_why;
  return g_loaded;
}

const CudaShim& cu() { return g_shim; }

void cu_fail(CUresult r, const char* call, const char* file, int line) {
  const char* name = nullptr;
  if (!g_shim.get_error_name || g_shim.get_error_name(r, &name) != CUDA_SUCCESS || !name) name = nullptr;
  if (name)
    std::fprintf(stderr, "gpuos: error: %s failed: %s (%s:%d)\n", call, name, file, line);
  else
    std::fprintf(stderr, "gpuos: error: %s failed: CUresult %d (%s:%d)\n", call, static_cast<int>(r), file,
                 line);
  std::exit(1);
}

// ---- PrimaryContext ---------------------------------------------------------------------------------

PrimaryContext::PrimaryContext(int ordinal) {
  GPUOS_TOOL_CU(cu().init(0));  // idempotent; the runtime calls it too
  GPUOS_TOOL_CU(cu().device_get(&dev_, ordinal));
  GPUOS_TOOL_CU(cu().primary_ctx_retain(&ctx_, dev_));
  make_current();
}

PrimaryContext::~PrimaryContext() {
  if (ctx_) GPUOS_TOOL_CU(cu().primary_ctx_release(dev_));
}

void PrimaryContext::make_current() const { GPUOS_TOOL_CU(cu().ctx_set_current(ctx_)); }

// ---- DeviceBuffer -----------------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  GPUOS_TOOL_CU(cu().mem_alloc(&ptr_, bytes ? bytes : 1));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) GPUOS_TOOL_CU(cu().mem_free(ptr_));
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) GPUOS_TOOL_CU(cu().mem_free(ptr_));
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

// ---- CopyStream -------------------------------------------------------------------------------------

CopyStream::CopyStream() { GPUOS_TOOL_CU(cu().stream_create(&stream_, CU_STREAM_NON_BLOCKING)); }

CopyStream::~CopyStream() {
  if (stream_) GPUOS_TOOL_CU(cu().stream_destroy(stream_));
}

void CopyStream::upload(CUdeviceptr dst, const void* src, std::size_t bytes) const {
  GPUOS_TOOL_CU(cu().memcpy_htod_async(dst, src, bytes, stream_));
  GPUOS_TOOL_CU(cu().stream_synchronize(stream_));
}

void CopyStream::download(void* dst, CUdeviceptr src, std::size_t bytes) const {
  GPUOS_TOOL_CU(cu().memcpy_dtoh_async(dst, src, bytes, stream_));
  GPUOS_TOOL_CU(cu().stream_synchronize(stream_));
}

}  // namespace gpuos::tools
