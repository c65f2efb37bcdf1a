// Which outstanding memory operations a release fence (MEMBAR.ALL.GPU) waits for: its own warp's, its
// block's other warps', or the other block's on the same SM. Warp 1's thread 32 stores a word and fences;
// mode says who has HBM loads in flight at that moment.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
__device__ __forceinline__ unsigned long long clk() { unsigned long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)); return t; }
__device__ __forceinline__ uint4 ldcg(const uint4* p) { uint4 v; asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x),"=r"(v.y),"=r"(v.z),"=r"(v.w) : "l"(p) : "memory"); return v; }
// mode 0: nothing in flight; 1: warps 2-7 of this block have loads in flight; 2: the other block on the SM
// (odd blocks) has loads in flight, even blocks fence; 3: warp 1 itself has loads in flight (other lanes)
// 4: warps 2-7 have L2 bulk prefetches in flight (thread 64 issues 16 x 64 KiB)
__global__ void probe(const uint4* big, size_t n16, float* sink, unsigned* word, unsigned long long* out, int mode) {
  const unsigned tid = threadIdx.x, warp = tid / 32;
  const unsigned long long t0 = clk();
  bool loader = (mode == 1 && warp >= 2) || ((mode == 2 || mode == 7) && (blockIdx.x & 1)) || (mode == 3 && warp == 1 && tid != 32);
  uint4 acc = make_uint4(0,0,0,0);
  if (loader) {
    size_t base = ((size_t)blockIdx.x * 256 + tid) * 16;
    uint4 v[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) v[i] = ldcg(big + (base + (size_t)i * 4096 * 264) % n16);
    while (clk() - t0 < 20000) {}
#pragma unroll
    for (int i = 0; i < 16; ++i) acc.x += v[i].x ^ v[i].w;
  }
  if (mode == 5 && warp >= 2) {  // 1 MiB of line prefetches, spread over warps 2-7
    const char* c = reinterpret_cast<const char*>(big) + ((size_t)blockIdx.x << 20) % (n16 * 16 - (1 << 20));
    for (unsigned l = tid - 64; l < 8192; l += 192) asm volatile("prefetch.global.L2 [%0];" ::"l"(c + (size_t)l * 128) : "memory");
  }
  if (mode == 6 && (blockIdx.x & 1) && tid == 64) {  // the other block's bulk prefetches
    const char* c = reinterpret_cast<const char*>(big) + ((size_t)blockIdx.x << 20) % (n16 * 16 - (1 << 20));
    for (int i = 0; i < 16; ++i) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c + i * 65536), "r"(65536) : "memory");
  }
  if (mode == 7 && warp >= 2) {  // own block's stores in flight (16 x 16 B a thread), the other block loading
    uint4* q = const_cast<uint4*>(big) + (((size_t)blockIdx.x * 256 + tid) * 16) % n16;
    for (int i = 0; i < 16; ++i) q[i * 4096] = make_uint4(i, tid, 0, 0);
  }
  if (mode == 8 && warp >= 2) {  // 1 MiB of L2::evict_last line prefetches over warps 2-7
    const char* c = reinterpret_cast<const char*>(big) + ((size_t)blockIdx.x << 20) % (n16 * 16 - (1 << 20));
    for (unsigned l = tid - 64; l < 8192; l += 192) asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(c + (size_t)l * 128) : "memory");
  }
  if (mode == 4 && tid == 64) {
    const char* c = reinterpret_cast<const char*>(big) + ((size_t)blockIdx.x << 20) % (n16 * 16 - (1 << 20));
    for (int i = 0; i < 16; ++i) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c + i * 65536), "r"(65536) : "memory");
  }
  if (tid == 32 && !((mode == 2 || mode == 6 || mode == 7) && (blockIdx.x & 1))) {
    while (clk() - t0 < 3000) {}  // the loads are issued by now
    word[blockIdx.x * 32] = 1;
    const unsigned long long a = clk();
    asm volatile("fence.release.gpu;" ::: "memory");
    const unsigned long long b = clk();
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(word + 1) : "memory");
    out[blockIdx.x] = b - a;
  }
  if (acc.x == 0x12345678u) sink[tid] = 1.f;
}
int main() {
  size_t bytes = 1ull << 30, n16 = bytes / 16;
  uint4* big; float* sink; unsigned* word; unsigned long long* out;
  cudaMalloc(&big, bytes); cudaMemset(big, 1, bytes);
  cudaMalloc(&sink, 4096); cudaMalloc(&word, 264 * 128 + 64); cudaMalloc(&out, 264 * 8);
  cudaMemset(word, 0, 264 * 128 + 64);
  unsigned long long h[264];
  const char* names[] = {"nothing in flight", "own block's warps 2-7: 16 x 16 B loads a thread", "other block on the SM: loads", "own warp's other lanes: loads", "own block: 16 x 64 KiB L2 bulk prefetches",
    "own block: 1 MiB of prefetch.global.L2 lines (warps 2-7)", "other block on the SM: 16 x 64 KiB bulk prefetches",
    "own block: stores in flight (warps 2-7, 16 x 16 B a thread), other block loading", "own block: 1 MiB of prefetch.global.L2::evict_last lines"};
  for (int mode = 0; mode < 9; ++mode) {
    for (int rep = 0; rep < 3; ++rep) {
      probe<<<264, 256>>>(big, n16, sink, word, out, mode);
      cudaDeviceSynchronize();
    }
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    unsigned long long v[264]; int k = 0;
    for (int b = 0; b < 264; ++b) if (!((mode == 2 || mode == 6 || mode == 7) && (b & 1))) v[k++] = h[b];
    for (int i = 0; i < k; ++i) for (int j = i + 1; j < k; ++j) if (v[j] < v[i]) { auto t = v[i]; v[i] = v[j]; v[j] = t; }
    printf("mode %d (%s): fence cycles min %llu p50 %llu p90 %llu max %llu\n", mode, names[mode], v[0], v[k / 2], v[k * 9 / 10], v[k - 1]);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
