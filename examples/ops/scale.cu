// scale: y[i] = alpha * x[i] (in place when y == x).
// Tiles: ceil(n / 4096), the tiling of the element-wise built-ins (gpuos_tiles_for in gpuos/builtin_ops.h).
#include "gpuos/op.cuh"

constexpr unsigned long long kElemsPerTile = 4096;

struct ScaleArgs {
  float* y;
  const float* x;
  unsigned long long n;
  float alpha;
};

__device__ void scale_tile(const ScaleArgs& a, const gpuos::TileCtx& c) {
  const unsigned long long end = c.last(kElemsPerTile, a.n);
  for (unsigned long long i = c.first(kElemsPerTile) + threadIdx.x; i < end; i += blockDim.x)
    a.y[i] = a.alpha * a.x[i];
}

GPUOS_OPERATOR(scale, ScaleArgs, scale_tile)
