// saxpby: y[i] = alpha * x[i] + beta * y[i]. With beta == 0, y is written without being read (so it
// may hold garbage or NaN beforehand, as in BLAS).
// Tiles: ceil(n / 4096), the tiling of the element-wise built-ins (gpuos_tiles_for in gpuos/builtin_ops.h).
#include "gpuos/op.cuh"

constexpr unsigned long long kElemsPerTile = 4096;

struct SaxpbyArgs {
  float* y;
  const float* x;
  unsigned long long n;
  float alpha;
  float beta;
};

__device__ void saxpby_tile(const SaxpbyArgs& a, const gpuos::TileCtx& c) {
  const unsigned long long end = c.last(kElemsPerTile, a.n);
  const unsigned long long first = c.first(kElemsPerTile) + threadIdx.x;
  if (a.beta == 0.0f) {
    for (unsigned long long i = first; i < end; i += blockDim.x) a.y[i] = a.alpha * a.x[i];
  } else {
    for (unsigned long long i = first; i < end; i += blockDim.x) a.y[i] = fmaf(a.alpha, a.x[i], a.beta * a.y[i]);
  }
}

GPUOS_OPERATOR(saxpby, SaxpbyArgs, saxpby_tile)
