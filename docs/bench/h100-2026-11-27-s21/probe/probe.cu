#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstring>
#include <cuda_runtime.h>
struct TileCtx { unsigned tile, tiles; unsigned long long ticket; void* smem; double* scratch; };
struct AddArgs { const float* a; const float* b; float* c; unsigned long long n; };
typedef void (*TileFn)(const void*, const TileCtx&, unsigned);
extern __device__ TileFn op_table[2];
namespace gpuos { struct TileCtx { unsigned int tile, tiles; unsigned long long ticket; void* smem; double* scratch; }; }
typedef void (*TileFn2)(const void*, const gpuos::TileCtx&, unsigned);
extern __device__ TileFn2 op_table2[2];
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

// A node record: 256 B, payload at 64: op, args (64 B), successor.
struct alignas(128) Rec { unsigned long long claim, pad0[7]; unsigned op, succ, tiles, pad1; unsigned long long pad2[2]; unsigned char args[64]; unsigned long long pad3[12]; };
static_assert(sizeof(Rec) == 256, "");

__device__ __forceinline__ void cp16(void* d, const void* s) {
  unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(d));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(s) : "memory");
}
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_all;" ::: "memory"); }

__device__ __forceinline__ void add_inline(const AddArgs& a) {
  for (unsigned long long i = threadIdx.x; i < a.n; i += blockDim.x) a.c[i] = a.a[i] + a.b[i];
}
__device__ __noinline__ void add_noinline(const void* p, const TileCtx&, unsigned) { add_inline(*static_cast<const AddArgs*>(p)); }

struct Sh { unsigned char rec[2][128]; };  // op..args of a record (bytes 64..191)

// mode 0: indirect call through the table; 1: switch with the add inlined; 2: direct non-inlined call.
// watch: two stores per step to a watchdog word.
template <int kMode, bool kWatch>
__global__ void __launch_bounds__(256, 2) chain(const Rec* recs, unsigned first, unsigned long long* work, unsigned long long* cycles) {
  __shared__ Sh sh;
  __shared__ TileFn fns[2];
  __shared__ TileFn2 fns2[2];
  if (blockIdx.x != 0) return;
  if (threadIdx.x < 2) fns[threadIdx.x] = op_table[threadIdx.x];
  if (threadIdx.x < 2) fns2[threadIdx.x] = op_table2[threadIdx.x];
  const unsigned tid = threadIdx.x;
  unsigned cur = first, b = 0;
  if (tid < 8) cp16(&sh.rec[0][16 * tid], reinterpret_cast<const char*>(&recs[cur]) + 64 + 16 * tid);
  cp_wait();
  __syncthreads();
  long long t0 = clock64();
  unsigned steps = 0;
  for (;;) {
    const unsigned* w = reinterpret_cast<const unsigned*>(sh.rec[b]);
    const unsigned op = w[0], succ = w[1];
    const void* args = sh.rec[b] + 32;
    if (succ != ~0u && tid < 8) cp16(&sh.rec[b ^ 1][16 * tid], reinterpret_cast<const char*>(&recs[succ]) + 64 + 16 * tid);
    if (kWatch && tid == 0) asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(work), "l"((unsigned long long)cur), "l"((unsigned long long)steps) : "memory");
    TileCtx c{0u, 1u, cur, nullptr, nullptr};
    if (kMode == 3) {
      const gpuos::TileCtx c2{0u, 1u, cur, nullptr, nullptr};
      fns2[op](args, c2, 1u);
    } else if (kMode == 0) {
      fns[op](args, c, 1u);
    } else if (kMode == 1) {
      switch (op) {
        case 0: break;
        case 1: add_inline(*static_cast<const AddArgs*>(args)); break;
        default: break;
      }
    } else {
      if (op == 1) add_noinline(args, c, 1u);
    }
    if (kWatch && tid == 0) *reinterpret_cast<volatile unsigned*>(work + 1) = steps;
    cp_wait();
    __syncthreads();
    ++steps;
    if (succ == ~0u) break;
    cur = succ;
    b ^= 1;
  }
  if (tid == 0) cycles[0] = clock64() - t0;
}

__global__ void add_kernel(const float* a, const float* b, float* c, unsigned long long n) {
  for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) c[i] = a[i] + b[i];
}

int main() {
  const unsigned N = 256, reps = 50;
  float *x, *ones; Rec* recs; unsigned long long *work, *cyc;
  CK(cudaMalloc(&x, 256 * 4)); CK(cudaMalloc(&ones, 256 * 4)); CK(cudaMalloc(&recs, sizeof(Rec) * N));
  CK(cudaMalloc(&work, 64)); CK(cudaMalloc(&cyc, 64));
  std::vector<float> h1(256, 1.0f); CK(cudaMemcpy(ones, h1.data(), 1024, cudaMemcpyHostToDevice));
  CK(cudaMemset(x, 0, 1024));
  std::vector<Rec> hr(N);
  for (unsigned i = 0; i < N; ++i) {
    Rec r{}; r.op = 1; r.succ = i + 1 < N ? i + 1 : ~0u; r.tiles = 1;
    AddArgs a{x, ones, x, 256}; memcpy(r.args, &a, sizeof a); hr[i] = r;
  }
  CK(cudaMemcpy(recs, hr.data(), sizeof(Rec) * N, cudaMemcpyHostToDevice));
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int clk; CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  auto run = [&](const char* name, auto kern, unsigned grid) -> int {
    std::vector<float> ts;
    unsigned long long cy = 0;
    for (unsigned r = 0; r < reps + 5; ++r) {
      CK(cudaEventRecord(e0, s));
      kern<<<grid, 256, 0, s>>>(recs, 0u, work, cyc);
      CK(cudaEventRecord(e1, s));
      CK(cudaStreamSynchronize(s));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
      if (r >= 5) ts.push_back(ms);
      CK(cudaMemcpy(&cy, cyc, 8, cudaMemcpyDeviceToHost));
    }
    std::sort(ts.begin(), ts.end());
    printf("%-32s grid %4u: kernel %.3f us/step (median), in-loop %.0f cycles/step (last rep)\n", name, grid, ts[ts.size() / 2] * 1000.0 / N, double(cy) / N);
    return 0;
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (unsigned grid : {1u, 2u * sms}) {
      run("indirect call", chain<0, false>, grid);
      run("indirect call + watch stores", chain<0, true>, grid);
      run("direct call (noinline)", chain<2, false>, grid);
      run("switch, inlined", chain<1, false>, grid);
      run("indirect call, gpuos add adapter", chain<3, false>, grid);
      run("gpuos add adapter + watch stores", chain<3, true>, grid);
      run("switch, inlined + watch stores", chain<1, true>, grid);
    }
  }
  // CUDA graph of N add kernels
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (unsigned i = 0; i < N; ++i) add_kernel<<<1, 256, 0, s>>>(x, ones, x, 256);
  CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
  std::vector<float> ts;
  for (unsigned r = 0; r < reps + 5; ++r) {
    CK(cudaEventRecord(e0, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(e1, s)); CK(cudaStreamSynchronize(s));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (r >= 5) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  printf("%-32s: %.3f us/step (median)\n", "CUDA graph of the chain", ts[ts.size() / 2] * 1000.0 / N);
  printf("clock %d kHz, %d SMs\n", clk, sms);
  return 0;
}
