// rmsnorm_row: for each row r, y[r][j] = x[r][j] / sqrt(mean_j(x[r][j]^2) + eps) * w[j] (w may be null:
// no weight). One tile per row: tiles = rows. `ld` is the distance between rows in elements; y may be x.
// The sum of squares is accumulated in float per thread, then reduced over the block.
#include "gpuos/op.cuh"

struct RmsnormRowArgs {
  float* y;
  const float* x;
  const float* w;
  unsigned long long cols;
  unsigned long long ld;
  float eps;
};

namespace {

/// Sum over the block, returned to every thread. `red` holds one float per warp.
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < warps ? red[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace

__device__ void rmsnorm_row_tile(const RmsnormRowArgs& a, const gpuos::TileCtx& c) {
  const float* x = a.x + static_cast<unsigned long long>(c.tile) * a.ld;
  float* y = a.y + static_cast<unsigned long long>(c.tile) * a.ld;

  float ss = 0.0f;
  for (unsigned long long j = threadIdx.x; j < a.cols; j += blockDim.x) ss = fmaf(x[j], x[j], ss);
  ss = block_sum(ss, static_cast<float*>(c.smem));

  const float r = rsqrtf(ss / static_cast<float>(a.cols) + a.eps);
  for (unsigned long long j = threadIdx.x; j < a.cols; j += blockDim.x)
    y[j] = x[j] * r * (a.w ? a.w[j] : 1.0f);
}

GPUOS_OPERATOR(rmsnorm_row, RmsnormRowArgs, rmsnorm_row_tile)
