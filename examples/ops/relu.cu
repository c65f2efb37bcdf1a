// relu: y[i] = max(x[i], 0), with NaN kept as NaN (in place when y == x).
// Tiles: ceil(n / 4096), the tiling of the element-wise built-ins (gpuos_tiles_for in gpuos/builtin_ops.h).
#include "gpuos/op.cuh"

constexpr unsigned long long kElemsPerTile = 4096;

struct ReluArgs {
  float* y;
  const float* x;
  unsigned long long n;
};

__device__ void relu_tile(const ReluArgs& a, const gpuos::TileCtx& c) {
  const unsigned long long end = c.last(kElemsPerTile, a.n);
  for (unsigned long long i = c.first(kElemsPerTile) + threadIdx.x; i < end; i += blockDim.x) {
    const float v = a.x[i];
    a.y[i] = v < 0.0f ? 0.0f : v;  // not fmaxf: fmaxf(NaN, 0) is 0 and would hide a NaN
  }
}

GPUOS_OPERATOR(relu, ReluArgs, relu_tile)
