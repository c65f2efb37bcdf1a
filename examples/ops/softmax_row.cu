// softmax_row: for each row r of a row-major matrix, y[r][j] = exp(x[r][j] - max_r) / sum_j exp(...).
// One tile per row: tiles = rows. `ld` is the distance between rows in elements (>= cols); y may be x.
// The max is subtracted first, so large inputs do not overflow; a row of -inf gives NaN, as in PyTorch.
// gpuos/op.cuh first: sources that begin with the same include share NVRTC's precompiled header.
#include "gpuos/op.cuh"

#include <cuda/std/limits>

struct SoftmaxRowArgs {
  float* y;
  const float* x;
  unsigned long long cols;
  unsigned long long ld;
};

namespace {

/// All-reduce over the block (every thread gets the result). `red` holds one float per warp; `identity`
/// is op's neutral element.
template <class Op>
__device__ float block_allreduce(float v, float* red, Op op, float identity) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  __syncthreads();  // red may still be read by the previous reduction
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < warps ? red[lane] : identity;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

}  // namespace

__device__ void softmax_row_tile(const SoftmaxRowArgs& a, const gpuos::TileCtx& c) {
  const float* x = a.x + static_cast<unsigned long long>(c.tile) * a.ld;
  float* y = a.y + static_cast<unsigned long long>(c.tile) * a.ld;
  float* red = static_cast<float*>(c.smem);

  float m = -cuda::std::numeric_limits<float>::infinity();
  for (unsigned long long j = threadIdx.x; j < a.cols; j += blockDim.x) m = fmaxf(m, x[j]);
  m = block_allreduce(m, red, Max{}, -cuda::std::numeric_limits<float>::infinity());

  float s = 0.0f;
  for (unsigned long long j = threadIdx.x; j < a.cols; j += blockDim.x) s += expf(x[j] - m);
  s = block_allreduce(s, red, Sum{}, 0.0f);

  const float inv = 1.0f / s;
  for (unsigned long long j = threadIdx.x; j < a.cols; j += blockDim.x) y[j] = expf(x[j] - m) * inv;
}

GPUOS_OPERATOR(softmax_row, SoftmaxRowArgs, softmax_row_tile)
