// ring_chain.cu's two ways to stream the weights over the whole 1B Llama step but its embedding: per
// layer qkv (3072x2048), attention (no weights: the blocks that attend wait `attn_us`, the memory idle as
// it is in a decode step's attention at a short position), o (2048x2048), gate/up (16384x2048), down
// (2048x8192); then the LM head (128256x2048). bf16, batch 1, no norm, no epilogue. A stand-in for what a
// megakernel with no runtime between its nodes reaches: with the register path, nodes one after another
// as gpuos's items are; with the ring and no limit on `ahead`, the weights streaming on across the nodes
// (attention included, whose time the next projection's weights fill).
//
// A block counts a node it finished in one of four ways (release_mode), one of them without a release,
// to measure what the release costs when the block has weights in flight.
//
//   step_chain [reps] [attn_us]   prints, for each mode, the step's time and the fraction of the
//                                 copy-bandwidth bound, per node kind its span, a block's time from its
//                                 input to its count, and when a block saw its input after the node
//                                 before's last count; checks the head's first outputs of every mode
//                                 against the first mode's.
//
// Built with: nvcc -O3 -arch=sm_90a -std=c++17 -o step_chain step_chain.cu
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                         \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

constexpr int kConsumers = 256;               // 8 warps
constexpr int kThreads = kConsumers + 32;     // + the producer's warp
constexpr int kStageBytes = 16384;            // 8,192 weights
constexpr int kStageElems = kStageBytes / 2;
constexpr int kMaxStages = 12;
constexpr int kMaxK = 8192;
constexpr int kOutFloats = 2048;  // a block's [row][part] sums: the head's 972 rows x 2 parts at 132 blocks
constexpr int kLayers = 16, kKinds = 5, kNodes = kKinds * kLayers + 1;  // qkv attn o gate/up down, the head
constexpr int kActStride = 131072;  // elements of a node's output buffer

struct Node {
  const __nv_bfloat16* w;  // [N][K] row-major
  const __nv_bfloat16* x;  // [K] input (the node before's output buffer)
  __nv_bfloat16* y;        // [N]
  int N, K;                // N 0: attention (no weights)
  unsigned spin_ns;        // attention: blocks below spin_blocks wait this long after their input
  int spin_blocks;
};
__constant__ Node nodes[kNodes];

