// Where NVRTC finds the headers an operator source includes, at run time, without the source tree.
//
// The public headers an operator includes (gpuos/op.cuh and what it includes) are embedded in the
// library at build time and written out once per content (and per user) under the system temp
// directory; a configured directory (GPUOS_INCLUDE_DIR, gpuos_options.include_dir) replaces them. CCCL
// (cuda/std/...) comes from the CUDA toolkit, a stated requirement: the toolkit's directory found at
// build time, or a configured one (GPUOS_CCCL_DIR, gpuos_options.cccl_dir).
#pragma once

#include <string>
#include <vector>

#include "common/config.hpp"

namespace gpuos::jit {

/// The directory holding gpuos/op.cuh for NVRTC: `configured` when not empty, else the embedded headers
/// written out (idempotent, atomic: a directory is renamed into place complete). Throws Failure when
/// they cannot be written.
std::string operator_include_dir(const std::string& configured);

/// CCCL's include directory: `configured` when not empty, else the toolkit's, as found at build time.
/// Throws Failure(GPUOS_ERR_UNSUPPORTED) naming it when it holds no cuda/std/type_traits.
std::string cccl_include_dir(const std::string& configured);

/// The -I directories of every operator compile under configuration `cfg`:
/// {operator_include_dir(cfg.include_dir), cccl_include_dir(cfg.cccl_dir)}.
std::vector<std::string> runtime_include_dirs(const common::Config& cfg);

}  // namespace gpuos::jit
