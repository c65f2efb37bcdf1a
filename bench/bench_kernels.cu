// Kernels the benchmarks launch directly, to compare gpuos with the plain CUDA way of doing the same.
// Compiled to a cubin at build time and embedded; loaded with cuModuleLoadData before gpuos boots.
#include "gpuos/builtin_ops.h"
#include "gpuos/op.cuh"

#include "kernel/builtin_ops.cuh"  // the tile functions the resident kernel runs

/// Smallest possible kernel: the cost of a launch and nothing else.
extern "C" __global__ void bench_empty() {}

/// Sentinel the host writes to end bench_ping_pong.
#define BENCH_PING_STOP 0xffffffffu

/// The latency floor of a doorbell in mapped host memory: one thread polls *ping (each read is a PCIe
/// round trip) and echoes every new value to *pong with a posted write, until it reads the sentinel.
/// No fence after the echo: a fence would only delay the next poll, not the echo.
extern "C" __global__ void bench_ping_pong(const volatile unsigned* ping, volatile unsigned* pong) {
  unsigned last = 0;
  for (;;) {
    const unsigned v = *ping;
    if (v == last) continue;
    if (v == BENCH_PING_STOP) return;
    *pong = v;
    last = v;
  }
}

/// The floor's ladder: the ping-pong with one piece of the resident kernel's path added, to say what each
/// piece costs. mode bits: 1 = fence.acq_rel.gpu before the echo, 2 = fence.acq_rel.sys before the
/// echo; 4 = the whole block polls as the front end does (8 threads read the 128-byte line in 16-byte
/// chunks, a shared-memory min of the ready flags, three barriers per poll); 8 = one thread polls with
/// a 16-byte read; 16 = one warp polls (8 lanes read 16 bytes each, a ballot, no barrier); 32 = the
/// poller also reads a second line each poll (the front end's stop word); 64 / 128 = fence.release.gpu /
/// fence.release.sys (release-only, PTX 8.6+) before the echo. Thread 0 echoes.
extern "C" __global__ void bench_ping_ladder(const volatile unsigned* ping, volatile unsigned* pong, unsigned mode) {
  __shared__ unsigned ready;
  __shared__ unsigned seen;
  unsigned last = 0;
  const volatile char* line = reinterpret_cast<const volatile char*>(ping);
  const volatile unsigned* second = ping + 64;  // another 128-byte line, never written
  for (;;) {
    unsigned v = 0, extra = 0;
    if (mode & 4u) {
      if (threadIdx.x == 0) ready = 1;
      __syncthreads();
      uint4 c = make_uint4(0, 0, 0, 0);
      if ((mode & 32u) && threadIdx.x == 0) extra = *second;
      if (threadIdx.x < 8) {
        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(c.x), "=r"(c.y), "=r"(c.z), "=r"(c.w)
                     : "l"(line + 16 * threadIdx.x)
                     : "memory");
        if (threadIdx.x == 0 && c.x == last) atomicMin(&ready, 0u);
        if (threadIdx.x == 0) seen = c.x + extra;
      }
      __syncthreads();
      const unsigned r = ready;
      v = seen;
      __syncthreads();
      if (!r) continue;
    } else if (mode & 16u) {
      if (threadIdx.x >= 32) return;
      uint4 c = make_uint4(0, 0, 0, 0);
      if ((mode & 32u) && threadIdx.x == 0) extra = *second;
      if (threadIdx.x < 8)
        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(c.x), "=r"(c.y), "=r"(c.z), "=r"(c.w)
                     : "l"(line + 16 * threadIdx.x)
                     : "memory");
      const unsigned changed = __ballot_sync(0xffffffffu, threadIdx.x == 0 && c.x != last);
      v = __shfl_sync(0xffffffffu, c.x + extra, 0);
      if (!changed) continue;
    } else {
      if (threadIdx.x != 0) return;
      if (mode & 32u) extra = *second;
      if (mode & 8u) {
        uint4 c;
        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(c.x), "=r"(c.y), "=r"(c.z), "=r"(c.w)
                     : "l"(line)
                     : "memory");
        v = c.x + extra;
      } else {
        v = *ping + extra;
      }
      if (v == last) continue;
    }
    if (v == BENCH_PING_STOP) return;
    if (threadIdx.x == 0) {
      if (mode & 1u) asm volatile("fence.acq_rel.gpu;" ::: "memory");
      if (mode & 2u) asm volatile("fence.acq_rel.sys;" ::: "memory");
      if (mode & 64u) asm volatile("fence.release.gpu;" ::: "memory");
      if (mode & 128u) asm volatile("fence.release.sys;" ::: "memory");
      *pong = v;
    }
    last = v;
  }
}