__device__ __forceinline__ unsigned saddr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(b)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* b, unsigned bytes) {
  asm volatile("{ .reg .b64 s; mbarrier.arrive.expect_tx.shared::cta.b64 s, [%0], %1; }" ::"r"(saddr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("{ .reg .b64 s; mbarrier.arrive.shared::cta.b64 s, [%0]; }" ::"r"(saddr(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, unsigned parity) {
  asm volatile(
      "{ .reg .pred p;\n"
      "W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra W; }" ::"r"(saddr(b)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(saddr(dst)),
               "l"(src), "r"(bytes), "r"(saddr(bar))
               : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;" ::"n"(kConsumers) : "memory"); }

/// Block b's share of node n: rows [N b / G, N (b + 1) / G), i.e. weights [first, last) of the node's.
struct Share {
  Node nd;
  int r0, r1;
  long long first, last;
};
__device__ __forceinline__ Share share_of(int n, int b, int G) {
  Share s;
  s.nd = nodes[n];
  s.r0 = static_cast<int>(static_cast<long long>(s.nd.N) * b / G);
  s.r1 = static_cast<int>(static_cast<long long>(s.nd.N) * (b + 1) / G);
  s.first = static_cast<long long>(s.r0) * s.nd.K;
  s.last = static_cast<long long>(s.r1) * s.nd.K;
  return s;
}

/// How a block counts a node it finished (its outputs written before): 0 __threadfence() (fence.sc.gpu)
/// and a relaxed add; 1 the add alone (no release: unsafe, a measure of what the fence costs); 2 one
/// red.release.gpu; 3 fence.acq_rel.gpu and a relaxed add.
__constant__ int release_mode;
__device__ __forceinline__ void count(unsigned* p) {
  if (release_mode == 0) {
    __threadfence();
    atomicAdd(p, 1u);
  } else if (release_mode == 1) {
    atomicAdd(p, 1u);
  } else if (release_mode == 2) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p) : "memory");
  } else {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
    atomicAdd(p, 1u);
  }
}

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// `run`: the launch's number from 1 (the counters grow by gridDim.x a node a run, never reset). With
/// `stamps` ([node][block][2]): when each block had its node's input and when it counted the node.
__global__ void __launch_bounds__(kThreads, 1) chain(unsigned* done, int stages, int ahead, unsigned run,
                                                     unsigned long long* stamps) {
  extern __shared__ __align__(128) unsigned char ring[];  // stages x 16 KiB
  __shared__ __align__(8) uint64_t full[kMaxStages], empty[kMaxStages];
  __shared__ __align__(16) __nv_bfloat16 xs[kMaxK];
  __shared__ float out[kOutFloats];  // [row][part]: added in part order (the same bits in every mode)
  const int tid = threadIdx.x, b = blockIdx.x, G = gridDim.x;
  const unsigned target = run * static_cast<unsigned>(G);
  if (tid == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kConsumers / 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (tid == kConsumers) {
    // The producer: every stage of every node's rows of this block, in order, as fast as the ring frees.
    int slot = 0;
    unsigned phase = 0;
    for (int n = 0; n < kNodes; ++n) {
      const Share sh = share_of(n, b, G);
      const long long first = sh.first, last = sh.last;
      int issued = 0;
      bool ready = n == 0;  // the node's input complete (seen once: no round trip a stage after that)
      for (long long e = first; e < last; e += kStageElems, ++issued) {
        if (!ready && issued >= ahead) {
          while (ld_acquire(&done[n - 1]) < target) {
          }
          ready = true;
        }
        mbar_wait(&empty[slot], phase ^ 1u);  // a fresh barrier's preceding phase counts as complete
        const unsigned bytes = static_cast<unsigned>((last - e < kStageElems ? last - e : kStageElems) * 2);
        mbar_expect_tx(&full[slot], bytes);
        bulk_copy(ring + slot * kStageBytes, sh.nd.w + e, bytes, &full[slot]);
        if (++slot == stages) {
          slot = 0;
          phase ^= 1u;
        }
      }
    }
    return;
  }
  if (tid >= kConsumers) return;
  // The consumers: each stage's 8,192 weights as 8 runs of 1,024, a warp's run part k / 1,024 of one row
  // (K is a multiple of 1,024 and a block's rows start a stage); each warp's sum into its row's part in
  // shared memory.
  const int lane = tid & 31;
  int slot = 0;
  unsigned phase = 0;
  for (int n = 0; n < kNodes; ++n) {
    const Share sh = share_of(n, b, G);
    const Node& nd = sh.nd;
    const int r0 = sh.r0, r1 = sh.r1;
    const long long first = sh.first, last = sh.last;
    // The input: complete once the node before's counter reached this run's target.
    if (n > 0) {
      if (tid == 0)
        while (ld_acquire(&done[n - 1]) < target) {
        }
      consumers_sync();
    }
    if (tid == 0 && stamps) stamps[(static_cast<size_t>(n) * G + b) * 2] = now();
    if (nd.N == 0 && b < nd.spin_blocks) {
      const unsigned long long until = now() + nd.spin_ns;
      while (now() < until) {
      }
    }
    for (int k = tid * 8; k < nd.K; k += kConsumers * 8)
      *reinterpret_cast<uint4*>(&xs[k]) = __ldcg(reinterpret_cast<const uint4*>(nd.x + k));
    consumers_sync();
    for (long long e0 = first; e0 < last; e0 += kStageElems) {
      mbar_wait(&full[slot], phase);
      const int warp = tid >> 5;
      const long long e = e0 + warp * 1024;  // the warp's 1,024 weights: part k / 1,024 of one row
      float s = 0.f;
      int row = -1, part = 0;
      if (e < last) {
        row = static_cast<int>(e / nd.K);
        const int k = static_cast<int>(e % nd.K);
        part = k >> 10;
        // lane l reads 16 bytes at l, 32 + l, 64 + l, 96 + l: a warp's load is 512 consecutive bytes
        const uint4* w = reinterpret_cast<const uint4*>(ring + slot * kStageBytes) + warp * 128 + lane;
        const uint4* x = reinterpret_cast<const uint4*>(&xs[k]) + lane;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint4 wv = w[i * 32], xv = x[i * 32];
          const __nv_bfloat162* a = reinterpret_cast<const __nv_bfloat162*>(&wv);
          const __nv_bfloat162* c = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float2 fa = __bfloat1622float2(a[j]), fc = __bfloat1622float2(c[j]);
            s = fmaf(fa.x, fc.x, s);
            s = fmaf(fa.y, fc.y, s);
          }
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[slot]);  // this warp is done with the slot
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0 && row >= 0) out[(row - r0) * (nd.K >> 10) + part] = s;
      if (++slot == stages) {
        slot = 0;
        phase ^= 1u;
      }
    }
    consumers_sync();  // every sum in `out`
    for (int r = tid; r < r1 - r0; r += kConsumers) {
      float y = 0.f;
      for (int p = 0; p < nd.K / 1024; ++p) y += out[r * (nd.K >> 10) + p];
      nd.y[r0 + r] = __float2bfloat16(y);
    }
    consumers_sync();  // the block's outputs written, `out` free
    if (tid == 0) {
      count(&done[n]);
      if (stamps) stamps[(static_cast<size_t>(n) * G + b) * 2 + 1] = now();
    }
  }
}

/// The same chain through registers, as gpuos's projections stream (llama::project): `blocks` blocks of 256
/// threads (2 an SM, 128 registers), a block's share of a node in rounds of 16 KiB (warp w's 1,024
/// weights of a round, lane l's 16 bytes at l, 32 + l, 64 + l, 96 + l), each lane keeping D rounds in
/// flight beyond the one it computes; the first D rounds of a node are asked for before its input is
/// complete (and none of the next node's during a node's last rounds: gpuos's items end so).
template <int D>
__global__ void __launch_bounds__(kConsumers, 2) chain_reg(unsigned* done, unsigned run, unsigned long long* stamps) {
  __shared__ __align__(16) __nv_bfloat16 xs[kMaxK];
  __shared__ float out[kOutFloats];
  const int tid = threadIdx.x, b = blockIdx.x, G = gridDim.x, lane = tid & 31, warp = tid >> 5;
  const unsigned target = run * static_cast<unsigned>(G);
  for (int n = 0; n < kNodes; ++n) {
    const Share sh = share_of(n, b, G);
    const Node& nd = sh.nd;
    const long long first = sh.first, last = sh.last;
    const int rounds = static_cast<int>((last - first + kStageElems - 1) / kStageElems);
    uint4 buf[D + 1][4];
    auto ask = [&](uint4 (&x)[4], int r) {
      const long long e = first + static_cast<long long>(r) * kStageElems + warp * 1024;
      if (r < rounds && e < last) {
        const uint4* w = reinterpret_cast<const uint4*>(nd.w + e) + lane;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          uint4 v;
          asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
              : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
              : "l"(w + i * 32));
          x[i] = v;
        }
      }
    };
#pragma unroll
    for (int d = 0; d < D; ++d) ask(buf[d], d);
    if (n > 0) {
      if (tid == 0)
        while (ld_acquire(&done[n - 1]) < target) {
        }
      __syncthreads();
    }
    if (tid == 0 && stamps) stamps[(static_cast<size_t>(n) * G + b) * 2] = now();
    if (nd.N == 0 && b < nd.spin_blocks) {
      const unsigned long long until = now() + nd.spin_ns;
      while (now() < until) {
      }
    }
    for (int k = tid * 8; k < nd.K; k += kConsumers * 8)
      *reinterpret_cast<uint4*>(&xs[k]) = __ldcg(reinterpret_cast<const uint4*>(nd.x + k));
    __syncthreads();
    for (int r0 = 0; r0 < rounds; r0 += D + 1) {
#pragma unroll
      for (int s = 0; s <= D; ++s) {
        const int r = r0 + s;
        if (r >= rounds) break;
        ask(buf[(s + D) % (D + 1)], r + D);
        const long long e = first + static_cast<long long>(r) * kStageElems + warp * 1024;
        if (e < last) {
          const int row = static_cast<int>(e / nd.K), k = static_cast<int>(e % nd.K);
          const uint4* x = reinterpret_cast<const uint4*>(&xs[k]) + lane;
          float acc = 0.f;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const uint4 wv = buf[s][i], xv = x[i * 32];
            const __nv_bfloat162* a = reinterpret_cast<const __nv_bfloat162*>(&wv);
            const __nv_bfloat162* c = reinterpret_cast<const __nv_bfloat162*>(&xv);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const float2 fa = __bfloat1622float2(a[j]), fc = __bfloat1622float2(c[j]);
              acc = fmaf(fa.x, fc.x, acc);
              acc = fmaf(fa.y, fc.y, acc);
            }
          }
          for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
          if (lane == 0) out[(row - sh.r0) * (nd.K >> 10) + (k >> 10)] = acc;
        }
      }
    }
    __syncthreads();
    for (int r = tid; r < sh.r1 - sh.r0; r += kConsumers) {
      float y = 0.f;
      for (int p = 0; p < nd.K / 1024; ++p) y += out[r * (nd.K >> 10) + p];
      nd.y[sh.r0 + r] = __float2bfloat16(y);
    }
    __syncthreads();
    if (tid == 0) {
      count(&done[n]);
      if (stamps) stamps[(static_cast<size_t>(n) * G + b) * 2 + 1] = now();
    }
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 5;
  const double attn_us = argc > 2 ? atof(argv[2]) : 3.0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int G = prop.multiProcessorCount;
  // Per layer: qkv, attention, o, gate/up, down; then the head. {N, K}; N 0: attention.
  const int shapes[kKinds][2] = {{3072, 2048}, {0, 0}, {2048, 2048}, {16384, 2048}, {2048, 8192}};
  const int head[2] = {128256, 2048};
  size_t wbytes = static_cast<size_t>(head[0]) * head[1] * 2;
  for (int l = 0; l < kLayers; ++l)
    for (auto& sh : shapes) wbytes += static_cast<size_t>(sh[0]) * sh[1] * 2;
  __nv_bfloat16 *w, *act;
  CK(cudaMalloc(&w, wbytes));
  CK(cudaMalloc(&act, static_cast<size_t>(kNodes + 1) * kActStride * 2));
  {
    std::vector<uint16_t> h(1 << 24);
    uint32_t st = 12345;
    for (auto& v : h) {
      st = st * 1664525u + 1013904223u;
      // +-[2^-6, 2^-5): a row of 2,048 keeps its input's scale, one of 8,192 doubles it
      v = static_cast<uint16_t>(0x3c80 | ((st >> 16) & 0x7f) | ((st >> 31) << 15));
    }
    for (size_t off = 0; off < wbytes; off += h.size() * 2)
      CK(cudaMemcpy(reinterpret_cast<char*>(w) + off, h.data(), std::min(h.size() * 2, wbytes - off), cudaMemcpyHostToDevice));
    std::vector<uint16_t> x0(16384, 0x3f80);  // 1.0
    CK(cudaMemset(act, 0, static_cast<size_t>(kNodes + 1) * kActStride * 2));
    CK(cudaMemcpy(act, x0.data(), x0.size() * 2, cudaMemcpyHostToDevice));
  }
  // Node n writes buffer n + 1; a projection reads the buffer of the last projection before it.
  Node hn[kNodes];
  size_t off = 0;
  int in_buf = 0;
  for (int n = 0; n < kNodes; ++n) {
    const int* sh = n == kNodes - 1 ? head : shapes[n % kKinds];
    __nv_bfloat16* const y = act + static_cast<size_t>(n + 1) * kActStride;
    if (sh[0] == 0) {
      hn[n] = Node{nullptr, nullptr, nullptr, 0, 0, static_cast<unsigned>(attn_us * 1e3), 96};  // 96: the 1B step's attention tiles
      continue;
    }
    hn[n] = Node{w + off, act + static_cast<size_t>(in_buf) * kActStride, y, sh[0], sh[1], 0u, 0};
    in_buf = n + 1;
    off += static_cast<size_t>(sh[0]) * sh[1];
  }
  CK(cudaMemcpyToSymbol(nodes, hn, sizeof hn));
  unsigned* done;
  unsigned long long* stamps;
  CK(cudaMalloc(&done, kNodes * sizeof(unsigned)));
  const int Gr = 2 * G;  // the register path's blocks
  CK(cudaMalloc(&stamps, static_cast<size_t>(kNodes) * Gr * 2 * sizeof(unsigned long long)));
  CK(cudaFuncSetAttribute(chain, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxStages * kStageBytes));

  // The bound: the weights over the device-to-device copy bandwidth (bytes read + written per second).
  float copy_ms = 0.f;
  {
    void *a, *c;
    const size_t n = 1ull << 30;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&c, n));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMemcpy(c, a, n, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e0));
    for (int i = 0; i < 5; ++i) CK(cudaMemcpy(c, a, n, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&copy_ms, e0, e1));
    const double bw = 2.0 * n * 5 / (copy_ms * 1e-3);
    printf("device %s, %d SMs; weights %.3f GB (the head's included); copy %.0f GB/s; bound %.1f us; attention %.1f us\n",
           prop.name, G, wbytes / 1e9, bw / 1e9, wbytes / bw * 1e6, attn_us);
    copy_ms = static_cast<float>(wbytes / bw * 1e3);  // the bound, ms
    CK(cudaFree(a));
    CK(cudaFree(c));
  }

  // {stages, ahead}: a ring in shared memory; {0, D}: registers, D rounds in flight, 2 blocks an SM
  // {stages, ahead, release_mode}
  const int modes[][3] = {{4, 2, 0}, {4, 99, 0}, {4, 99, 1}, {4, 99, 2}, {4, 99, 3}, {8, 99, 1}, {0, 1, 0}, {0, 1, 1}, {0, 1, 3}, {0, 2, 1}};
  std::vector<uint16_t> ref, outv(16384);
  unsigned run = 0;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (const auto& m : modes) {
    const int stages = m[0], ahead = m[1];
    CK(cudaMemcpyToSymbol(release_mode, &m[2], sizeof(int)));
    const int Gb = stages > 0 ? G : Gr;  // blocks of this mode's launch
    CK(cudaMemset(done, 0, kNodes * sizeof(unsigned)));
    run = 0;
    std::vector<float> ms;
    for (int r = 0; r < reps + 1; ++r) {
      ++run;
      CK(cudaEventRecord(e0));
      unsigned long long* const st = r == reps ? stamps : nullptr;
      if (stages > 0)
        chain<<<G, kThreads, stages * kStageBytes>>>(done, stages, ahead, run, st);
      else if (ahead == 1)
        chain_reg<1><<<Gr, kConsumers>>>(done, run, st);
      else if (ahead == 2)
        chain_reg<2><<<Gr, kConsumers>>>(done, run, st);
      else
        chain_reg<3><<<Gr, kConsumers>>>(done, run, st);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaGetLastError());
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      if (r > 0) ms.push_back(t);  // the first run warms up
    }
    std::sort(ms.begin(), ms.end());
    const float med = ms[ms.size() / 2];
    CK(cudaMemcpy(outv.data(), act + static_cast<size_t>(kNodes) * kActStride, 2048 * 2, cudaMemcpyDeviceToHost));
    outv.resize(2048);
    bool same = true;
    if (ref.empty())
      ref = outv;
    else
      same = ref == outv;
    // Per node kind, medians over the layers: the node's span (its last count after the node before's
    // last) and a block's time from its input to its count (the median block's, and the slowest's).
    std::vector<unsigned long long> st(static_cast<size_t>(kNodes) * Gb * 2);
    CK(cudaMemcpy(st.data(), stamps, st.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    auto at = [&](int n, int blk, int k) { return st[(static_cast<size_t>(n) * Gb + blk) * 2 + k]; };
    auto last_end = [&](int n) {
      unsigned long long t = 0;
      for (int blk = 0; blk < Gb; ++blk) t = std::max(t, at(n, blk, 1));
      return t;
    };
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    // Per node kind (medians over the layers): the span (the node's last count after the node before's
    // last), a block's time from its input to its count (the median block's, the slowest's), and when the
    // median block saw its input after the node before's last count.
    const char* kind[kKinds + 1] = {"qkv", "attn", "o", "gate/up", "down", "head"};
    char line[1024];
    int len = 0;
    for (int k = 0; k <= kKinds; ++k) {
      std::vector<double> span, inner, slowest, seen;
      for (int n = k < kKinds ? k : kNodes - 1; n < kNodes; n += kKinds) {
        if (n == 0) continue;
        span.push_back((last_end(n) - last_end(n - 1)) * 1e-3);
        std::vector<double> d, v;
        for (int blk = 0; blk < Gb; ++blk) {
          d.push_back((at(n, blk, 1) - at(n, blk, 0)) * 1e-3);
          v.push_back((static_cast<double>(at(n, blk, 0)) - static_cast<double>(last_end(n - 1))) * 1e-3);
        }
        std::sort(d.begin(), d.end());
        inner.push_back(d[d.size() / 2]);
        slowest.push_back(d.back());
        seen.push_back(median(v));
      }
      len += snprintf(line + len, sizeof line - len, "\n    %-8s %6.1f (input to count %.1f, slowest %.1f; input seen %.2f)",
                      kind[k], median(span), median(inner), median(slowest), median(seen));
    }
    if (stages == 0)
      printf("registers, %d rounds in flight, %d blocks, release %d:", ahead, Gr, m[2]);
    else
      printf("stages %2d (%3d KiB), ahead %2d, release %d:", stages, stages * 16, ahead, m[2]);
    printf(" %.1f us (min %.1f), %.1f%% of the bound; output %s\n"
           "  us a node (medians over the layers):%s\n",
           med * 1e3, ms.front() * 1e3, 100.0 * copy_ms / med,
           same ? "as the first mode's" : "DIFFERS", line);
    outv.resize(16384);
  }
  return 0;
}
