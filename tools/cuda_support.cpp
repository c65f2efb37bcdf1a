#include "tools/cuda_support.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "host/cu_check.hpp"
#include "host/driver.hpp"

namespace gpuos::support {

using detail::drv;

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

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  detail::load_driver();
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

Stream::Stream() {
  detail::load_driver();
  GPUOS_CU_TRY(drv().cuStreamCreate(&s_, CU_STREAM_NON_BLOCKING));
}

Stream::~Stream() {
  if (s_) drv().cuStreamDestroy(s_);
}

void Stream::sync() const { GPUOS_CU_TRY(drv().cuStreamSynchronize(s_)); }

void Stream::upload(CUdeviceptr dst, const void* src, std::size_t bytes) const {
  GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(dst, src, bytes, s_));
  sync();
}

void Stream::download(void* dst, CUdeviceptr src, std::size_t bytes) const {
  GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(dst, src, bytes, s_));
  sync();
}

void Stream::poison(CUdeviceptr dst, std::size_t count) const {
  GPUOS_CU_TRY(drv().cuMemsetD32Async(dst, 0x7fc00000u, count, s_));
  sync();
}

Module::Module(const void* image) {
  detail::load_driver();
  GPUOS_CU_TRY(drv().cuModuleLoadData(&mod_, image));
}

Module::~Module() {
  if (mod_) drv().cuModuleUnload(mod_);
}

CUfunction Module::get(const char* name) const {
  CUfunction f = nullptr;
  GPUOS_CU_TRY(drv().cuModuleGetFunction(&f, mod_, name));
  return f;
}

MappedHost::MappedHost(std::size_t bytes) {
  detail::load_driver();
  GPUOS_CU_TRY(drv().cuMemHostAlloc(&host_, bytes ? bytes : 1, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  std::memset(host_, 0, bytes);
  try {
    GPUOS_CU_TRY(drv().cuMemHostGetDevicePointer(&dev_, host_, 0));
  } catch (...) {
    drv().cuMemFreeHost(host_);
    throw;
  }
}

MappedHost::~MappedHost() {
  if (host_) drv().cuMemFreeHost(host_);
}

Event::Event() {
  detail::load_driver();
  GPUOS_CU_TRY(drv().cuEventCreate(&e_, CU_EVENT_DEFAULT));
}

Event::~Event() {
  if (e_) drv().cuEventDestroy(e_);
}

void KernelLaunch::launch(CUstream s) const {
  GPUOS_CU_TRY(drv().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, smem, s, params, nullptr));
}

KernelGraph::KernelGraph() {
  detail::load_driver();
  GPUOS_CU_TRY(drv().cuGraphCreate(&graph_, 0));
}

KernelGraph::~KernelGraph() {
  if (exec_) drv().cuGraphExecDestroy(exec_);
  if (graph_) drv().cuGraphDestroy(graph_);
}

std::size_t KernelGraph::add(const KernelLaunch& k, std::span<const std::size_t> after) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = k.fn;
  p.gridDimX = k.grid;
  p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = k.block;
  p.blockDimY = p.blockDimZ = 1;
  p.sharedMemBytes = k.smem;
  p.kernelParams = k.params;
  std::vector<CUgraphNode> deps;
  deps.reserve(after.size());
  for (std::size_t i : after) {
    if (i >= nodes_.size()) throw std::out_of_range("KernelGraph::add: no node " + std::to_string(i));
    deps.push_back(nodes_[i]);
  }
  CUgraphNode node = nullptr;
  GPUOS_CU_TRY(drv().cuGraphAddKernelNode(&node, graph_, deps.data(), deps.size(), &p));
  nodes_.push_back(node);
  return nodes_.size() - 1;
}

void KernelGraph::instantiate() { GPUOS_CU_TRY(drv().cuGraphInstantiateWithFlags(&exec_, graph_, 0)); }

void KernelGraph::launch(CUstream s) const { GPUOS_CU_TRY(drv().cuGraphLaunch(exec_, s)); }

OwnContext::OwnContext(CUdevice dev) {
  detail::load_driver();
  GPUOS_CU_TRY(drv().cuCtxGetCurrent(&previous_));
  GPUOS_CU_TRY(drv().cuCtxCreate(&ctx_, nullptr, 0, dev));
}

OwnContext::~OwnContext() {
  if (ctx_) drv().cuCtxDestroy(ctx_);
  drv().cuCtxSetCurrent(previous_);
}

namespace {
CUcontext g_ctx = nullptr;  // use_device's, for the rest of the process
}

void use_device(int ordinal) {
  static const CUcontext ctx = [ordinal] {
    detail::load_driver();
    CUdevice d = 0;
    GPUOS_CU_TRY(drv().cuDeviceGet(&d, ordinal));
    CUcontext c = nullptr;
    GPUOS_CU_TRY(drv().cuDevicePrimaryCtxRetain(&c, d));
    return c;
  }();
  g_ctx = ctx;
  GPUOS_CU_TRY(drv().cuCtxSetCurrent(ctx));
}

void ensure_context() {
  if (!g_ctx) {
    use_device(0);
    return;
  }
  CUcontext cur = nullptr;
  GPUOS_CU_TRY(drv().cuCtxGetCurrent(&cur));
  if (!cur) GPUOS_CU_TRY(drv().cuCtxSetCurrent(g_ctx));
}

const Stream& copy_stream() {
  ensure_context();
  static const Stream s;
  return s;
}

MemoryInfo device_memory() {
  ensure_context();
  MemoryInfo m;
  GPUOS_CU_TRY(drv().cuMemGetInfo(&m.free, &m.total));
  return m;
}

void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  ensure_context();
  copy_stream().upload(reinterpret_cast<CUdeviceptr>(dst), src, bytes);
}

void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  ensure_context();
  copy_stream().download(dst, reinterpret_cast<CUdeviceptr>(src), bytes);
}

void run_fresh_module(const Stream& s, CUdeviceptr out, std::uint32_t value) {
  static constexpr const char* kPtx = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .entry fresh_fill(.param .u64 p, .param .u32 value) {
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [value];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd2, %rd2, %rd3;
  st.global.u32 [%rd2], %r1;
  ret;
}
)";
  CUmodule m = nullptr;
  GPUOS_CU_TRY(drv().cuModuleLoadData(&m, kPtx));
  CUfunction f = nullptr;
  CUresult r = drv().cuModuleGetFunction(&f, m, "fresh_fill");
  void* args[] = {&out, &value};
  if (r == CUDA_SUCCESS) r = drv().cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s.get(), args, nullptr);
  if (r == CUDA_SUCCESS) r = drv().cuStreamSynchronize(s.get());
  drv().cuModuleUnload(m);
  GPUOS_CU_TRY(r);
}

}  // namespace gpuos::support
