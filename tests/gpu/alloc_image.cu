// A device image for the allocator tests: the resident kernel and the built-in operators (the very code
// of kernel/image.cu) plus operators that call gpuos::dev::malloc / free. The test executable embeds
// it as gpuos_image_cubin, so the runtime boots it like the built-in image.
#include "kernel/scheduler.cu"
#include "kernel/dispatch.cu"
#include "kernel/builtin_ops.cu"
#include "kernel/builtin_entries.cuh"

#include "tests/gpu/alloc_test_ops.h"

namespace {

using gpuos::tlsf::mix32;

__device__ inline void fill(void* p, unsigned long long bytes, uint32_t tag) {
  auto* w = static_cast<uint32_t*>(p);
  const unsigned long long words = bytes / 4;
  for (unsigned long long k = 0; k < words; ++k) w[k] = tag + static_cast<uint32_t>(k);
  for (unsigned long long b = words * 4; b < bytes; ++b) static_cast<unsigned char*>(p)[b] = static_cast<unsigned char>(tag);
}

__device__ inline bool intact(const void* p, unsigned long long bytes, uint32_t tag) {
  const auto* w = static_cast<const uint32_t*>(p);
  const unsigned long long words = bytes / 4;
  bool ok = true;
  for (unsigned long long k = 0; k < words; ++k) ok &= w[k] == tag + static_cast<uint32_t>(k);
  for (unsigned long long b = words * 4; b < bytes; ++b)
    ok &= static_cast<const unsigned char*>(p)[b] == static_cast<unsigned char>(tag);
  return ok;
}

/// Each thread keeps one live block from the previous iteration while it allocates the next, and every
/// 4th iteration swaps its live block with its neighbour lane, so blocks are freed by other threads than
/// the ones that allocated them. Sizes differ lane by lane (the warp's requests are carved together).
__device__ void stress_tile(const alloc_stress_args& a, const gpuos::TileCtx& c) {
  const uint32_t tid = c.tile * blockDim.x + threadIdx.x;
  uint32_t rng = mix32(a.seed ^ (tid * 0x9e3779b9u));
  unsigned long long errors = 0, allocs = 0, nulls = 0, bad_frees = 0;
  void* live = nullptr;
  unsigned long long live_bytes = 0;
  uint32_t live_tag = 0;
  for (uint32_t it = 0; it < a.iters; ++it) {
    rng = mix32(rng + it);
    const unsigned long long bytes = 1 + rng % a.max_bytes;
    const unsigned long long align =
        a.align_every != 0 && (rng >> 8) % a.align_every == 0 ? 32ull << ((rng >> 20) % 8) : 16ull;
    void* p = gpuos::dev::malloc(bytes, align);
    const uint32_t tag = mix32(tid * 7919u + it);
    if (p == nullptr) {
      ++nulls;
    } else {
      ++allocs;
      if (reinterpret_cast<unsigned long long>(p) % align != 0) ++errors;
      fill(p, bytes, tag);
    }
    if (live != nullptr) {
      if (!intact(live, live_bytes, live_tag)) ++errors;
      if (gpuos::dev::free(live) != 0) ++bad_frees;
    }
    live = p;
    live_bytes = bytes;
    live_tag = tag;
    if (it % 4 == 3) {  // hand the live block to the neighbour lane
      __syncwarp();       // its pattern writes before the neighbour reads them
      live = reinterpret_cast<void*>(__shfl_xor_sync(0xffffffffu, reinterpret_cast<unsigned long long>(live), 1));
      live_bytes = __shfl_xor_sync(0xffffffffu, live_bytes, 1);
      live_tag = __shfl_xor_sync(0xffffffffu, live_tag, 1);
    }
  }
  if (live != nullptr) {
    if (!intact(live, live_bytes, live_tag)) ++errors;
    if (gpuos::dev::free(live) != 0) ++bad_frees;
  }
  atomicAdd(&a.counters[0], errors);
  atomicAdd(&a.counters[1], allocs);
  atomicAdd(&a.counters[2], nulls);
  atomicAdd(&a.counters[3], bad_frees);
}

__device__ void keep_tile(const alloc_keep_args& a, const gpuos::TileCtx& c) {
  const uint32_t tid = c.tile * blockDim.x + threadIdx.x;
  void* p = gpuos::dev::malloc(a.bytes);
  if (p) fill(p, a.bytes, mix32(a.seed + tid));
  a.slots[tid] = p;
}

__device__ void release_tile(const alloc_release_args& a, const gpuos::TileCtx& c) {
  const uint32_t tid = c.tile * blockDim.x + threadIdx.x;
  void* p = a.slots[tid];
  if (p == nullptr) {
    atomicAdd(&a.counters[2], 1ull);
    return;
  }
  if (!intact(p, a.bytes, mix32(a.seed + tid))) atomicAdd(&a.counters[0], 1ull);
  atomicAdd(&a.counters[1], 1ull);
  if (a.free_them) {
    if (gpuos::dev::free(p) != 0) atomicAdd(&a.counters[3], 1ull);
    a.slots[tid] = nullptr;
  }
}

/// Allocates until the heap says no, chaining the blocks through their first word (release = 0); frees
/// the chain (release = 1). Two tasks, so no thread frees while another still fills.
__device__ void exhaust_tile(const alloc_exhaust_args& a, const gpuos::TileCtx& c) {
  const uint32_t tid = c.tile * blockDim.x + threadIdx.x;
  if (a.release) {
    void* head = a.heads[tid];
    while (head != nullptr) {
      void* next = *static_cast<void**>(head);
      if (gpuos::dev::free(head) != 0) atomicAdd(&a.counters[3], 1ull);
      head = next;
    }
    a.heads[tid] = nullptr;
    return;
  }
  void* head = nullptr;
  unsigned long long n = 0;
  for (uint32_t i = 0; i < a.max_per_thread; ++i) {
    void* p = gpuos::dev::malloc(a.bytes);
    if (p == nullptr) break;
    *static_cast<void**>(p) = head;
    head = p;
    ++n;
  }
  a.heads[tid] = head;
  atomicAdd(&a.counters[0], n);
  atomicAdd(&a.counters[1], n * a.bytes);
}

}  // namespace

GPUOS_OPERATOR(alloc_stress, alloc_stress_args, stress_tile)
GPUOS_OPERATOR(alloc_keep, alloc_keep_args, keep_tile)
GPUOS_OPERATOR(alloc_release, alloc_release_args, release_tile)
GPUOS_OPERATOR(alloc_exhaust, alloc_exhaust_args, exhaust_tile)

static_assert(ALLOC_TEST_STRESS == GPUOS_BUILTIN_OP_COUNT && ALLOC_TEST_EXHAUST == 10,
              "the table below lists the operators in id order");
extern "C" __device__ const gpuos::OpEntry* const gpuos_op_table[GPUOS_MAX_OPS] = {
    GPUOS_BUILTIN_TABLE_ROWS &gpuos_op_alloc_stress_entry, &gpuos_op_alloc_keep_entry,
    &gpuos_op_alloc_release_entry, &gpuos_op_alloc_exhaust_entry,
};
