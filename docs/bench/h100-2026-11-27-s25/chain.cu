// A layer chain of bf16 matrix-vector products (the 1B Llama shapes, batch 1) as one persistent kernel
// with a completion counter per node, outside gpuos: how long the chain takes with
//   mode 0: every node's tiles waiting for the node before, weights streamed through registers;
//   mode 1: the same, but a block that has no tile left in a node first asks for its first tile of the
//           next node (up to 64 KiB: 16 rows x 2048 k) with bulk copies into shared memory, then waits;
//   mode 2: no waits at all (every node's tiles independent): the streaming floor of this loop.
// Same arithmetic in every mode (outputs compared bit for bit between modes 0 and 1).
#include <cuda_bf16.h>
#include "llama.cuh"  // the gpuos Llama operators' projection (project16), for mode 3
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <algorithm>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

constexpr int kThreads = 256, kRows = 16, kStageK = 2048;  // staged: 16 rows x 2048 k = 64 KiB
struct Node { const uint4* w; const uint4* x; __nv_bfloat16* y; int rows, K; };
constexpr int kMaxNodes = 4 * 16;
__constant__ Node nodes[kMaxNodes];

__device__ __forceinline__ float dot8(uint4 w, uint4 x) {
  const __nv_bfloat162* a = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&x);
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) { float2 fa = __bfloat1622float2(a[i]), fb = __bfloat1622float2(b[i]); s = fmaf(fa.x, fb.x, s); s = fmaf(fa.y, fb.y, s); }
  return s;
}
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
  uint4 v; asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v;
}
__device__ __forceinline__ unsigned saddr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// Tile t of node n: rows 16t..16t+15; thread (row = tid / 16, sub = tid % 16) takes uint4 j = sub, sub + 16, ...
// of its row, 4 loads in flight; `staged`: the first kStageK k of each row are in smem (row stride 4096 + 16 B).
__device__ void run_tile(const Node& nd, int t, const unsigned char* stage, bool staged) {
  const int row = threadIdx.x >> 4, sub = threadIdx.x & 15;
  const int K8 = nd.K / 8;  // uint4 per row
  const uint4* wr = nd.w + (size_t)(t * kRows + row) * K8;
  float s = 0.f;
  int j = sub;
  if (staged) {
    const uint4* sr = reinterpret_cast<const uint4*>(stage + row * (kStageK * 2 + 16));
    for (; j < kStageK / 8; j += 16) s += dot8(sr[j], __ldcg(nd.x + j));
  }
  for (; j + 48 < K8; j += 64) {
    uint4 a = ld_stream(wr + j), b = ld_stream(wr + j + 16), c = ld_stream(wr + j + 32), d = ld_stream(wr + j + 48);
    s += dot8(a, __ldcg(nd.x + j)); s += dot8(b, __ldcg(nd.x + j + 16)); s += dot8(c, __ldcg(nd.x + j + 32)); s += dot8(d, __ldcg(nd.x + j + 48));
  }
  for (; j < K8; j += 16) s += dot8(ld_stream(wr + j), __ldcg(nd.x + j));
#pragma unroll
  for (int o = 8; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (sub == 0) nd.y[t * kRows + row] = __float2bfloat16(s);
}

// Mode 3: the tile as the gpuos Llama operators compute it (llama::project16: 8 warps taking k in turns,
// tensor-core mma, no RMSNorm), rows 16t..16t+15.
__device__ void run_tile_mma(const Node& nd, int t, unsigned char* smem) {
  const unsigned g = (threadIdx.x & 31u) >> 2;
  const llama::bf16* w = reinterpret_cast<const llama::bf16*>(nd.w) + (size_t)(t * kRows + g) * nd.K;
  const llama::Input in{reinterpret_cast<const llama::bf16*>(nd.x), nullptr, nullptr, (unsigned)nd.K, 1u, 0.f, 0u};
  const float* out = llama::project16(w, w + 8ull * nd.K, in, reinterpret_cast<float*>(smem));
  if (threadIdx.x < 16) nd.y[t * kRows + threadIdx.x] = __float2bfloat16(out[threadIdx.x * llama::kMaxRows]);
}

// Mode 5: the same tile called through a function pointer, as the resident kernel calls operators (an ABI
// call: the callee saves and restores the registers it uses).
__device__ __noinline__ void run_tile_mma_call(const Node& nd, int t, unsigned char* smem) { run_tile_mma(nd, t, smem); }
using TileFn = void (*)(const Node&, int, unsigned char*);
__device__ TileFn tile_fn = run_tile_mma_call;
// Mode 7: a call through a pointer to a function that does nothing, then the tile inlined.
__device__ __noinline__ void nothing(const Node&, int, unsigned char* p) { if (p == nullptr) __trap(); }
__device__ TileFn nothing_fn = nothing;

__device__ __forceinline__ unsigned long long gtime() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }

