// (Seventh session: the Llama layer's projection shapes as nodes of their own, at the end of main.)
// Experiment: a bf16 matrix-vector product over a 64 MB weight matrix (16384 x 2048, the swiglu shape),
// tiles of 16 rows as the Llama operators cut them: (V0) weights through registers, warps taking K in
// turns (the operators' project16), against (V1) weights through shared memory by bulk async copies
// (TMA, cp.async.bulk + mbarrier), NS stages of 16 rows x 512 k. Also a plain read stream. GB/s.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)
typedef unsigned short bf16;
constexpr int kMaxRows = 8;

__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void reduce_out(float (&c)[4], float* red, float* out) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  reinterpret_cast<float4*>(red)[warp * 32u + lane] = make_float4(c[0], c[1], c[2], c[3]);
  __syncthreads();
  if (threadIdx.x < 128u) {
    const unsigned l = threadIdx.x >> 2, comp = threadIdx.x & 3u;
    float s = 0.0f;
    for (unsigned w = 0; w < 8; ++w) s += red[(w * 32u + l) * 4u + comp];
    const unsigned row = (l >> 2) + 8u * (comp >> 1), col = 2u * (l & 3u) + (comp & 1u);
    out[row * kMaxRows + col] = s;
  }
  __syncthreads();
}

// V0: the operators' project16 (kAhead 2, K in turns), one tile after another.
__global__ void __launch_bounds__(256) mv_regs(const bf16* W, const bf16* x, float* out, int N, int K, int R) {
  __shared__ float red[8 * 32 * 4];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3u;
  const bool has_row = g < (unsigned)R;
  const bf16* xrow = x + (has_row ? g : 0u) * K + t * 8u;
  for (int tile = blockIdx.x; tile < N / 16; tile += gridDim.x) {
    const bf16* wl = W + (size_t)(tile * 16 + g) * K + t * 8u;
    const bf16* wh = wl + 8ull * K;
    float c[4] = {0, 0, 0, 0};
    uint4 a[2], b[2];
    unsigned k = warp * 64u;
    a[0] = ld_stream(wl + k); b[0] = ld_stream(wh + k); a[1] = ld_stream(wl + k + 32); b[1] = ld_stream(wh + k + 32);
#pragma unroll 1
    while (k < (unsigned)K) {
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        uint4 xv = has_row ? *reinterpret_cast<const uint4*>(xrow + k + 32u * u) : make_uint4(0, 0, 0, 0);
        mma_bf16(c, a[u].x, b[u].x, a[u].y, b[u].y, xv.x, xv.y);
        mma_bf16(c, a[u].z, b[u].z, a[u].w, b[u].w, xv.z, xv.w);
      }
      k += 512u;
      if (k < (unsigned)K) { a[0] = ld_stream(wl + k); b[0] = ld_stream(wh + k); a[1] = ld_stream(wl + k + 32); b[1] = ld_stream(wh + k + 32); }
    }
    reduce_out(c, red, out + tile * 16 * kMaxRows);
  }
}

// V0 with the input RMS-normalized on the fly, as the Llama projections that read a normalized row do
// (llama.cuh, project16 with Input::ss): each 16 B of the input scaled by rs and multiplied by the gain,
// rounded to bf16 at each step.
__device__ __forceinline__ float bfr(float f) { unsigned short r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f)); return __uint_as_float((unsigned)r << 16); }
__device__ __forceinline__ unsigned pk2(float lo, float hi) { unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r; }
__global__ void __launch_bounds__(256) mv_regs_norm(const bf16* W, const bf16* x, const bf16* gain, float rs, float* out, int N, int K, int R) {
  __shared__ float red[8 * 32 * 4];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3u;
  const bool has_row = g < (unsigned)R;
  const bf16* xrow = x + (has_row ? g : 0u) * K + t * 8u;
  const bf16* grow = gain + t * 8u;
  for (int tile = blockIdx.x; tile < N / 16; tile += gridDim.x) {
    const bf16* wl = W + (size_t)(tile * 16 + g) * K + t * 8u;
    const bf16* wh = wl + 8ull * K;
    float c[4] = {0, 0, 0, 0};
    uint4 a[2], b[2];
    unsigned k = warp * 64u;
    a[0] = ld_stream(wl + k); b[0] = ld_stream(wh + k); a[1] = ld_stream(wl + k + 32); b[1] = ld_stream(wh + k + 32);
#pragma unroll 1
    while (k < (unsigned)K) {
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        uint4 xv = make_uint4(0, 0, 0, 0);
        if (has_row) {
          xv = *reinterpret_cast<const uint4*>(xrow + k + 32u * u);
          const uint4 gv = *reinterpret_cast<const uint4*>(grow + k + 32u * u);
          unsigned* xp = &xv.x; const unsigned* gp = &gv.x;
#pragma unroll
          for (int j = 0; j < 4; ++j)
            xp[j] = pk2(bfr(bfr(__uint_as_float(xp[j] << 16) * rs) * __uint_as_float(gp[j] << 16)),
                        bfr(bfr(__uint_as_float(xp[j] & 0xffff0000u) * rs) * __uint_as_float(gp[j] & 0xffff0000u)));
        }
        mma_bf16(c, a[u].x, b[u].x, a[u].y, b[u].y, xv.x, xv.y);
        mma_bf16(c, a[u].z, b[u].z, a[u].w, b[u].w, xv.z, xv.w);
      }
      k += 512u;
      if (k < (unsigned)K) { a[0] = ld_stream(wl + k); b[0] = ld_stream(wh + k); a[1] = ld_stream(wl + k + 32); b[1] = ld_stream(wh + k + 32); }
    }
    reduce_out(c, red, out + tile * 16 * kMaxRows);
  }
}

