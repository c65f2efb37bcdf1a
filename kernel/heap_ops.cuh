// The heap as the resident kernel's operators see it: gpuos::dev::malloc / free (declared in
// gpuos/op.cuh, defined here, in the image, so operators linked in later with nvJitLink reach them) and
// the control operator through which the host allocates, frees, reads statistics and runs the checker.
//
// The heap (control block and pool) is device memory the host allocated and initialised at boot; it is
// reached through LaunchParams::heap, so it survives every relaunch. The one __device__ global below is
// a copy of that pointer, written by each launch before its grid barrier: no allocator state lives in
// the image.
#pragma once

#include "gpuos/op.cuh"
#include "kernel/heap.cuh"
#include "kernel/wire.h"

/// LaunchParams::heap of the running launch (nullptr: no heap). Written by block 0 before the grid
/// synchronizes; read by every tile after it.
extern "C" __device__ gpuos::tlsf::Control* gpuos_heap_of_launch = nullptr;

extern "C" __device__ void* gpuos_dev_malloc(unsigned long long bytes, unsigned long long align) {
  gpuos::tlsf::Control* c = gpuos_heap_of_launch;
  if (c == nullptr) return nullptr;
  return gpuos::tlsf::warp_alloc(c, bytes, align, gpuos::tlsf::warp_hint());
}

extern "C" __device__ unsigned int gpuos_dev_free(void* p) {
  gpuos::tlsf::Control* c = gpuos_heap_of_launch;
  if (c == nullptr) return p == nullptr ? gpuos::tlsf::kOk : gpuos::tlsf::kNotInit;
  return gpuos::tlsf::warp_free(c, p);
}

namespace gpuos::heap {

/// Why an allocation returned null (the allocator returns only null).
__device__ inline uint32_t alloc_failure(const tlsf::Control* c, uint64_t bytes, uint64_t align) {
  if (!tlsf::detail::initialised(c)) return tlsf::kNotInit;
  if (!tlsf::detail::is_pow2(align)) return tlsf::kBadAlign;
  if (bytes > tlsf::kMaxRequest || align > tlsf::kMaxPool / 2 ||
      tlsf::detail::block_size_for(bytes) > c->max_arena)
    return tlsf::kTooLarge;
  return tlsf::kOutOfMemory;
}

/// One host request. Single tile; alloc/free/stats on thread 0, the checker on every thread (arenas
/// strided over the block, the lowest failing arena reported).
__device__ inline void ctl_tile(const abi::HeapCtlArgs& a, const TileCtx& ctx) {
  tlsf::Control* c = gpuos_heap_of_launch;
  auto* r = reinterpret_cast<abi::HeapReply*>(a.reply);
  if (a.cmd == abi::kHeapCheck) {
    auto* first_bad = static_cast<unsigned*>(ctx.smem);
    if (threadIdx.x == 0) *first_bad = ~0u;
    __syncthreads();
    tlsf::CheckResult res{};
    bool bad = false;
    if (c != nullptr) {
      bad = check_strided(c, threadIdx.x, blockDim.x, res);
      if (bad) atomicMin(first_bad, res.arena);
    }
    __syncthreads();
    if (c == nullptr && threadIdx.x == 0) {
      r->check_ok = 0;
      r->check_arena = 0;
      r->check_offset = 0;
      const char msg[] = "the runtime has no heap";
#pragma unroll 1
      for (unsigned i = 0; i < sizeof(msg); ++i) r->message[i] = msg[i];
      r->status = tlsf::kNotInit;
    } else if (*first_bad == ~0u) {
      if (threadIdx.x == 0) {
        r->check_ok = 1;
        r->message[0] = 0;
        r->status = tlsf::kOk;
      }
    } else if (bad && res.arena == *first_bad) {
      r->check_ok = 0;
      r->check_arena = res.arena;
      r->check_offset = res.offset;
#pragma unroll 1  // unrolled, this copy alone would add ~6 KB to the image that every switch loads
      for (unsigned i = 0; i < sizeof(res.message); ++i) r->message[i] = res.message[i];
      r->status = tlsf::kOk;
    }
    return;
  }
  if (threadIdx.x != 0) return;
  if (c == nullptr) {
    r->ptr = 0;
    r->status = a.cmd == abi::kHeapFree && a.a == 0 ? tlsf::kOk : tlsf::kNotInit;
    return;
  }
  switch (a.cmd) {
    case abi::kHeapAlloc: {
      void* p = tlsf::alloc(c, a.a, a.b, tlsf::sm_hint());
      r->ptr = reinterpret_cast<uint64_t>(p);
      r->status = p ? tlsf::kOk : alloc_failure(c, a.a, a.b);
      break;
    }
    case abi::kHeapFree:
      r->ptr = 0;
      r->status = tlsf::free(c, reinterpret_cast<void*>(a.a));
      break;
    case abi::kHeapStats:
      r->stats = tlsf::stats(c);
      r->status = tlsf::kOk;
      break;
    default:
      r->status = tlsf::kInvalidArg;
  }
}

}  // namespace gpuos::heap

// Replies go to mapped host memory: system-scope release of the completion.
GPUOS_OPERATOR_FLAGS(heap_ctl, gpuos::abi::HeapCtlArgs, gpuos::heap::ctl_tile, GPUOS_OP_HOST_WRITES)
