// Where NVRTC finds the headers an operator source includes, at run time, without the source tree.
//
// gpuos/op.cuh, gpuos/abi.h and gpuos/builtin_ops.h are embedded in the library at build time and
// written out once per content (and per user) under the system temp directory; GPUOS_INCLUDE_DIR
// overrides that directory. CCCL (cuda/std/...) comes from the CUDA toolkit, a stated requirement: the
// toolkit's directory found at build time, or GPUOS_CCCL_DIR.
#pragma once

#include <string>
#include <vector>

namespace gpuos::jit {

/// The directory holding gpuos/op.cuh for NVRTC: GPUOS_INCLUDE_DIR when set, else the embedded headers
/// written out (idempotent, atomic: a directory is renamed into place complete). Throws Failure when
/// they cannot be written.
std::string operator_include_dir();

/// CCCL's include directory: GPUOS_CCCL_DIR when set, else the toolkit's, as found at build time.
/// Throws Failure(GPUOS_ERR_UNSUPPORTED) naming both when it holds no cuda/std/type_traits.
std::string cccl_include_dir();

/// {operator_include_dir(), cccl_include_dir()}: the -I directories of every operator compile.
std::vector<std::string> runtime_include_dirs();

}  // namespace gpuos::jit