// V1: bulk async copies into NS stages of 16 rows x KS k (rows padded by 64 B against bank conflicts).
constexpr int KS = 512, ROWB = KS * 2 + 64, STAGEB = 16 * ROWB;
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

template <int NS>
__global__ void __launch_bounds__(256) mv_tma(const bf16* W, const bf16* x, float* out, int N, int K, int R) {
  extern __shared__ __align__(128) unsigned char sm[];
  unsigned long long* bar = reinterpret_cast<unsigned long long*>(sm);
  unsigned char* buf = sm + 128;
  float* red = reinterpret_cast<float*>(buf + NS * STAGEB);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3u;
  const bool has_row = g < (unsigned)R;
  const bf16* xrow = x + (has_row ? g : 0u) * K + t * 8u;
  if (threadIdx.x < NS) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&bar[threadIdx.x])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  const int S = K / KS;                       // stages per tile
  const int ntiles = (N / 16 - blockIdx.x + gridDim.x - 1) / gridDim.x;
  const int J = ntiles * S;                   // the block's stages, all tiles in a row
  auto issue = [&](int j) {                   // thread 0: stage j into buffer j % NS
    const int tile = blockIdx.x + (j / S) * gridDim.x, s = j % S, b = j % NS;
    const unsigned bb = smem_addr(&bar[b]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bb), "r"(16 * KS * 2) : "memory");
    for (int r = 0; r < 16; ++r) {
      const bf16* src = W + (size_t)(tile * 16 + r) * K + s * KS;
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   :: "r"(smem_addr(buf + b * STAGEB + r * ROWB)), "l"(src), "r"(KS * 2), "r"(bb) : "memory");
    }
  };
  if (threadIdx.x == 0) for (int j = 0; j < NS && j < J; ++j) issue(j);
  float c[4] = {0, 0, 0, 0};
  for (int j = 0; j < J; ++j) {
    const int b = j % NS, s = j % S;
    const unsigned parity = (j / NS) & 1;
    const unsigned bb = smem_addr(&bar[b]);
    asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W%=; }" :: "r"(bb), "r"(parity) : "memory");
    const unsigned char* st = buf + b * STAGEB;
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const unsigned kk = warp * 64u + 32u * u;   // within the stage
      const uint4 av = *reinterpret_cast<const uint4*>(st + g * ROWB + (kk + t * 8u) * 2);
      const uint4 bv = *reinterpret_cast<const uint4*>(st + (g + 8) * ROWB + (kk + t * 8u) * 2);
      uint4 xv = has_row ? *reinterpret_cast<const uint4*>(xrow + s * KS + kk) : make_uint4(0, 0, 0, 0);
      mma_bf16(c, av.x, bv.x, av.y, bv.y, xv.x, xv.y);
      mma_bf16(c, av.z, bv.z, av.w, bv.w, xv.z, xv.w);
    }
    __syncthreads();  // buffer b read by every warp
    if (threadIdx.x == 0 && j + NS < J) issue(j + NS);
    if (s == S - 1) {
      const int tile = blockIdx.x + (j / S) * gridDim.x;
      reduce_out(c, red, out + tile * 16 * kMaxRows);
      c[0] = c[1] = c[2] = c[3] = 0;
    }
  }
}

__global__ void read_stream(const uint4* p, size_t n, unsigned* sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint4 v = ld_stream(p + i);
    acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678u) *sink = 1;
}

template <class F>
float time_it(F f, int reps) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  f(); CK(cudaDeviceSynchronize());
  cudaEventRecord(a);
  for (int i = 0; i < reps; ++i) f();
  cudaEventRecord(b); CK(cudaEventSynchronize(b));
  float ms; cudaEventElapsedTime(&ms, a, b);
  CK(cudaGetLastError());
  return ms / reps * 1e3f;  // us
}

__global__ void empty_kernel() {}

