// What a release fence waits for: one thread times fence.acq_rel.gpu / fence.release.gpu after its
// block's small writes, alone, with the block's own loads in flight, after L2 prefetches, with a
// neighbour block on the SM streaming loads, and with copies into shared memory in flight (bulk copies
// completing on an mbarrier; cp.async of 16 B a thread). Prints the median and p90 in cycles per mode.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)
__device__ __forceinline__ uint64_t gt() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ long long ck() { return clock64(); }
template <int kRel>
__device__ __forceinline__ void fence() {
  if (kRel) asm volatile("fence.release.gpu;" ::: "memory");
  else asm volatile("fence.acq_rel.gpu;" ::: "memory");
}
// mode: 0 plain; 1 own loads in flight (warps 2-7, 8 x 16 B each, not yet used); 2 after 32 L2 prefetches
// a thread of cold lines; 3 odd blocks stream loads the whole time (the even block of the SM fences)
template <int kRel>
__global__ void __launch_bounds__(256, 2) probe(int mode, float* out, const uint4* big, size_t nbig, long long* res, int reps, unsigned* stop) {
  const unsigned tid = threadIdx.x;
  if (mode == 3 && (blockIdx.x & 1)) {  // the neighbour: streams until told to stop
    uint4 acc = make_uint4(0, 0, 0, 0);
    size_t i = (size_t(blockIdx.x) * 256 + tid) * 4;
    while (*(volatile unsigned*)stop == 0) {
      for (int k = 0; k < 16; ++k) { uint4 v = __ldcs(big + (i % nbig)); acc.x ^= v.x; i += gridDim.x * 256 * 4 + 4; }
    }
    if (acc.x == 0x12345) out[0] = 1;
    return;
  }
  extern __shared__ __align__(128) unsigned char dyn[];
  __shared__ __align__(8) unsigned long long mbar;
  const unsigned sbase = static_cast<unsigned>(__cvta_generic_to_shared(dyn));
  const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&mbar));
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  for (int r = 0; r < reps; ++r) {
    out[(size_t(blockIdx.x) * 256 + tid) * 4 + (r & 3)] = float(r);
    uint4 v[8];
    if (mode == 1 && tid >= 64) {
      size_t base = (size_t(r) * gridDim.x * 256 + size_t(blockIdx.x) * 256 + tid) * 8 * 131;
      for (int k = 0; k < 8; ++k) v[k] = __ldcs(big + ((base + k * 4099) % nbig));
    }
    if (mode == 4 && tid < 8) {  // 8 bulk L2 prefetches of 16 KiB (128 KiB a block) of cold lines
      const size_t base = ((size_t(r) * gridDim.x + blockIdx.x) * 8 + tid) * 1024;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(big + (base % (nbig - 1024))), "r"(16384) : "memory");
    }
    if (mode == 2) {
      size_t base = (size_t(r) * gridDim.x * 256 + size_t(blockIdx.x) * 256 + tid) * 32 * 8;
      for (int k = 0; k < 32; ++k) asm volatile("prefetch.global.L2 [%0];" ::"l"(big + ((base + k * 8) % nbig)));
    }
    if (mode == 5 && tid == 0) {  // 4 bulk copies of 16 KiB of cold lines into shared memory (64 KiB)
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(65536) : "memory");
      const size_t base = ((size_t(r) * gridDim.x + blockIdx.x) * 4) * 1024;
      for (int k = 0; k < 4; ++k)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(sbase + 16384 * k), "l"(big + ((base + 1024 * k) % (nbig - 1024))), "r"(16384), "r"(bar) : "memory");
    }
    if (mode == 6) {  // cp.async of 16 B a thread, 16 a thread (64 KiB a block) of cold lines
      const size_t base = (size_t(r) * gridDim.x + blockIdx.x) * 4096;
      for (int k = 0; k < 16; ++k)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sbase + 16 * (k * 256 + tid)),
                     "l"(big + ((base + k * 256 + tid) % nbig)) : "memory");
      asm volatile("cp.async.commit_group;" ::: "memory");
    }
    __syncthreads();
    if (tid == 32) {
      long long t0 = ck();
      fence<kRel>();
      asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(stop + 1) : "memory");
      long long t1 = ck();
      res[size_t(blockIdx.x) * reps + r] = t1 - t0;
    }
    if (mode == 5 && tid == 0) {
      unsigned done = 0;
      while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(unsigned(r & 1)) : "memory");
    }
    if (mode == 6) asm volatile("cp.async.wait_all;" ::: "memory");
    if (mode == 1 && tid >= 64) { unsigned x = 0; for (int k = 0; k < 8; ++k) x ^= v[k].x; if (x == 0x9876) out[1] = 2; }
    __syncthreads();
  }
  if (mode == 3 && tid == 0) atomicAdd(stop + 2, 1u);
}
constexpr int kDyn = 65536;
int main() {
  int sms = 0, clk = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
  const int blocks = 2 * sms, reps = 64;
  const size_t nbig = size_t(1) << 28;  // 4 GiB of uint4
  uint4* big; float* out; long long* res; unsigned* stop;
  CK(cudaMalloc(&big, nbig * 16)); CK(cudaMemset(big, 1, nbig * 16));
  CK(cudaMalloc(&out, size_t(blocks) * 256 * 4 * 4));
  CK(cudaMalloc(&res, size_t(blocks) * reps * 8));
  CK(cudaMalloc(&stop, 16));
  printf("SMs %d, clock %d kHz; cycles of one fence + red by one thread (median / p90 over blocks and reps)\n", sms, clk);
  CK(cudaFuncSetAttribute(probe<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, kDyn));
  CK(cudaFuncSetAttribute(probe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kDyn));
  for (int mode = 0; mode < 7; ++mode)
    for (int rel = 0; rel < 2; ++rel) {
      for (int w = 0; w < 2; ++w) {
        CK(cudaMemset(res, 0, size_t(blocks) * reps * 8));
        CK(cudaMemset(stop, 0, 16));
        if (mode == 3) {
          // the fencing (even) blocks end on their own; stop the neighbours after them
          cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
          if (rel) probe<1><<<blocks, 256, kDyn, s>>>(mode, out, big, nbig, res, reps, stop);
          else probe<0><<<blocks, 256, kDyn, s>>>(mode, out, big, nbig, res, reps, stop);
          unsigned h[3] = {0, 0, 0};
          for (int t = 0; t < 20000 && h[2] < unsigned(blocks / 2); ++t) { CK(cudaMemcpy(h, stop, 12, cudaMemcpyDeviceToHost)); }
          unsigned one = 1; CK(cudaMemcpy(stop, &one, 4, cudaMemcpyHostToDevice));
          CK(cudaStreamSynchronize(s)); CK(cudaStreamDestroy(s));
        } else {
          if (rel) probe<1><<<blocks, 256, kDyn>>>(mode, out, big, nbig, res, reps, stop);
          else probe<0><<<blocks, 256, kDyn>>>(mode, out, big, nbig, res, reps, stop);
          CK(cudaDeviceSynchronize());
        }
      }
      std::vector<long long> h(size_t(blocks) * reps), v;
      CK(cudaMemcpy(h.data(), res, h.size() * 8, cudaMemcpyDeviceToHost));
      for (int b = 0; b < blocks; ++b)
        if (mode != 3 || !(b & 1))
          for (int r = 2; r < reps; ++r) v.push_back(h[size_t(b) * reps + r]);
      std::sort(v.begin(), v.end());
      const char* names[] = {"plain", "own loads in flight", "after 32 L2 prefetches a thread", "neighbour streaming (pairing not controlled)", "after 8 bulk L2 prefetches of 16 KiB", "4 bulk copies of 16 KiB to shared in flight", "cp.async 16 x 16 B a thread in flight"};
      printf("%-44s %-8s median %6lld  p90 %6lld cycles\n", names[mode], rel ? "release" : "acq_rel", v[v.size() / 2], v[v.size() * 9 / 10]);
    }
  return 0;
}