/// The floor with another shape of poll: `lanes` lanes of one warp each read `width` bytes (4, 8 or 16) at
/// lane x width in the ping's 128-byte line, in one warp-wide load; every lane's value is used (a ballot),
/// so the warp waits for all of them, as the front end's poll does; lane 0's first word is the ping.
extern "C" __global__ void bench_ping_shape(const volatile unsigned* ping, volatile unsigned* pong, unsigned lanes,
                                            unsigned width) {
  if (threadIdx.x >= 32) return;
  const char* at = reinterpret_cast<const char*>(const_cast<const unsigned*>(ping)) + threadIdx.x * width;
  unsigned last = 0;
  for (;;) {
    uint4 c = make_uint4(0, 0, 0, 0);
    if (threadIdx.x < lanes) {
      if (width == 16)
        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(c.x), "=r"(c.y), "=r"(c.z), "=r"(c.w)
                     : "l"(at)
                     : "memory");
      else if (width == 8)
        asm volatile("ld.volatile.global.v2.u32 {%0,%1}, [%2];" : "=r"(c.x), "=r"(c.y) : "l"(at) : "memory");
      else
        asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(c.x) : "l"(at) : "memory");
    }
    const unsigned odd = __ballot_sync(0xffffffffu, (c.x ^ c.y ^ c.z ^ c.w) == 0xdeadbeefu);
    const unsigned v = __shfl_sync(0xffffffffu, c.x, 0) + (odd == 0xffffffffu ? 1u : 0u);
    if (v == last) continue;
    if (v == BENCH_PING_STOP) return;
    if (threadIdx.x == 0) *pong = v;
    last = v;
  }
}

/// A callee the compiler cannot see through (bench_ping_staggered's mode 2: does a call wait for the
/// polls still in flight?).
__device__ __noinline__ void bench_opaque_call(unsigned* sink, unsigned v) {
  if (v == 0xfffffffeu) *sink = v;
}
__device__ void (*bench_opaque_ptr)(unsigned*, unsigned) = &bench_opaque_call;

/// The ping-pong with staggered polls: one warp keeps K reads of the ping line in flight, issued
/// `interval_ns` apart, so the line is sampled every interval instead of once per round trip.
/// mode bit 1: the reads are cp.async copies into shared memory (no register waits on them; consumed in
/// order with cp.async.wait_group) instead of loads into registers; bit 2: call a function through a
/// pointer before each echo (does the call wait for the reads in flight?); bits 8-11: K (1..8); bits
/// 16-20: lanes that read 16 bytes each (1..16; lanes 8-15 read the line after the pong's, so more than
/// 8 lanes read two lines, as the front end's staggered poll of two slots does). Exits by itself after
/// 2 s without a new value (a read that is served stale would otherwise never see the stop sentinel).
extern "C" __global__ void bench_ping_staggered(const volatile unsigned* ping, volatile unsigned* pong, unsigned mode,
                                                unsigned interval_ns) {
  constexpr int kMaxStagger = 8;
  __shared__ __align__(16) uint4 buf[kMaxStagger][16];
  __shared__ unsigned sink;
  const unsigned lane = threadIdx.x;
  const int stagger = min(max(static_cast<int>((mode >> 8) & 15u), 1), kMaxStagger);
  const unsigned lanes = (mode >> 16) & 31u ? (mode >> 16) & 31u : 1u;
  void (*call)(unsigned*, unsigned) = *const_cast<void (*volatile*)(unsigned*, unsigned)>(&bench_opaque_ptr);
  // Lane i reads bytes 16 (i % 8) of line 0 (the ping's) or, from lane 8, of line 2 (after the pong's).
  const char* line = reinterpret_cast<const char*>(const_cast<const unsigned*>(ping)) + 16 * (lane % 8) +
                     (lane >= 8 ? 256 : 0);
  auto now = [] {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return __shfl_sync(0xffffffffu, t, 0);
  };
  auto pause_ns = [&](unsigned ns) {
    const unsigned long long t0 = now();
    while (now() - t0 < ns) {
    }
  };
  unsigned last = 0;
  unsigned long long changed_at = now();
  auto seen = [&](unsigned v) -> bool {  // warp-uniform v; true: stop
    if (v == last) return now() - changed_at > 2000000000ull;
    if (v == BENCH_PING_STOP) return true;
    if (lane == 0) {
      if (mode & 2u) call(&sink, v);
      *pong = v;
    }
    last = v;
    changed_at = now();
    return false;
  };
  if (mode & 1u) {
    auto issue = [&](int k) {
      if (lane < lanes) {
        const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&buf[k][lane]));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(line) : "memory");
      }
      asm volatile("cp.async.commit_group;" ::: "memory");
    };
    for (int k = 0; k < stagger; ++k) {
      issue(k);
      if (k + 1 < stagger) pause_ns(interval_ns);
    }
    for (int k = 0;; k = k + 1 == stagger ? 0 : k + 1) {
      // At most stagger - 1 groups pending: the oldest (k) has landed.
      switch (stagger) {
        case 1: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
        case 2: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
        case 3: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
        case 4: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
        case 5: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
        case 6: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
        case 7: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
        default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
      }
      __syncwarp();
      const unsigned v = __shfl_sync(0xffffffffu, reinterpret_cast<volatile uint4*>(buf[k])[0].x, 0);
      __syncwarp();
      issue(k);
      if (seen(v)) break;
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
  } else {
    unsigned r[kMaxStagger];
    auto load = [&] {
      unsigned v = 0;
      if (lane < lanes) asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(line) : "memory");
      return v;
    };