// stats[n]: first tile start (min), last tile end (max), sum of tile times, tiles, sum of block entry delays
__global__ void __launch_bounds__(kThreads, 2) chain(int nn, unsigned* count, int mode, unsigned long long* stats) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bar;
  const int G = gridDim.x, b = blockIdx.x;
  if (threadIdx.x == 0 && stats && mode == 0) { unsigned s_; asm volatile("mov.u32 %0, %smid;" : "=r"(s_)); stats[5 * nn + b] = s_; }
  if (threadIdx.x == 0) { asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(saddr(&bar))); asm volatile("fence.mbarrier_init.release.cluster;"); }
  __syncthreads();
  unsigned phase = 0;
  bool staged_next = false;
  for (int n = 0; n < nn; ++n) {
    const Node nd = nodes[n];
    const int tiles = nd.rows / kRows;
    // Tiles of node n for this block: t = (b - n * 37) mod G, then + G (spread the nodes' first tiles).
    int t0 = ((b - n * 37) % G + G) % G;
    if (mode != 2 && n > 0) {  // modes 0, 1, 3, 4
      if (threadIdx.x == 0) {
        const unsigned need = nodes[n - 1].rows / kRows;
        unsigned v;
        if (mode == 6) {  // no acquire at all (no L1 invalidation): a timing experiment only, inputs may be stale
          for (;;) { asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count + n - 1) : "memory"); if (v >= need) break; __nanosleep(64); }
        } else if (mode == 4) {  // as gpuos's role_wait: relaxed polls, backoff to 256 ns, then an acquire fence
          asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count + n - 1) : "memory");
          for (unsigned ns = 32; v < need; ns = ns < 256 ? 2 * ns : ns) {
            __nanosleep(ns);
            asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count + n - 1) : "memory");
          }
          asm volatile("fence.acquire.gpu;" ::: "memory");
        } else {
          for (;;) { asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count + n - 1) : "memory"); if (v >= need) break; __nanosleep(64); }
        }
      }
      __syncthreads();
    }
    bool first = true;
    for (int t = t0; t < tiles; t += G) {
      const unsigned long long ts = gtime();
      const long long k0 = clock64();
      const bool use_stage = staged_next && first;
      if (use_stage) {
        asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W%=; }" ::"r"(saddr(&bar)), "r"(phase) : "memory");
        phase ^= 1;
      }
      if (mode == 5 || mode == 6) { TileFn f = *reinterpret_cast<TileFn volatile*>(&tile_fn); f(nd, t, smem); }
      else if (mode == 7) { TileFn f = *reinterpret_cast<TileFn volatile*>(&nothing_fn); f(nd, t, smem); run_tile_mma(nd, t, smem); }
      else if (mode == 8) run_tile_mma_call(nd, t, smem);
      else if (mode >= 3) run_tile_mma(nd, t, smem); else run_tile(nd, t, smem, use_stage);
      first = false;
      __syncthreads();  // the tile's writes, and its use of the stage
      if (mode == 4) {  // as gpuos's run_role: thread 32 releases and adds with a red
        if (threadIdx.x == 32) asm volatile("fence.acq_rel.gpu;\n\tred.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(count + n) : "memory");
        continue;
      }
      if (threadIdx.x == 0) {
        __threadfence(); atomicAdd(count + n, 1u);
        if (!stats) continue;
        const unsigned long long te = gtime();
        atomicAdd(stats + 5 * nn + 1000, (unsigned long long)(clock64() - k0)); atomicAdd(stats + 5 * nn + 1001, te - ts);
        atomicMin(stats + 5 * n, ts); atomicMax(stats + 5 * n + 1, te); atomicAdd(stats + 5 * n + 2, te - ts); atomicAdd(stats + 5 * n + 3, 1ull);
      }
    }
    staged_next = false;
    // Mode 1: the first tile of the next node, asked for now (this block has nothing left in node n).
    if (mode == 1 && n + 1 < nn) {
      const Node nx = nodes[n + 1];
      const int t1 = ((b - (n + 1) * 37) % G + G) % G;
      if (t1 < nx.rows / kRows) {
        staged_next = true;
        if (threadIdx.x < 32) {
          const int K8 = nx.K / 8;
          const unsigned bytes = (unsigned)((nx.K < kStageK ? nx.K : kStageK) * 2);
          if (threadIdx.x == 0) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(saddr(&bar)), "r"(bytes * kRows) : "memory");
          __syncwarp();
          if (threadIdx.x < kRows) {
            const uint4* src = nx.w + (size_t)(t1 * kRows + threadIdx.x) * K8;
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         ::"r"(saddr(smem + threadIdx.x * (kStageK * 2 + 16))), "l"(src), "r"(bytes), "r"(saddr(&bar)) : "memory");
          }
        }
      }
    }
  }
  if (staged_next)  // never used (last node): drain
    asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W%=; }" ::"r"(saddr(&bar)), "r"(phase) : "memory");
}

