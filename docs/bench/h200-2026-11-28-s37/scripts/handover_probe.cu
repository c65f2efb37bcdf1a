// One-way hand-over of a 2048-element activation vector between two blocks on different SMs, ping-pong:
//  counter: the producer's threads store the vector (4 KiB), a barrier, one thread fence.release + red on a
//           counter; the consumer's warp 0 polls the counter, fence.acquire, a barrier, every thread reads
//           its share of the vector (checked);
//  tagged:  each 4-byte value travels with its round's tag in one 8-byte relaxed store (8 KiB); no fence,
//           no counter: the consumer's threads poll their own words until every tag is the round's, then a
//           barrier (__syncthreads_and over the values' check).
// Prints the median and p90 of the one-way time (half a round trip) in ns over the rounds.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)
__device__ __forceinline__ uint64_t gt() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) { unsigned v; asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ uint2 ld_relaxed2(const uint2* p) { uint2 v; asm volatile("ld.relaxed.gpu.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ void st_relaxed2(uint2* p, uint2 v) { asm volatile("st.relaxed.gpu.global.v2.u32 [%0], {%1, %2};" :: "l"(p), "r"(v.x), "r"(v.y) : "memory"); }
constexpr int kN = 1024;  // 32-bit values (2048 bf16)
__global__ void __launch_bounds__(256) handover(int mode, int rounds, unsigned* vec, uint2* tagged, unsigned* ctr, uint64_t* out, int* bad) {
  const unsigned tid = threadIdx.x, me = blockIdx.x;  // block 0 produces even rounds, block 1 odd
  __shared__ int ok;
  for (int r = 0; r < rounds; ++r) {
    const bool produce = (r & 1) == (int)me;
    if (produce) {
      if (mode == 0) {
        for (int i = tid; i < kN; i += 256) vec[i] = r * 7919u + i;
        __syncthreads();
        if (tid == 32) {
          asm volatile("fence.release.gpu;" ::: "memory");
          asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" :: "l"(ctr) : "memory");
        }
      } else {
        for (int i = tid; i < kN; i += 256) st_relaxed2(&tagged[i], make_uint2(r * 7919u + i, unsigned(r + 1)));
      }
      if (me == 0 && tid == 0) out[r] = gt();
    } else {
      if (mode == 0) {
        if (tid < 32) {
          if (tid == 0) while ((int)ld_relaxed(ctr) < r + 1) {}
          __syncwarp();
          asm volatile("fence.acquire.gpu;" ::: "memory");
        }
        __syncthreads();
        int good = 1;
        for (int i = tid; i < kN; i += 256) good &= vec[i] == r * 7919u + i;
        if (!__syncthreads_and(good) && tid == 0) atomicAdd(bad, 1);
      } else {
        int good = 1;
        for (int i = tid; i < kN; i += 256) {
          uint2 v = ld_relaxed2(&tagged[i]);
          while (v.y != unsigned(r + 1)) v = ld_relaxed2(&tagged[i]);
          good &= v.x == r * 7919u + i;
        }
        if (!__syncthreads_and(good) && tid == 0) atomicAdd(bad, 1);
      }
      if (me == 0 && tid == 0) out[r] = gt();
    }
  }
  if (tid == 0) { unsigned s; asm("mov.u32 %0, %%smid;" : "=r"(s)); out[rounds + me] = s; }
}
int main() {
  const int rounds = 20001;
  unsigned *vec, *ctr; uint2* tagged; uint64_t* out; int* bad;
  CK(cudaMalloc(&vec, kN * 4)); CK(cudaMalloc(&tagged, kN * 8)); CK(cudaMalloc(&ctr, 4));
  CK(cudaMalloc(&out, (rounds + 2) * 8)); CK(cudaMalloc(&bad, 4));
  for (int mode = 0; mode < 2; ++mode) {
    for (int rep = 0; rep < 2; ++rep) {
      CK(cudaMemset(ctr, 0, 4)); CK(cudaMemset(tagged, 0, kN * 8)); CK(cudaMemset(bad, 0, 4));
      handover<<<2, 256>>>(mode, rounds, vec, tagged, ctr, out, bad);
      CK(cudaDeviceSynchronize());
      std::vector<uint64_t> h(rounds + 2); int hb = 0;
      CK(cudaMemcpy(h.data(), out, h.size() * 8, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(&hb, bad, 4, cudaMemcpyDeviceToHost));
      std::vector<double> d;  // block 0's stamps: produced at even r, consumed at odd r; a round trip = two hand-overs
      for (int r = 100; r + 2 < rounds; r += 2) d.push_back((h[r + 2] - h[r]) / 2.0);
      std::sort(d.begin(), d.end());
      if (rep == 1)
        printf("%-8s one-way %.0f ns median, %.0f p90 (SMs %llu, %llu; bad %d)\n", mode ? "tagged" : "counter", d[d.size() / 2],
               d[d.size() * 9 / 10], (unsigned long long)h[rounds], (unsigned long long)h[rounds + 1], hb);
    }
  }
  return 0;
}
