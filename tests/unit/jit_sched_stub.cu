// A stand-in for the resident kernel in the JIT link tests: it calls operators through the image's
// jump table exactly as the scheduler does (gpuos_op_table is defined by the generated table TU).
// Compiled by nvcc at build time to an LTO object (-rdc=true -dlto -c).
#include "gpuos/op.cuh"

extern "C" __device__ const gpuos::OpEntry* const gpuos_op_table[GPUOS_MAX_OPS];

extern "C" __global__ void __launch_bounds__(GPUOS_BLOCK_THREADS)
    gpuos_jit_test_run(unsigned op, const void* args, unsigned tiles, unsigned* status) {
  __shared__ gpuos::TileCtx ctx;
  __shared__ double scratch;
  extern __shared__ unsigned char smem[];
  const gpuos::OpEntry* e = op < GPUOS_MAX_OPS ? gpuos_op_table[op] : nullptr;
  if (!e || !e->tile) {
    if (threadIdx.x == 0) *status = 1;
    return;
  }
  for (unsigned t = 0; t < tiles; ++t) {
    if (threadIdx.x == 0) {
      ctx = gpuos::TileCtx{t, tiles, 0, smem, &scratch};
      if (t == 0) scratch = 0;
    }
    __syncthreads();
    e->tile(args, ctx, 1u);
    __syncthreads();
  }
  if (e->finish) e->finish(args, ctx);
  if (threadIdx.x == 0) *status = 0;
}
