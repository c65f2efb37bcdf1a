#include "host/device.hpp"

#include <algorithm>
#include <utility>
#include <string>

#include "host/cu_check.hpp"
#include "host/driver.hpp"
#include "kernel/tlsf.hpp"  // the heap's limits, for validate_options
#include "kernel/wire.h"

extern "C" {
extern const unsigned char gpuos_image_cubin[];
extern const size_t gpuos_image_cubin_size;
}

namespace gpuos::detail {
namespace {

int attr(CUdevice d, CUdevice_attribute a) {
  int v = 0;
  GPUOS_CU_TRY(drv().cuDeviceGetAttribute(&v, a, d));
  return v;
}

/// Gives the resident kernel just the shared memory its GPUOS_MIN_BLOCKS_PER_SM blocks need (with `stage`
/// bytes of stage memory each) and the rest of each SM's unified memory as L1. Operators are called
/// through the jump table, and a callee saves and restores the registers it uses through the stack on
/// every call: with the driver's default carve-out (100 KB of shared memory on an H100), that stack
/// traffic spills from L1 to L2 and DRAM (docs/benchmarks.md, Large task).
CUresult prefer_l1(CUfunction fn, CUdevice d, std::uint32_t stage) {
  int smem = 0, reserved = 0, per_sm_max = 0;
  CUresult r = drv().cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
  if (r == CUDA_SUCCESS)
    r = drv().cuDeviceGetAttribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, d);
  if (r == CUDA_SUCCESS)
    r = drv().cuDeviceGetAttribute(&per_sm_max, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, d);
  if (r != CUDA_SUCCESS || per_sm_max <= 0) return r;
  const long long need = (static_cast<long long>(smem) + stage + reserved) * GPUOS_MIN_BLOCKS_PER_SM;
  const long long pct = std::min<long long>(100, (need * 100 + per_sm_max - 1) / per_sm_max);
  return drv().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, static_cast<int>(pct));
}

/// A kernel's own (static) shared memory per block and the most a block may have on the device.
struct SharedRoom {
  int own = 0, optin = 0;
  bool fits(std::uint32_t stage) const { return static_cast<long long>(own) + stage <= optin; }
};
CUresult shared_room(CUfunction fn, CUdevice d, SharedRoom& room) {
  CUresult r = drv().cuFuncGetAttribute(&room.own, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
  if (r == CUDA_SUCCESS)
    r = drv().cuDeviceGetAttribute(&room.optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d);
  return r;
}

}  // namespace

CtxScope::CtxScope(CUcontext c) {
  GPUOS_CU_TRY(drv().cuCtxSetCurrent(c));
  GPUOS_CU_TRY(drv().cuThreadExchangeStreamCaptureMode(&previous_));  // previous_ holds relaxed going in
}

CtxScope::~CtxScope() { drv().cuThreadExchangeStreamCaptureMode(&previous_); }

void validate_options(const gpuos_options& o) {
  if (o.struct_size != sizeof(gpuos_options))
    fail(GPUOS_ERR_INVALID_ARG, "gpuos_options.struct_size is " + std::to_string(o.struct_size) + ", expected " +
                                    std::to_string(sizeof(gpuos_options)) + " (call gpuos_options_init)");
  const uint32_t c = o.queue_capacity;
  if (c < 64 || c > (1u << 22) || (c & (c - 1)) != 0)
    fail(GPUOS_ERR_INVALID_ARG, "queue_capacity must be a power of two in [64, 4194304], got " + std::to_string(c));
  if (o.heap_bytes != 0 && (o.heap_bytes < (1ull << 20) || o.heap_bytes >= (1ull << 48)))
    fail(GPUOS_ERR_INVALID_ARG,
         "heap_bytes must be 0 (no heap) or in [1 MiB, 256 TiB), got " + std::to_string(o.heap_bytes));
  if (o.heap_arenas > tlsf::kMaxArenas)
    fail(GPUOS_ERR_INVALID_ARG, "heap_arenas must be at most " + std::to_string(tlsf::kMaxArenas) + ", got " +
                                    std::to_string(o.heap_arenas));
  for (auto [name, v] : {std::pair{"slice_us", o.slice_us}, std::pair{"park_us", o.park_us}})
    if (v != 0 && (v < 100 || v > 10000000))
      fail(GPUOS_ERR_INVALID_ARG,
           std::string("gpuos_options.") + name + " must be 0 (never) or in [100, 10000000], got " + std::to_string(v));
  if (o.deadline_ms != 0 && o.deadline_ms < GPUOS_MIN_DEADLINE_MS)
    fail(GPUOS_ERR_INVALID_ARG,
         "gpuos_options.deadline_ms must be 0 (no watchdog) or at least " + std::to_string(GPUOS_MIN_DEADLINE_MS) +
             ", got " + std::to_string(o.deadline_ms));
  if (o.stage_bytes % 16 != 0)
    fail(GPUOS_ERR_INVALID_ARG, "gpuos_options.stage_bytes must be a multiple of 16, got " + std::to_string(o.stage_bytes));
  if (o.heap_flags & ~GPUOS_HEAP_CHECKED)
    fail(GPUOS_ERR_INVALID_ARG, "heap_flags has unknown bits: " + std::to_string(o.heap_flags));
  for (const char* d : {o.cache_dir, o.include_dir, o.cccl_dir})
    if (d && !*d) fail(GPUOS_ERR_INVALID_ARG, "gpuos_options: a directory is an empty string (NULL = the default)");
}

