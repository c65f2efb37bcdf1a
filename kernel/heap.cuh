// Device-side setup and checking of a TLSF heap (kernel/tlsf.hpp), shared by the resident kernel's image
// and the benchmarks: the kernels that initialise a heap in device memory and check it arena by arena.
// The host allocates the control block and the pool and launches these; it never touches the metadata.
#pragma once

#include "kernel/tlsf.hpp"

/// Lays out a heap (one thread). *status receives the tlsf::Status of init_layout.
extern "C" __global__ void gpuos_heap_layout(gpuos::tlsf::Control* c, void* pool, unsigned long long pool_bytes,
                                             unsigned arenas, unsigned long long large_bytes, unsigned flags,
                                             unsigned* status) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  gpuos::tlsf::Options o;
  o.large_bytes = large_bytes;
  o.flags = flags;
  *status = gpuos::tlsf::init_layout(c, pool, pool_bytes, arenas, o);
}

/// Initialises every arena of a laid-out heap, one thread each (after gpuos_heap_layout succeeded).
extern "C" __global__ void gpuos_heap_init_arenas(gpuos::tlsf::Control* c) {
  const unsigned n = gpuos::tlsf::arena_count(c);
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    gpuos::tlsf::init_arena(c, i);
}

namespace gpuos::heap {

/// Checks arenas [first, ...) with a stride, on the calling thread; returns the first failure in `r`
/// (and true) or false when every arena it checked holds.
__device__ inline bool check_strided(tlsf::Control* c, unsigned first, unsigned stride, tlsf::CheckResult& r) {
  const unsigned n = tlsf::detail::initialised(c) ? tlsf::arena_count(c) : 1;
  for (unsigned i = first; i < n; i += stride) {
    r = tlsf::check_one(c, i);
    if (!r.ok) return true;
  }
  return false;
}

}  // namespace gpuos::heap
