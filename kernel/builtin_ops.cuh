// Tile functions of the built-in operators. Included by the device image (kernel/builtin_ops.cu
// registers them) and by the benchmarks (which launch the same functions as ordinary kernels).
//
// Element-wise tiles cover GPUOS_ELEMS_PER_TILE (4096) elements: 256 threads x 4 float4. A full tile
// whose pointers are 16-byte aligned issues all its loads before any store (bandwidth needs the bytes
// in flight); partial or unaligned tiles take a scalar loop.
#pragma once

#include "gpuos/builtin_ops.h"
#include "gpuos/op.cuh"

namespace gpuos::builtin {

inline constexpr unsigned kEpt = GPUOS_ELEMS_PER_TILE;
inline constexpr unsigned kVecPerThread = GPUOS_ELEMS_PER_TILE / (GPUOS_BLOCK_THREADS * 4);
static_assert(kVecPerThread * GPUOS_BLOCK_THREADS * 4 == GPUOS_ELEMS_PER_TILE);

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0;
}

/// out[i] = f(in[0][i], ..., in[N-1][i]) over this tile's elements.
template <int N, class F>
__device__ __forceinline__ void map_tile(const TileCtx& c, unsigned long long n, float* out,
                                         const float* const (&in)[N > 0 ? N : 1], F f) {
  const unsigned long long b = c.first(kEpt), e = c.last(kEpt, n);
  bool vec = (e - b == kEpt) && aligned16(out);
#pragma unroll
  for (int j = 0; j < N; ++j) vec = vec && aligned16(in[j]);
  if (vec) {
    float4 v[N > 0 ? N : 1][kVecPerThread];
#pragma unroll
    for (int j = 0; j < N; ++j)
#pragma unroll
      for (unsigned k = 0; k < kVecPerThread; ++k)
        v[j][k] = reinterpret_cast<const float4*>(in[j] + b)[k * GPUOS_BLOCK_THREADS + threadIdx.x];
#pragma unroll
    for (unsigned k = 0; k < kVecPerThread; ++k) {
      float4 r;
      float x[N > 0 ? N : 1];
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = v[j][k].x;
      r.x = f(x);
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = v[j][k].y;
      r.y = f(x);
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = v[j][k].z;
      r.z = f(x);
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = v[j][k].w;
      r.w = f(x);
      reinterpret_cast<float4*>(out + b)[k * GPUOS_BLOCK_THREADS + threadIdx.x] = r;
    }
  } else {
    for (unsigned long long i = b + threadIdx.x; i < e; i += blockDim.x) {
      float x[N > 0 ? N : 1];
#pragma unroll
      for (int j = 0; j < N; ++j) x[j] = in[j][i];
      out[i] = f(x);
    }
  }
}

__device__ inline void nop_tile(const TileCtx&) {}

__device__ inline void fill_tile(const gpuos_fill_args& a, const TileCtx& c) {
  const float* const in[1] = {nullptr};
  const float v = a.value;
  map_tile<0>(c, a.n, a.out, in, [v](const float*) { return v; });
}

__device__ inline void copy_tile(const gpuos_copy_args& a, const TileCtx& c) {
  const float* const in[1] = {a.in};
  map_tile<1>(c, a.n, a.out, in, [](const float* x) { return x[0]; });
}

__device__ inline void add_tile(const gpuos_binary_args& a, const TileCtx& c) {
  const float* const in[2] = {a.a, a.b};
  map_tile<2>(c, a.n, a.out, in, [](const float* x) { return x[0] + x[1]; });
}

__device__ inline void mul_tile(const gpuos_binary_args& a, const TileCtx& c) {
  const float* const in[2] = {a.a, a.b};
  map_tile<2>(c, a.n, a.out, in, [](const float* x) { return x[0] * x[1]; });
}

__device__ inline void axpy_tile(const gpuos_axpy_args& a, const TileCtx& c) {
  const float* const in[2] = {a.x, a.y};
  const float alpha = a.alpha;
  map_tile<2>(c, a.n, a.y, in, [alpha](const float* x) { return fmaf(alpha, x[0], x[1]); });
}

/// Block-wide sum of one value per thread; the result is valid in thread 0. Uses 32 floats of smem.
__device__ inline double block_sum(double v, void* smem) {
  auto* warp_sums = static_cast<double*>(smem);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? warp_sums[lane] : 0.0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  __syncthreads();  // warp_sums may be reused by the caller
  return v;
}

/// Partial sums of the tiles meet in the task's float64 scratch word; finish writes the result.
__device__ inline void sum_tile(const gpuos_sum_args& a, const TileCtx& c) {
  const unsigned long long b = c.first(kEpt), e = c.last(kEpt, a.n);
  float acc = 0.0f;
  if (e - b == kEpt && aligned16(a.x)) {
#pragma unroll
    for (unsigned k = 0; k < kVecPerThread; ++k) {
      const float4 v = reinterpret_cast<const float4*>(a.x + b)[k * GPUOS_BLOCK_THREADS + threadIdx.x];
      acc += (v.x + v.y) + (v.z + v.w);
    }
  } else {
    for (unsigned long long i = b + threadIdx.x; i < e; i += blockDim.x) acc += a.x[i];
  }
  const double s = block_sum(acc, c.smem);
  if (threadIdx.x == 0) atomicAdd(c.scratch, s);
}

__device__ inline void sum_finish(const gpuos_sum_args& a, const TileCtx& c) {
  if (threadIdx.x == 0) *a.out = static_cast<float>(*c.scratch);
}

}  // namespace gpuos::builtin
