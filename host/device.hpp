// Device selection and launch geometry: which GPU, what it is, whether it can run the resident kernel,
// how many blocks the kernel launches with, and the boot image embedded in the library.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda.h>

#include "common/config.hpp"
#include "gpuos/gpuos.h"

namespace gpuos::detail {

/// A loaded device image: its module, the resident kernel in it and the grid that kernel launches with.
struct Image {
  CUmodule module = nullptr;
  CUfunction kernel = nullptr;
  std::uint32_t grid = 0;
  std::size_t bytes = 0;  ///< of the cubin (what a switch loads)
  std::uint32_t stage = 0;  ///< dynamic shared memory a launch gives each block (gpuos_options.stage_bytes)
};

/// Throws Failure(GPUOS_ERR_INVALID_ARG) naming the first bad field of `o`.
void validate_options(const gpuos_options& o);

/// For the scope, on the calling thread: makes a context current (driver calls need it) and sets the
/// thread's stream-capture interaction mode to relaxed, the previous mode restored at the end. A stream
/// capture in global mode (a framework's CUDA graph capture, torch.cuda.graph's default) on another
/// thread otherwise refuses every "potentially unsafe" driver call of this one with
/// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the runtime's queries and launches of its own stream included,
/// which have nothing to do with the capture.
class CtxScope {
 public:
  explicit CtxScope(CUcontext c);
  ~CtxScope();
  CtxScope(const CtxScope&) = delete;
  CtxScope& operator=(const CtxScope&) = delete;

 private:
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

/// The device `o.device` with its description (everything but the grid), checked able to run the
/// resident kernel (arch of this build, cooperative launch, mapped memory). Loads the driver.
struct DeviceChoice {
  CUdevice dev = 0;
  gpuos_device_info info{};
};
DeviceChoice choose_device(const gpuos_options& o);

/// Retains the device's primary context (the one frameworks in the process share), with the scheduling
/// flag GPUOS_CTX_SCHED asks for. Release with cuDevicePrimaryCtxRelease.
CUcontext retain_primary_context(CUdevice dev, const common::Config& cfg);

/// Loads the boot image embedded in the library and checks its ABI version. Needs an idle device.
/// `grid` is left 0 (launch_geometry computes it).
Image load_boot_image();

/// The options with what the configuration supplies where they leave a choice to it (sm_budget 0:
/// GPUOS_SM_BUDGET).
gpuos_options with_config_defaults(gpuos_options o, const common::Config& cfg);

/// The carve-out, stage memory and occupancy of an image's kernel under the options: blocks per SM, at
/// most o.blocks_per_sm when set. Returns the driver's result instead of throwing (a switch reacts to
/// it): CUDA_ERROR_INVALID_VALUE when o.stage_bytes does not fit beside the kernel's own shared memory.
CUresult blocks_per_sm(CUfunction fn, const gpuos_options& o, const common::Config& cfg, int& per_sm);
/// The grid for `per_sm` blocks per SM on the SMs the budget allows (at least 2 blocks, else 0).
std::uint32_t grid_of(int per_sm, const gpuos_options& o, const gpuos_device_info& info);
/// Both, for boot: fills info.blocks_per_sm, info.grid_blocks and info.stage_bytes; throws Failure when
/// the stage memory does not fit or the kernel does not fit 2 co-resident blocks.
std::uint32_t launch_geometry(CUfunction fn, const gpuos_options& o, const common::Config& cfg, gpuos_device_info& info);

/// gpuos_query_device: the device and the grid, without booting.
gpuos_device_info describe_device(const gpuos_options& o);

}  // namespace gpuos::detail