int main() {
  const int N = 16384, K = 2048, R = 1;
  const size_t wbytes = (size_t)N * K * 2;
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  printf("device %s, %d SMs\n", prop.name, sms);
  bf16 *W, *x; float *o0, *o1; unsigned* sink;
  CK(cudaMalloc(&W, wbytes)); CK(cudaMalloc(&x, kMaxRows * K * 2));
  CK(cudaMalloc(&o0, N * kMaxRows * 4)); CK(cudaMalloc(&o1, N * kMaxRows * 4)); CK(cudaMalloc(&sink, 4));
  std::vector<bf16> hw(wbytes / 2), hx(kMaxRows * K);
  unsigned s = 1;
  for (auto& v : hw) { s = s * 1664525u + 1013904223u; v = (bf16)(0x3c00 | ((s >> 16) & 0x3ff)) ^ ((s >> 8) & 0x8000); }
  for (auto& v : hx) { s = s * 1664525u + 1013904223u; v = (bf16)(0x3c00 | ((s >> 16) & 0x3ff)) ^ ((s >> 8) & 0x8000); }
  CK(cudaMemcpy(W, hw.data(), wbytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
  const double GB = wbytes / 1e9;
  float us = time_it([&] { read_stream<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(W), wbytes / 16, sink); }, 20);
  printf("read stream (8 x 256 threads / SM):             %8.1f us  %7.0f GB/s\n", us, GB / us * 1e6);
  {
    void* dst; CK(cudaMalloc(&dst, wbytes / 2));
    us = time_it([&] { CK(cudaMemcpyAsync(dst, W, wbytes / 2, cudaMemcpyDeviceToDevice)); }, 20);
    printf("device copy of 32 MB (read + write):             %8.1f us  %7.0f GB/s\n", us, GB / us * 1e6);
    cudaFree(dst);
  }
  for (int bps : {4, 2, 1}) {
    us = time_it([&] { mv_regs<<<sms * bps, 256>>>(W, x, o0, N, K, R); }, 20);
    printf("V0 registers, %d blocks/SM:                      %8.1f us  %7.0f GB/s\n", bps, us, GB / us * 1e6);
  }
  auto run_tma = [&](auto kern, int ns, int bps) {
    const int smem = 128 + ns * STAGEB + 8 * 32 * 16;
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int occ = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, 256, smem);
    if (occ < bps) { printf("V1 %d stages, %d blocks/SM: does not fit (%d)\n", ns, bps, occ); return; }
    cudaMemset(o1, 0, N * kMaxRows * 4);
    float u = time_it([&] { kern<<<sms * bps, 256, smem>>>(W, x, o1, N, K, R); }, 20);
    std::vector<float> a(N * kMaxRows), b(N * kMaxRows);
    cudaMemcpy(a.data(), o0, a.size() * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.data(), o1, b.size() * 4, cudaMemcpyDeviceToHost);
    double md = 0, mx = 0;
    for (size_t i = 0; i < a.size(); ++i) { md = fmax(md, fabs(a[i] - b[i])); mx = fmax(mx, fabs(a[i])); }
    printf("V1 bulk copies, %2d stages (%3d KB), %d blocks/SM: %8.1f us  %7.0f GB/s  (max diff %.3g of %.3g)\n", ns,
           smem / 1024, bps, u, GB / u * 1e6, md, mx);
  };
  run_tma(mv_tma<2>, 2, 4); run_tma(mv_tma<3>, 3, 4);
  run_tma(mv_tma<4>, 4, 2); run_tma(mv_tma<6>, 6, 2);
  run_tma(mv_tma<8>, 8, 1); run_tma(mv_tma<12>, 12, 1);
  // The Llama layer's projections as nodes of their own (batch 1): one tile of 16 rows per block, as the
  // step's placed launch runs them, and the same rows over the persistent grid's 2 blocks per SM.
  struct Shape { const char* name; int n, k; };
  for (Shape sh : {Shape{"qkv", 3072, 2048}, Shape{"o", 2048, 2048}, Shape{"gate/up", 16384, 2048},
                   Shape{"down", 2048, 8192}, Shape{"down as 4 x 2048", 8192, 2048}}) {
    const double gb = (double)sh.n * sh.k * 2 / 1e9;
    const int tiles = sh.n / 16;
    float u1 = time_it([&] { mv_regs<<<tiles, 256>>>(W, x, o0, sh.n, sh.k, R); }, 50);
    float u2 = time_it([&] { mv_regs<<<std::min(tiles, sms * 2), 256>>>(W, x, o0, sh.n, sh.k, R); }, 50);
    printf("node %-16s %5d tiles: one a block %7.1f us %6.0f GB/s; over %d blocks %7.1f us %6.0f GB/s\n", sh.name,
           tiles, u1, gb / u1 * 1e6, std::min(tiles, sms * 2), u2, gb / u2 * 1e6);
  }
  // The gate/up shape (64 MB, more than L2 holds) with and without the RMSNorm on the fly, alternating.
  for (int rep = 0; rep < 2; ++rep) {
    float a = time_it([&] { mv_regs<<<sms * 2, 256>>>(W, x, o0, N, K, R); }, 50);
    float b = time_it([&] { mv_regs_norm<<<sms * 2, 256>>>(W, x, x, 0.5f, o1, N, K, R); }, 50);
    printf("gate/up shape over %d blocks: plain %.1f us %.0f GB/s; normalizing the input on the fly %.1f us %.0f GB/s\n",
           sms * 2, a, GB / a * 1e6, b, GB / b * 1e6);
  }
  float e = time_it([&] { empty_kernel<<<sms * 2, 256>>>(); }, 50);
  printf("an empty kernel of %d blocks: %.1f us\n", sms * 2, e);
  return 0;
}
