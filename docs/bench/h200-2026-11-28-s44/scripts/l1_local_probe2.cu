// Does an acquire fence (fence.acquire.gpu: CCTL.IVALL) drop local memory from L1, and global lines?
// Each thread writes 32 words of local memory (an array whose address escapes) and reads a global word
// through L1 (ld.global.ca); then, by mode, 0: nothing, 1: fence.acquire.gpu, 2: nothing, and the global
// word reloaded is one never read before (a miss: what a round trip costs). Then it times the reload of
// a local word and of the global word; each timed load's value is stored to shared memory before the
// clock is read again, so the clock is read after the load returned (a warp issues in order).
// Grid 264 x 256, H200. Build: nvcc -O2 -arch=sm_90.
#include <cstdio>
#include <cuda_runtime.h>
__device__ __forceinline__ unsigned long long clk() { unsigned long long t; asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory"); return t; }
__device__ __forceinline__ void use(float* s, float v) { asm volatile("st.volatile.shared.f32 [%0], %1;" ::"l"(s), "f"(v) : "memory"); }
__global__ void probe(const float* g, float* sink, unsigned long long* out, int mode) {
  __shared__ float keep[256];
  float loc[32];
  float* vp = loc;  // its address escapes: the array lives in local memory
  asm volatile("" : "+l"(vp)::"memory");
  const unsigned tid = threadIdx.x;
  for (int i = 0; i < 32; ++i) vp[i] = g[tid + i];
  float w;
  asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(w) : "l"(g + 4096 + tid) : "memory");
  use(&keep[tid], w);
  __syncthreads();
  if (mode == 1) asm volatile("fence.acquire.gpu;" ::: "memory");
  const float* gw = g + (mode == 2 ? 65536 + blockIdx.x * 256 : 4096) + tid;
  const unsigned long long t0 = clk();
  const float a = vp[(tid * 7u + static_cast<unsigned>(mode)) & 31u];
  use(&keep[tid], a);
  const unsigned long long t1 = clk();
  float b;
  asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(b) : "l"(gw) : "memory");
  use(&keep[tid], b);
  const unsigned long long t2 = clk();
  if (tid == 0) { out[2 * blockIdx.x] = t1 - t0; out[2 * blockIdx.x + 1] = t2 - t1; }
  if (keep[tid] == 1e30f) sink[tid] = a + b;
}
int main() {
  float *g, *sink; unsigned long long* out;
  cudaMalloc(&g, 1 << 22); cudaMemset(g, 0, 1 << 22); cudaMalloc(&sink, 4096); cudaMalloc(&out, 264 * 16);
  const char* names[] = {"no fence", "after fence.acquire.gpu", "no fence, the global word never read before (a miss)"};
  for (int mode = 0; mode < 3; ++mode) {
    unsigned long long h[528];
    for (int r = 0; r < 3; ++r) { probe<<<264, 256>>>(g, sink, out, mode); cudaDeviceSynchronize(); }
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    unsigned long long l[264], c[264];
    for (int b = 0; b < 264; ++b) { l[b] = h[2 * b]; c[b] = h[2 * b + 1]; }
    auto med = [](unsigned long long* v) { for (int i = 0; i < 264; ++i) for (int j = i + 1; j < 264; ++j) if (v[j] < v[i]) { auto t = v[i]; v[i] = v[j]; v[j] = t; } return v[132]; };
    printf("mode %d (%s): local reload p50 %llu cycles, global ld.ca reload p50 %llu cycles\n", mode, names[mode], med(l), med(c));
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
