// Kernels the benchmarks launch directly, to compare gpuos with the plain CUDA way of doing the same.
// Compiled to a cubin at build time and embedded; loaded with cuModuleLoadData before gpuos boots.
#include "gpuos/builtin_ops.h"
#include "gpuos/op.cuh"

#include "builtin_ops.cuh"  // kernel/: the tile functions the resident kernel runs

/// Smallest possible kernel: the cost of a launch and nothing else.
extern "C" __global__ void bench_empty() {}

/// Sentinel the host writes to end bench_ping_pong.
#define BENCH_PING_STOP 0xffffffffu

/// The latency floor of a doorbell in mapped host memory: one thread polls *ping (each read is a PCIe
/// round trip) and echoes every new value to *pong with a posted write, until it reads the sentinel.
/// No fence after the echo: a fence would only delay the next poll, not the echo.
extern "C" __global__ void bench_ping_pong(const volatile unsigned* ping, volatile unsigned* pong) {
  unsigned last = 0;
  for (;;) {
    const unsigned v = *ping;
    if (v == last) continue;
    if (v == BENCH_PING_STOP) return;
    *pong = v;
    last = v;
  }
}

/// One small task as a kernel: out = a + b on n elements, one thread per element.
extern "C" __global__ void __launch_bounds__(256) bench_add(float* out, const float* a, const float* b,
                                                            unsigned long long n) {
  const unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

/// The built-in add operator's tile function launched as an ordinary kernel: one block per tile, as
/// the resident kernel runs it, so bench_large compares scheduling, not code.
extern "C" __global__ void __launch_bounds__(GPUOS_BLOCK_THREADS)
    bench_direct_add(gpuos_binary_args args, double* scratch) {
  __shared__ __align__(16) unsigned char smem[GPUOS_TILE_SMEM_BYTES];
  const gpuos::TileCtx ctx{blockIdx.x, gridDim.x, 0ull, smem, scratch};
  gpuos::builtin::add_tile(args, ctx);
}