int main(int argc, char** argv) {
  const int L = argc > 1 ? atoi(argv[1]) : 16, reps = argc > 2 ? atoi(argv[2]) : 10;
  const int H = 2048, I = 8192, QKV = 3072;
  struct Shape { int rows, K; };
  std::vector<Shape> shapes;
  for (int l = 0; l < L; ++l) { shapes.push_back({QKV, H}); shapes.push_back({H, H}); shapes.push_back({2 * I, H}); shapes.push_back({H, I}); }
  const int nn = (int)shapes.size();
  size_t wbytes = 0; for (auto& s : shapes) wbytes += (size_t)s.rows * s.K * 2;
  unsigned char* W; CK(cudaMalloc(&W, wbytes));
  // Random weights: small bf16 values from a hash, on the device.
  {
    std::vector<uint16_t> h(1 << 24);
    for (size_t i = 0; i < h.size(); ++i) { uint32_t x = (uint32_t)i * 2654435761u; x ^= x >> 13; h[i] = (uint16_t)(0x3c00 | (x & 0x1ff)) ^ ((x >> 20) & 1 ? 0x8000 : 0); }
    for (size_t off = 0; off < wbytes; off += h.size() * 2) CK(cudaMemcpy(W + off, h.data(), std::min(h.size() * 2, wbytes - off), cudaMemcpyHostToDevice));
  }
  __nv_bfloat16* act; CK(cudaMalloc(&act, (size_t)nn * 2 * I * 2 + 4096));
  CK(cudaMemset(act, 0, (size_t)nn * 2 * I * 2 + 4096));
  {  // the first input: ones
    std::vector<__nv_bfloat16> one(H, __float2bfloat16(0.01f)); CK(cudaMemcpy(act, one.data(), H * 2, cudaMemcpyHostToDevice));
  }
  std::vector<Node> hn(nn);
  size_t off = 0;
  for (int n = 0; n < nn; ++n) {
    hn[n].w = reinterpret_cast<const uint4*>(W + off); off += (size_t)shapes[n].rows * shapes[n].K * 2;
    hn[n].x = reinterpret_cast<const uint4*>(act + (size_t)n * 2 * I);
    hn[n].y = act + (size_t)(n + 1) * 2 * I;
    hn[n].rows = shapes[n].rows; hn[n].K = shapes[n].K;
  }
  CK(cudaMemcpyToSymbol(nodes, hn.data(), sizeof(Node) * nn));
  unsigned* count; CK(cudaMalloc(&count, nn * 4));
  unsigned long long* stats; CK(cudaMalloc(&stats, (nn * 5 + 1024) * 8));
  std::vector<unsigned long long> hs(nn * 5 + 1024), init(nn * 5, 0);
  for (int n = 0; n < nn; ++n) init[5 * n] = ~0ull;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int smem = argc > 3 ? atoi(argv[3]) : kRows * (kStageK * 2 + 16);  // < 64 KiB + 256: mode 1 must not run
  CK(cudaFuncSetAttribute(chain, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int per_sm; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, chain, kThreads, smem));
  const int G = (per_sm < 2 ? per_sm : 2) * sms;  // every block resident: the waits need it
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  printf("grid %d blocks (%d per SM fit), %d nodes, %.3f GB of weights\n", G, per_sm, nn, wbytes / 1e9);
  std::vector<std::vector<float>> times(9);
  std::vector<uint16_t> out[2];
  for (int r = 0; r < reps; ++r) for (int mode = 0; mode < 9; ++mode) {
    if (mode == 1 && smem < kRows * (kStageK * 2 + 16)) { times[1].push_back(0.f); continue; }
    CK(cudaMemset(count, 0, nn * 4));
    CK(cudaMemset(stats, 0, (nn * 5 + 1024) * 8));
    CK(cudaMemcpy(stats, init.data(), nn * 5 * 8, cudaMemcpyHostToDevice));
    CK(cudaEventRecord(e0));
    chain<<<G, kThreads, smem>>>(nn, count, mode, argc > 4 ? nullptr : stats);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    times[mode].push_back(ms);
    if (r == reps - 1 && argc <= 4) {
      CK(cudaMemcpy(hs.data(), stats, (nn * 5 + 1024) * 8, cudaMemcpyDeviceToHost));
      printf("mode %d SM clock %.0f MHz\n", mode, (double)hs[5 * nn + 1000] / hs[5 * nn + 1001] * 1e3);
      if (mode == 0) { printf("block->SM:"); for (int i = 0; i < 20; ++i) printf(" %d:%llu", i, hs[5 * nn + i]); printf(" ... 132:%llu 133:%llu\n", hs[5 * nn + 132], hs[5 * nn + 133]); }
      const char* nm[4] = {"qkv", "o", "gate/up", "down"};
      double acc[4][4] = {};
      for (int n = 4; n < nn; ++n) {  // layers 1..: medians would be better; means are enough here
        const int k = n % 4;
        acc[k][0] += (hs[5 * n + 1] - hs[5 * n]) / 1e3;                       // span
        acc[k][1] += ((double)hs[5 * n] - (double)hs[5 * (n - 1) + 1]) / 1e3;  // gap from the node before's end
        acc[k][2] += hs[5 * n + 2] / 1e3 / hs[5 * n + 3];                     // mean tile
        acc[k][3] += 1;
      }
      printf("mode %d per node (means over layers 1..): ", mode);
      for (int k = 0; k < 4; ++k) printf("%s span %.1f gap %.1f tile %.1f | ", nm[k], acc[k][0] / acc[k][3], acc[k][1] / acc[k][3], acc[k][2] / acc[k][3]);
      printf("\n");
    }
    if (mode < 2 && r == reps - 1) { out[mode].resize(H); CK(cudaMemcpy(out[mode].data(), hn[nn - 1].y, H * 2, cudaMemcpyDeviceToHost)); }
  }
  const char* names[9] = {"waits", "waits + next tile staged", "no waits (floor)", "waits, gpuos's mma tile",
                          "mma tile, gpuos's signals", "mma tile through a pointer", "pointer, no L1 invalidation", "no-op via pointer + inline tile", "direct call, not inlined"};
  for (int m = 0; m < 9; ++m) {
    auto t = times[m]; std::sort(t.begin(), t.end());
    printf("mode %d %-26s median %.3f ms (min %.3f, max %.3f): %.1f us a layer, %.0f GB/s\n", m, names[m], t[t.size() / 2], t[0], t.back(),
           t[t.size() / 2] * 1e3 / L, wbytes / (t[t.size() / 2] * 1e-3) / 1e9);
  }
  printf("outputs of modes 0 and 1 %s\n", out[0] == out[1] ? "identical" : "DIFFER");
  return 0;
}
