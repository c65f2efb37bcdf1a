// Does a release fence (MEMBAR.ALL.GPU) wait for loads its block's other warps issue after it began?
// Warp 1's thread 32 stores a word, sets a shared flag, and fences; warps 2-7 spin on the flag, then, by
// mode: 0 nothing; 1 (reference) their loads issued before the flag, as in the earlier probe; 2 one batch
// of 16 x 16 B loads a thread issued right after the flag; 3 loads issued continuously after the flag
// (a batch of 4 x 16 B a thread, consumed, the next, for ~30 us); 4 L2 bulk prefetches (16 x 64 KiB,
// thread 64) right after the flag; 5 the other block on the SM streaming continuously (odd blocks) while
// even blocks fence with nothing of their own.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__device__ __forceinline__ unsigned long long clk() { unsigned long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
__device__ __forceinline__ uint4 ldcg(const uint4* p) { uint4 v; asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p) : "memory"); return v; }
__global__ void probe(const uint4* big, size_t n16, float* sink, unsigned* word, unsigned long long* out, int mode) {
  __shared__ volatile unsigned flag;
  const unsigned tid = threadIdx.x, warp = tid / 32;
  if (tid == 0) flag = 0;
  __syncthreads();
  const unsigned long long t0 = clk();
  uint4 acc = make_uint4(0, 0, 0, 0);
  const size_t base = ((size_t)blockIdx.x * 256 + tid) * 16;
  const bool fencer = !(mode == 5 && (blockIdx.x & 1));
  if (mode == 1 && warp >= 2) {
    uint4 v[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = ldcg(big + (base + (size_t)i * 4096 * 264) % n16);
    while (clk() - t0 < 20000) {}
#pragma unroll
    for (int i = 0; i < 16; ++i) acc.x += v[i].x ^ v[i].w;
  }
  if (mode == 2 && warp >= 2) {
    while (flag == 0) {}
    uint4 v[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = ldcg(big + (base + (size_t)i * 4096 * 264) % n16);
#pragma unroll
    for (int i = 0; i < 16; ++i) acc.x += v[i].x ^ v[i].w;
  }
  if ((mode == 3 && warp >= 2) || (mode == 5 && (blockIdx.x & 1))) {
    if (mode == 3) while (flag == 0) {}
    const unsigned long long s = clk();
    size_t off = base;
    while (clk() - s < 60000) {
      uint4 v[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = ldcg(big + (off + (size_t)i * 4096 * 264) % n16);
#pragma unroll
      for (int i = 0; i < 4; ++i) acc.x += v[i].x ^ v[i].w;
      off += 4096 * 264 * 4 + 7;
    }
  }
  if (mode == 4 && tid == 64) {
    while (flag == 0) {}
    const char* c = reinterpret_cast<const char*>(big) + ((size_t)blockIdx.x << 20) % (n16 * 16 - (1 << 20));
    for (int i = 0; i < 16; ++i) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c + i * 65536), "r"(65536) : "memory");
  }
  if (tid == 32 && fencer) {
    while (clk() - t0 < (mode == 5 ? 8000 : 3000)) {}
    word[blockIdx.x * 32] = 1;
    flag = 1;
    const unsigned long long a = clk();
    asm volatile("fence.release.gpu;" ::: "memory");
    const unsigned long long b = clk();
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(word + 1) : "memory");
    out[blockIdx.x] = b - a;
  }
  if (mode == 5 && !(blockIdx.x & 1) && tid == 32) {}
  if (acc.x == 0x12345678u) sink[tid] = 1.f;
}
int main() {
  size_t bytes = 1ull << 30, n16 = bytes / 16;
  uint4* big; float* sink; unsigned* word; unsigned long long* out;
  cudaMalloc(&big, bytes); cudaMemset(big, 1, bytes);
  cudaMalloc(&sink, 4096); cudaMalloc(&word, 264 * 128 + 64); cudaMalloc(&out, 264 * 8);
  cudaMemset(word, 0, 264 * 128 + 64);
  unsigned long long h[264];
  const char* names[] = {"nothing in flight", "own warps 2-7: 16 x 16 B loads a thread issued before the fence",
    "own warps 2-7: 16 x 16 B loads a thread issued right after the fence began",
    "own warps 2-7: loads streamed continuously from right after the fence began",
    "own block: 16 x 64 KiB L2 bulk prefetches issued right after the fence began",
    "other block on the SM streaming continuously, nothing of its own"};
  for (int mode = 0; mode < 6; ++mode) {
    for (int rep = 0; rep < 3; ++rep) {
      probe<<<264, 256>>>(big, n16, sink, word, out, mode);
      cudaDeviceSynchronize();
    }
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    unsigned long long v[264]; int k = 0;
    for (int b = 0; b < 264; ++b) if (!(mode == 5 && (b & 1))) v[k++] = h[b];
    for (int i = 0; i < k; ++i) for (int j = i + 1; j < k; ++j) if (v[j] < v[i]) { auto t = v[i]; v[i] = v[j]; v[j] = t; }
    printf("mode %d (%s): fence cycles min %llu p50 %llu p90 %llu max %llu\n", mode, names[mode], v[0], v[k / 2], v[k * 9 / 10], v[k - 1]);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