DeviceChoice choose_device(const gpuos_options& o) {
  load_driver();
  int count = 0;
  GPUOS_CU_TRY(drv().cuDeviceGetCount(&count));
  if (count == 0) fail(GPUOS_ERR_NO_DEVICE, "no CUDA device is visible");
  if (o.device < 0 || o.device >= count)
    fail(GPUOS_ERR_NO_DEVICE,
         "device " + std::to_string(o.device) + " does not exist (" + std::to_string(count) + " visible)");
  DeviceChoice c;
  GPUOS_CU_TRY(drv().cuDeviceGet(&c.dev, o.device));
  gpuos_device_info& info = c.info;
  info.ordinal = o.device;
  GPUOS_CU_TRY(drv().cuDeviceGetName(info.name, sizeof(info.name) - 1, c.dev));
  info.cc_major = attr(c.dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(c.dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(c.dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.block_threads = GPUOS_BLOCK_THREADS;
  size_t mem = 0;
  GPUOS_CU_TRY(drv().cuDeviceTotalMem(&mem, c.dev));
  info.total_mem = mem;
  info.driver_version = drv().version;

  const std::string name = std::string("device '") + info.name + "'";
  if (info.cc_major * 10 + info.cc_minor != GPUOS_CUDA_ARCH)
    fail(GPUOS_ERR_UNSUPPORTED, name + " is compute capability " + std::to_string(info.cc_major) + "." +
                                    std::to_string(info.cc_minor) + "; this build of gpuos carries code for sm_" +
                                    std::to_string(GPUOS_CUDA_ARCH) + " only (rebuild with -Dgpu_arch=" +
                                    std::to_string(info.cc_major * 10 + info.cc_minor) + ")");
  if (!attr(c.dev, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH))
    fail(GPUOS_ERR_UNSUPPORTED, name + " does not support cooperative launch");
  if (!attr(c.dev, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) || !attr(c.dev, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))
    fail(GPUOS_ERR_UNSUPPORTED, name + " cannot map host memory");
  return c;
}

CUcontext retain_primary_context(CUdevice dev, const common::Config& cfg) {
  static constexpr std::pair<const char*, CUctx_flags> kModes[] = {
      {"auto", CU_CTX_SCHED_AUTO}, {"spin", CU_CTX_SCHED_SPIN}, {"yield", CU_CTX_SCHED_YIELD},
      {"blocking", CU_CTX_SCHED_BLOCKING_SYNC}};
  for (const auto& [mode, flag] : kModes)
    if (cfg.ctx_sched == mode) GPUOS_CU_TRY(drv().cuDevicePrimaryCtxSetFlags(dev, flag));
  CUcontext ctx = nullptr;
  GPUOS_CU_TRY(drv().cuDevicePrimaryCtxRetain(&ctx, dev));
  return ctx;
}

Image load_boot_image() {
  Image img;
  GPUOS_CU_TRY(drv().cuModuleLoadData(&img.module, gpuos_image_cubin));
  img.bytes = gpuos_image_cubin_size;
  try {
    CUdeviceptr v = 0;
    size_t bytes = 0;
    GPUOS_CU_TRY(drv().cuModuleGetGlobal(&v, &bytes, img.module, "gpuos_image_abi_version"));
    unsigned int abi = 0;
    GPUOS_CU_TRY(drv().cuMemcpyDtoH(&abi, v, sizeof(abi)));
    if (abi != GPUOS_ABI_VERSION)
      fail(GPUOS_ERR_INTERNAL, "device image ABI version " + std::to_string(abi) + " != host ABI version " +
                                   std::to_string(GPUOS_ABI_VERSION));
    GPUOS_CU_TRY(drv().cuModuleGetFunction(&img.kernel, img.module, "gpuos_main"));
  } catch (...) {
    drv().cuModuleUnload(img.module);
    throw;
  }
  return img;
}

CUresult blocks_per_sm(CUfunction fn, const gpuos_options& o, const common::Config& cfg, int& per_sm) {
  CUdevice d = 0;
  CUresult r = drv().cuDeviceGet(&d, o.device);
  SharedRoom room;
  if (r == CUDA_SUCCESS) r = shared_room(fn, d, room);
  if (r == CUDA_SUCCESS && !room.fits(o.stage_bytes)) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    r = drv().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(o.stage_bytes));
  if (r == CUDA_SUCCESS && cfg.carveout == "l1") r = prefer_l1(fn, d, o.stage_bytes);
  if (r == CUDA_SUCCESS)
    r = drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, GPUOS_BLOCK_THREADS, o.stage_bytes);
  if (r == CUDA_SUCCESS && o.blocks_per_sm != 0) per_sm = std::min<int>(per_sm, static_cast<int>(o.blocks_per_sm));
  return r;
}

std::uint32_t grid_of(int per_sm, const gpuos_options& o, const gpuos_device_info& info) {
  const int sms = o.sm_budget == 0 ? info.sm_count : std::min<int>(info.sm_count, static_cast<int>(o.sm_budget));
  const int grid = per_sm * sms;
  return grid >= 2 ? static_cast<std::uint32_t>(grid) : 0u;
}

std::uint32_t launch_geometry(CUfunction fn, const gpuos_options& o, const common::Config& cfg, gpuos_device_info& info) {
  CUdevice d = 0;
  SharedRoom room;
  GPUOS_CU_TRY(drv().cuDeviceGet(&d, o.device));
  GPUOS_CU_TRY(shared_room(fn, d, room));
  if (!room.fits(o.stage_bytes))
    fail(GPUOS_ERR_INVALID_ARG, "gpuos_options.stage_bytes " + std::to_string(o.stage_bytes) +
                                    " does not fit: a block of the resident kernel may have " + std::to_string(room.optin) +
                                    " bytes of shared memory on this device and uses " + std::to_string(room.own) + " itself");
  int per_sm = 0;
  GPUOS_CU_TRY(blocks_per_sm(fn, o, cfg, per_sm));
  const std::uint32_t grid = grid_of(per_sm, o, info);
  info.blocks_per_sm = per_sm;
  info.stage_bytes = static_cast<std::int32_t>(o.stage_bytes);
  info.grid_blocks = static_cast<int32_t>(grid);
  if (grid == 0)
    fail(GPUOS_ERR_UNSUPPORTED, "the resident kernel needs at least 2 co-resident blocks (front end + worker); "
                                "the occupancy calculator allows " + std::to_string(per_sm) + " per SM on " +
                                std::to_string(o.sm_budget == 0 ? info.sm_count : o.sm_budget) + " SMs");
  return grid;
}

gpuos_options with_config_defaults(gpuos_options o, const common::Config& cfg) {
  if (o.sm_budget == 0) o.sm_budget = static_cast<std::uint32_t>(cfg.sm_budget);
  return o;
}

gpuos_device_info describe_device(const gpuos_options& given) {
  validate_options(given);
  const common::Config cfg = common::Config::from_env();
  const gpuos_options o = with_config_defaults(given, cfg);
  DeviceChoice c = choose_device(o);
  CUcontext ctx = nullptr;
  GPUOS_CU_TRY(drv().cuDevicePrimaryCtxRetain(&ctx, c.dev));
  struct Release {
    CUdevice d;
    ~Release() { drv().cuDevicePrimaryCtxRelease(d); }
  } release{c.dev};
  CtxScope scope(ctx);
  Image img = load_boot_image();
  struct Unload {
    CUmodule m;
    ~Unload() { drv().cuModuleUnload(m); }
  } unload{img.module};
  launch_geometry(img.kernel, o, cfg, c.info);
  return c.info;
}

}  // namespace gpuos::detail
