// Kernels of bench_alloc: the gpuos heap (kernel/tlsf.hpp, the code gpuos::dev::malloc runs) and CUDA's
// device malloc under the same protocol, plus the checks and measurements of the results. Compiled to
// its own cubin (CUDA's malloc heap is a per-context setting made before any of these kernels runs).
#include "kernel/heap.cuh"  // heap init kernels, tlsf.hpp

using gpuos::tlsf::Control;

namespace {
__device__ inline unsigned idx() { return blockIdx.x * blockDim.x + threadIdx.x; }
using gpuos::tlsf::mix32;
/// Mixed sizes: uniform in [16, 4096].
__device__ inline unsigned long long mixed_size(unsigned i, unsigned seed) { return 16 + mix32(i * 0x9e3779b9u ^ seed) % 4081; }
}  // namespace

// ---- the gpuos heap -------------------------------------------------------------------------------------
/// One malloc per thread of `bytes` (bytes == 0: mixed sizes, written to sizes[]), warp-aggregated.
extern "C" __global__ void bench_heap_alloc(Control* c, unsigned long long bytes, unsigned seed, void** out,
                                            unsigned long long* sizes, unsigned n) {
  const unsigned i = idx();
  if (i >= n) return;
  const unsigned long long b = bytes ? bytes : mixed_size(i, seed);
  out[i] = gpuos::tlsf::warp_alloc(c, b, 16, gpuos::tlsf::warp_hint());
  if (sizes) sizes[i] = b;
}

/// The same without warp aggregation: every thread takes its arena's lock on its own.
extern "C" __global__ void bench_heap_alloc_plain(Control* c, unsigned long long bytes, void** out, unsigned n) {
  const unsigned i = idx();
  if (i >= n) return;
  out[i] = gpuos::tlsf::alloc(c, bytes, 16, gpuos::tlsf::warp_hint());
}

extern "C" __global__ void bench_heap_free(Control* c, void** ptrs, unsigned n, unsigned* bad) {
  const unsigned i = idx();
  if (i >= n) return;
  if (gpuos::tlsf::warp_free(c, ptrs[i]) != gpuos::tlsf::kOk) atomicAdd(bad, 1u);
}

extern "C" __global__ void bench_heap_free_plain(Control* c, void** ptrs, unsigned n, unsigned* bad) {
  const unsigned i = idx();
  if (i >= n) return;
  if (gpuos::tlsf::free(c, ptrs[i]) != gpuos::tlsf::kOk) atomicAdd(bad, 1u);
}

/// Invariant check, one thread per arena: out[0] = failing arenas, out[1] = lowest failing arena.
extern "C" __global__ void bench_heap_check(Control* c, unsigned* out) {
  const unsigned i = idx();
  if (i >= gpuos::tlsf::arena_count(c)) return;
  const gpuos::tlsf::CheckResult r = gpuos::tlsf::check_one(c, i);
  if (!r.ok) {
    atomicAdd(&out[0], 1u);
    atomicMin(&out[1], i);
  }
}

extern "C" __global__ void bench_heap_stats(Control* c, gpuos::tlsf::Stats* out) {
  if (idx() == 0) *out = gpuos::tlsf::stats(c);
}

/// OOM fill: every thread allocates mixed sizes (bytes == 0) or `bytes` until its first null, chaining
/// its blocks through their first word (heads[i]). acc[0] += requested bytes, acc[1] += blocks.
extern "C" __global__ void bench_heap_fill(Control* c, unsigned long long bytes, unsigned seed, void** heads,
                                           unsigned long long* acc, unsigned n) {
  const unsigned i = idx();
  if (i >= n) return;
  void* head = nullptr;
  unsigned long long req = 0, blocks = 0;
  for (unsigned k = 0;; ++k) {
    const unsigned long long b = bytes ? bytes : mixed_size(i + k * n, seed);
    void* p = gpuos::tlsf::warp_alloc(c, b, 16, gpuos::tlsf::warp_hint());
    if (p == nullptr) break;
    *static_cast<void**>(p) = head;
    head = p;
    req += b;
    ++blocks;
  }
  heads[i] = head;
  atomicAdd(&acc[0], req);
  atomicAdd(&acc[1], blocks);
}

extern "C" __global__ void bench_heap_unchain(Control* c, void** heads, unsigned n, unsigned* bad) {
  const unsigned i = idx();
  if (i >= n) return;
  for (void* p = heads[i]; p != nullptr;) {
    void* next = *static_cast<void**>(p);
    if (gpuos::tlsf::free(c, p) != gpuos::tlsf::kOk) atomicAdd(bad, 1u);
    p = next;
  }
}

/// Fragmentation round: thread i fills its empty slot with a block (mixed sizes when bytes == 0);
/// bench_frag_free then frees a random half of the slots (or all). Slots hold the pointer; sizes[] the request.
extern "C" __global__ void bench_frag_alloc(Control* c, unsigned long long bytes, unsigned seed, void** slots,
                                            unsigned long long* sizes, unsigned n) {
  const unsigned i = idx();
  if (i >= n) return;
  if (slots[i] != nullptr) return;
  const unsigned long long b = bytes ? bytes : mixed_size(i, seed);
  slots[i] = gpuos::tlsf::warp_alloc(c, b, 16, gpuos::tlsf::warp_hint());
  sizes[i] = slots[i] ? b : 0;
}
extern "C" __global__ void bench_frag_free(Control* c, unsigned seed, unsigned keep_mask, void** slots,
                                           unsigned long long* sizes, unsigned n, unsigned* bad) {
  const unsigned i = idx();
  if (i >= n || slots[i] == nullptr) return;
  if (mix32(i ^ seed) & keep_mask) return;  // keep_mask 1: free half at random; 0: free all
  if (gpuos::tlsf::warp_free(c, slots[i]) != gpuos::tlsf::kOk) atomicAdd(bad, 1u);
  slots[i] = nullptr;
  sizes[i] = 0;
}
/// Address range in use: per arena the highest end of a live block (offset from the arena's start);
/// acc[0] += requested bytes of the live blocks.
extern "C" __global__ void bench_frag_measure(Control* c, void** slots, unsigned long long* sizes, unsigned n,
                                              unsigned long long* high, unsigned long long* acc) {
  const unsigned i = idx();
  if (i >= n || slots[i] == nullptr) return;
  const unsigned long long off = reinterpret_cast<unsigned long long>(slots[i]) - c->base;
  const unsigned a = gpuos::tlsf::detail::arena_of(c, off);
  atomicMax(&high[a], off + sizes[i] - gpuos::tlsf::arena(c, a)->begin);
  atomicAdd(&acc[0], sizes[i]);
}

// ---- CUDA's device malloc -------------------------------------------------------------------------------
extern "C" __global__ void bench_cuda_alloc(unsigned long long bytes, unsigned seed, void** out, unsigned n) {
  const unsigned i = idx();
  if (i >= n) return;
  out[i] = malloc(bytes ? bytes : mixed_size(i, seed));
}
extern "C" __global__ void bench_cuda_free(void** ptrs, unsigned n) {
  const unsigned i = idx();
  if (i >= n) return;
  free(ptrs[i]);
}

// ---- common ---------------------------------------------------------------------------------------------
extern "C" __global__ void bench_count_null(void** p, unsigned n, unsigned* nulls) {
  const unsigned i = idx();
  if (i < n && p[i] == nullptr) atomicAdd(nulls, 1u);
}