#pragma unroll
    for (int k = 0; k < kMaxStagger; ++k) {
      if (k < stagger) r[k] = load();
      if (k + 1 < stagger) pause_ns(interval_ns);
    }
    for (;;) {
#pragma unroll
      for (int k = 0; k < kMaxStagger; ++k) {
        if (k >= stagger) break;
        const unsigned v = __shfl_sync(0xffffffffu, r[k], 0);  // waits for this read (and, it turns out, the rest)
        r[k] = load();
        if (seen(v)) return;
      }
    }
  }
}

/// One small task as a kernel: out = a + b on n elements, one thread per element.
extern "C" __global__ void __launch_bounds__(256) bench_add(float* out, const float* a, const float* b,
                                                            unsigned long long n) {
  const unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

/// The upper bound of bench_throughput: `tasks` tiny adds of `elems` (<= GPUOS_ELEMS_PER_TILE) floats,
/// task k on slice k, all in ONE launch; each block runs tasks blockIdx.x, + gridDim.x, ... through the
/// built-in add tile function, as the resident kernel runs a one-tile add task.
extern "C" __global__ void __launch_bounds__(GPUOS_BLOCK_THREADS)
    bench_fused_adds(float* out, const float* a, const float* b, unsigned long long tasks, unsigned long long elems) {
  for (unsigned long long k = blockIdx.x; k < tasks; k += gridDim.x) {
    const unsigned long long at = k * elems;
    const gpuos_binary_args args{out + at, a + at, b + at, elems};
    const gpuos::TileCtx ctx{0u, 1u, k, nullptr, nullptr};
    gpuos::builtin::add_tile(args, ctx);
  }
}

/// The built-in add operator's tile function launched as an ordinary kernel: one block per tile, as
/// the resident kernel runs it, so bench_large compares scheduling, not code.
extern "C" __global__ void __launch_bounds__(GPUOS_BLOCK_THREADS)
    bench_direct_add(gpuos_binary_args args, double* scratch) {
  __shared__ __align__(16) unsigned char smem[GPUOS_TILE_SMEM_BYTES];
  const gpuos::TileCtx ctx{blockIdx.x, gridDim.x, 0ull, smem, scratch};
  gpuos::builtin::add_tile(args, ctx);
}

// ---- bench_large's diagnostics: the resident kernel's per-tile path, piece by piece ---------------------
/// The add tile behind the jump-table signature, reached through a pointer the compiler cannot resolve.
__device__ __noinline__ void bench_add_tile_adapter(const void* a, const gpuos::TileCtx& c) {
  gpuos::builtin::add_tile(*static_cast<const gpuos_binary_args*>(a), c);
}
__device__ gpuos::TileFn bench_add_tile_ptr = &bench_add_tile_adapter;
/// Several consecutive tiles per call, the loop compiled inside the adapter (with or without a barrier
/// between the tiles).
template <bool kBarrier>
__device__ __noinline__ void bench_add_range_adapter(const void* a, const gpuos::TileCtx& c, unsigned count) {
  gpuos::TileCtx t = c;
  for (unsigned i = 0; i < count; ++i) {
    if (kBarrier && i) __syncthreads();
    t.tile = c.tile + i;
    gpuos::builtin::add_tile(*static_cast<const gpuos_binary_args*>(a), t);
  }
}
using BenchRangeFn = void (*)(const void*, const gpuos::TileCtx&, unsigned);
__device__ BenchRangeFn bench_add_range_ptr[2] = {&bench_add_range_adapter<false>, &bench_add_range_adapter<true>};

/// A persistent grid at the resident kernel's register budget (GPUOS_MIN_BLOCKS_PER_SM blocks per SM,
/// GPUOS_MAX_REGISTERS) running every tile of an add:
///   mode 0: tiles assigned statically (grid-stride), the tile function inlined, no barrier between tiles
///   mode 1: statically assigned, called through a function pointer with args and TileCtx in shared
///           memory and one barrier per tile (the resident kernel's per-tile path without claims)
///   mode 2: mode 1, tiles claimed one at a time from `counter` by thread 0 (relaxed atomic) and
///           broadcast through shared memory
///   mode 3: statically assigned, called through a function pointer, no barrier (each thread its own
///           TileCtx): the call's cost alone
///   mode 4: mode 0 with a barrier per tile
///   mode 5: runs of 8 consecutive tiles assigned statically, one call of a range adapter per run
///           (the loop over the run compiled inside it), a barrier between the tiles
///   mode 6: mode 5 without the barrier
extern "C" __global__ void __launch_bounds__(GPUOS_BLOCK_THREADS, GPUOS_MIN_BLOCKS_PER_SM)
    bench_persistent_add(gpuos_binary_args args, unsigned tiles, unsigned mode, unsigned* counter) {
  __shared__ __align__(16) unsigned char smem[GPUOS_TILE_SMEM_BYTES];
  __shared__ gpuos_binary_args sargs;
  __shared__ gpuos::TileCtx ctx[2];
  __shared__ unsigned next;
  if (mode == 0 || mode == 4) {
    for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
      if (mode == 4) __syncthreads();
      const gpuos::TileCtx c{t, tiles, 0ull, smem, nullptr};
      gpuos::builtin::add_tile(args, c);
    }
    return;
  }
  if (mode == 5 || mode == 6) {
    const BenchRangeFn fn = *const_cast<const volatile BenchRangeFn*>(&bench_add_range_ptr[mode == 5 ? 1 : 0]);
    if (threadIdx.x == 0) sargs = args;
    __syncthreads();
    gpuos::TileCtx c{0u, tiles, 0ull, smem, nullptr};
    for (unsigned run = blockIdx.x; run * 8u < tiles; run += gridDim.x) {
      c.tile = run * 8u;
      const unsigned count = tiles - run * 8u < 8u ? tiles - run * 8u : 8u;
      __syncthreads();
      fn(&sargs, c, count);
    }
    return;
  }
  const gpuos::TileFn fn = *const_cast<const volatile gpuos::TileFn*>(&bench_add_tile_ptr);
  if (threadIdx.x == 0) sargs = args;
  if (mode == 3) {
    __syncthreads();
    gpuos::TileCtx c{0u, tiles, 0ull, smem, nullptr};
    for (unsigned t = blockIdx.x; t < tiles; t += gridDim.x) {
      c.tile = t;
      fn(&sargs, c);
    }
    return;
  }
  unsigned t = blockIdx.x;
  for (unsigned i = 0;; ++i) {
    if (threadIdx.x == 0) {
      if (mode == 2) t = atomicAdd(counter, 1u);
      next = t;
      ctx[i & 1] = gpuos::TileCtx{t, tiles, 0ull, smem, nullptr};
    }
    __syncthreads();
    if (next >= tiles) break;
    fn(&sargs, ctx[i & 1]);
    t += gridDim.x;
  }
}
