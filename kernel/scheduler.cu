// The resident kernel: one cooperative launch that stays on the GPU and runs tasks.
//
// Block 0 is the front end: it polls the submission ring in mapped host memory, reading a window of
// slots in one PCIe round trip (each slot's chunks are stamped, so one read says both "there is work"
// and what it is), and copies what is ready into the device queue (device memory, L2) before advancing
// `head`. A lone single-tile task it runs itself, so an idle system answers in one round trip.
// Every other block is a worker: it claims the next ticket, waits for `head` to pass it, and runs the
// task's tiles; a task with more tiles goes on the board, where idle workers find it and take tiles too,
// so a large task spreads over the whole grid. The block that finishes a task's last tile writes its
// completion record to mapped host memory.
//
// Nothing here lives in a __device__ global: all state is in LaunchParams' memory, allocated by the host,
// so the kernel can exit (suspend, image change) and be launched again without losing a task. (The heap
// pointer each launch copies into gpuos_heap_of_launch is a pointer to such memory, not state.)
#include <cooperative_groups.h>
#include <cuda/atomic>

#include "kernel/wire.h"
#include "gpuos/op.cuh"
#include "kernel/window.hpp"
#include "kernel/heap_ops.cuh"

extern "C" __device__ const gpuos::OpEntry* const gpuos_op_table[GPUOS_MAX_OPS];
extern "C" __device__ const unsigned int gpuos_image_abi_version = GPUOS_ABI_VERSION;

namespace gpuos::kern {
using namespace gpuos::abi;

// ---- memory-model helpers ------------------------------------------------------------------------
template <class T>
using dev_ref = cuda::atomic_ref<T, cuda::thread_scope_device>;

template <class T>
__device__ __forceinline__ T load_acquire(T& x) {
  return dev_ref<T>(x).load(cuda::memory_order_acquire);
}
template <class T>
__device__ __forceinline__ void store_release(T& x, T v) {
  dev_ref<T>(x).store(v, cuda::memory_order_release);
}

/// One 16-byte read of mapped host memory (a single PCIe read; never cached).
__device__ __forceinline__ uint4 load_sys_v4(const void* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long load_sys_u64(const void* p) {
  unsigned long long v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
/// One 16-byte posted write to mapped host memory.
__device__ __forceinline__ void store_sys_v4(void* p, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
__device__ __forceinline__ void store_sys_u64(void* p, unsigned long long v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// ---- per-block shared state ----------------------------------------------------------------------
enum Action : uint32_t { kIdle, kRunOwn, kHelp, kExit };

struct BlockShared {
  /// This image's jump-table rows, copied at launch: the rows cannot change while an image runs, and
  /// read from global memory they cost two dependent L2 round trips per task (every acquire fence
  /// drops the L1 copy).
  OpEntry ops[GPUOS_MAX_OPS];
  Payload payload;  // the task being run (args read from here by every thread)
  /// What the running batch of tiles is told (the adapter copies it; complete() reads ticket and scratch).
  TileCtx ctx;
  double local_scratch;  // scratch of a task the front end runs itself
  uint64_t ticket;
  uint32_t action;
  uint32_t valid;  // the claim got tiles
  uint32_t tile;
  uint32_t last;  // this block finished the task's last tile
  uint32_t left;  // tiles the claim left for later claims (0: it took the last)
  uint32_t board_slot;
  TileClaims claims;  // how the running batch's adapter claims on (work_entry)
  unsigned long long stamps[5];  // the front end's flight recorder: a lone task's step times (run_lone)
};

/// Copies the jump table's rows into sh.ops (all threads; a barrier follows before any use).
__device__ __forceinline__ void cache_op_table(BlockShared& sh) {
  for (uint32_t i = threadIdx.x; i < GPUOS_MAX_OPS; i += blockDim.x) {
    // Heap requests are served by this image's own operator, whatever the jump table holds at that id.
    const OpEntry* e = i == GPUOS_OP_HEAP_CTL ? &gpuos_op_heap_ctl_entry : gpuos_op_table[i];
    sh.ops[i] = e ? *e : OpEntry{nullptr, nullptr, nullptr, 0u, 0u};
  }
}

/// The operator of the payload in sh, or null when it cannot run; `st` says why (kTaskOk otherwise).
__device__ __forceinline__ const OpEntry* validate(const BlockShared& sh, uint32_t& st) {
  const Payload& p = sh.payload;
  const OpEntry* e = p.op < GPUOS_MAX_OPS ? &sh.ops[p.op] : nullptr;
  st = kTaskOk;
  if (!e || !e->tile)
    st = kTaskBadOp;
  else if (e->arg_bytes != p.arg_bytes || p.tiles == 0 || p.tiles > GPUOS_MAX_TILES)
    st = kTaskBadArgs;
  return st == kTaskOk ? e : nullptr;
}

/// Runs the finish function (if any) and writes the completion record. All threads call it, after the
/// task's last tile and a barrier; the tiles' writes are made visible to the host before the record.
/// `c` carries the task's ticket and scratch; `e` and `st` are what validate() said of the task.
__device__ __forceinline__ void complete(const LaunchParams& p, BlockShared& sh, const TileCtx& c, const OpEntry* e,
                                         uint32_t st) {
  if (e && e->finish) {
    e->finish(sh.payload.args, c);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    // Release: the block's writes (ordered before this thread by the barrier) and those of the task's
    // other tiles (acquired through `pending`) are visible before the record is. Device scope suffices
    // for device memory, which the host reads with copies through the same L2; an operator that writes
    // over the bus (mapped host memory, a peer) asks for system scope (GPUOS_OP_HOST_WRITES); one that
    // writes nothing (GPUOS_OP_NO_WRITES) has nothing to release. A rejected task wrote nothing either.
    const uint32_t flags = e ? e->flags : GPUOS_OP_NO_WRITES;
    if (flags & GPUOS_OP_HOST_WRITES)
      asm volatile("fence.acq_rel.sys;" ::: "memory");
    else if (!(flags & GPUOS_OP_NO_WRITES))
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
    // detail: on success the completing block + 1 (diagnostics), else the rejected op id.
    const uint64_t ticket = c.ticket;
    const uint32_t detail = st == kTaskOk ? blockIdx.x + 1 : sh.payload.op;
    store_sys_v4(&p.completions[ticket & ((1ull << p.log2_capacity) - 1)],
                 make_uint4(static_cast<uint32_t>(ticket + 1), static_cast<uint32_t>((ticket + 1) >> 32),
                            st, detail));
  }
}

/// Loads a device-queue entry's payload into shared memory (12 threads, 8 bytes each).
__device__ __forceinline__ void load_payload(BlockShared& sh, const DqEntry& e) {
  static_assert(sizeof(Payload) == 12 * 8);
  if (threadIdx.x < 12) {
    reinterpret_cast<unsigned long long*>(&sh.payload)[threadIdx.x] =
        reinterpret_cast<const volatile unsigned long long*>(&e.payload)[threadIdx.x];
  }
}

/// Most tiles one claim takes, unless DeviceState::max_batch says otherwise.
inline constexpr uint32_t kMaxBatch = 32;
/// A claim takes (tiles left) / (kClaimSpread x grid) tiles, at least 1, at most the batch bound, unless
/// DeviceState::claim_spread says otherwise: one tile at a time for a task of up to ~34k tiles on a
/// 528-block grid (128M floats), larger batches only for larger tasks, so that one claim word is not
/// hit too often. On an H100 (add 64M / 256M, gpuos / direct; docs/benchmarks.md, Large task): spread 1
/// 0.90 / 0.93, 16 0.94 / 0.98, 64 0.94 / 0.99, the same as one tile per claim.
inline constexpr uint32_t kClaimSpread = 64;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// The flight recorder's record for the poll at position `pos`.
__device__ __forceinline__ uint64_t* trace_record(uint64_t* trace, uint64_t pos) {
  return trace + kTraceWords * (pos % kTraceRecords);
}

/// Tiles a claim asks for, from `share` (the tiles left over the grid): at least 1, at most `max_batch`.
__device__ __forceinline__ uint32_t claim_batch(uint32_t share, uint32_t max_batch) {
  return share < 1 ? 1 : (share > max_batch ? max_batch : share);
}

/// A slot's tile count as the device queue uses it: 0 or more than GPUOS_MAX_TILES (rejected by the
/// host, so only a corrupt slot) count as 1.
__device__ __forceinline__ uint32_t slot_tiles(uint32_t tiles) {
  return (tiles == 0 || tiles > GPUOS_MAX_TILES) ? 1u : tiles;
}

/// Takes tiles of the task in `e` until none is left. `board_slot_hint` is where the task is on the
/// board (helpers); `may_insert` says whether this block puts it there (the owner: then sh.ticket holds the
/// task's ticket on entry). All threads call it.
///
/// What a block pays per task, not per tile, is what lets a large task stream at the memory's rate:
/// - The first claim is sized from a relaxed read of the claim word (a hint: taking more than is left
///   is harmless, the claim gets what there was): (tiles left) / (spread x grid), at least 1, at most
///   `max_batch` (kClaimSpread, kMaxBatch); every later one from what the previous claim saw.
/// - The owner puts a multi-tile task on the board before its own first claim, so helpers join one
///   claim's round trip sooner.
/// - Only the first claim needs acquire (it must see the payload the front end armed). While this
///   block holds tiles it has not reported, the task cannot complete, so the entry cannot be rearmed
///   and every later valid claim is for the same task: relaxed, no fence, no reload of the payload.
/// - With at least a grid's worth of tiles left after the first claim, one call of the operator's
///   claiming adapter (TileClaimFn) runs the block's whole share: it makes every later claim itself,
///   issuing each as the previous batch starts while a grid's worth is left (its round trip then hides
///   behind the tiles), after the batch once fewer are. With fewer tiles, a batch is one call of the
///   plain adapter (TileRangeFn) and the claim after it is the scheduler's, as for any task.
/// - `pending` is decremented once, when the block leaves the task, by every tile it ran: one release
///   fence and one atomic per block per task. The block that takes it to zero completes the task.
///
/// Why one call per task: each call of an adapter saves and restores its registers through the stack
/// (~24 KB of traffic per block), and a claim made between batches stalls the whole block for its L2
/// round trip. With a call and a stall per batch, batches must be large (a share of the whole task), and
/// blocks, whose speeds differ by up to 1.5x on an H100, end up to ~120 us apart. On an H100 (add,
/// against the same tile function launched directly; docs/benchmarks.md, Large task): one call per batch
/// gives 0.90 at 64M and 0.93 at 256M, smaller batches with a call each 0.79 (rem / (4 x grid)), claims
/// inside one call, issued ahead, 0.94-0.96 at 64M and 0.99 at 256M.
__device__ void work_entry(const LaunchParams& p, BlockShared& sh, void* smem, DqEntry& e,
                           uint32_t board_slot_hint, bool may_insert, uint64_t board_value) {
  DeviceState& s = *p.state;
  // Thread 0's bookkeeping (registers).
  bool inserted = false;
  uint32_t slot = board_slot_hint;
  uint32_t batch = 1;
  const uint32_t max_batch = s.max_batch ? s.max_batch : kMaxBatch;
  const uint32_t spread = (s.claim_spread ? s.claim_spread : kClaimSpread) * gridDim.x;
  const bool ahead_on = s.claim_ahead_off == 0;
  uint32_t done = 0;  // tiles this block ran and has not reported in `pending`
  // Every thread's: the task's operator, validated once.
  const OpEntry* op = nullptr;
  uint32_t st = kTaskOk;
  if (threadIdx.x == 0) {
    // Relaxed: a hint only (a stale lap's word sizes the claim wrongly, nothing else).
    const int32_t hint = claim_remaining(dev_ref<uint64_t>(e.claim).load(cuda::memory_order_relaxed));
    if (hint > 1 && may_insert) {
      const uint64_t v = sh.ticket + 1;
      for (uint32_t k = 0; k < kBoardSize; ++k) {
        const uint32_t i = static_cast<uint32_t>(sh.ticket + k) % kBoardSize;
        uint64_t expect = 0;
        if (dev_ref<uint64_t>(s.board[i]).compare_exchange_strong(expect, v, cuda::memory_order_acq_rel)) {
          inserted = true;
          slot = i;
          board_value = v;
          break;
        }
      }
    }
    batch = claim_batch(hint > 0 ? static_cast<uint32_t>(hint) / spread : 0u, max_batch);
  }
  for (bool first_claim = true;; first_claim = false) {
    if (threadIdx.x == 0) {
      const uint64_t old =
          first_claim ? dev_ref<uint64_t>(e.claim).fetch_sub(kClaimOne * batch, cuda::memory_order_acq_rel)
                      : dev_ref<uint64_t>(e.claim).fetch_sub(kClaimOne * batch, cuda::memory_order_relaxed);
      const int32_t rem = claim_remaining(old);
      const uint32_t got = rem > 0 ? (static_cast<uint32_t>(rem) < batch ? static_cast<uint32_t>(rem) : batch) : 0u;
      sh.valid = got > 0;
      sh.tile = static_cast<uint32_t>(rem - 1);  // first (highest) tile claimed
      sh.last = got;                              // tiles claimed
      const bool exhausted = rem <= static_cast<int32_t>(batch);  // no tile left after this claim
      sh.left = exhausted ? 0u : static_cast<uint32_t>(rem) - batch;
      if (got > 0) {
        // The next claim: an even share of what was left (one call of the operator runs it).
        batch = claim_batch(static_cast<uint32_t>(rem) / spread, max_batch);
      }
      if (exhausted && (inserted || !may_insert) && slot < kBoardSize) {
        // Exhausted: take the task off the board (no-op if someone already did or it is another's now).
        uint64_t expect = board_value;
        dev_ref<uint64_t>(s.board[slot]).compare_exchange_strong(expect, 0ull, cuda::memory_order_relaxed);
      }
    }
    __syncthreads();
    if (!sh.valid) break;
    const uint32_t top = sh.tile, count = sh.last;
    if (first_claim) {
      // The payload and the ticket the front end armed (ordered after thread 0's acquire by the barrier;
      // a helper's board value may name an older lap of this entry).
      load_payload(sh, e);
      if (threadIdx.x == 32) sh.ticket = *reinterpret_cast<const volatile uint64_t*>(&e.ticket);
      __syncthreads();
      op = validate(sh, st);
    }
    const uint64_t ticket = sh.ticket;
    // One call runs the batch (the operator's adapter loops, with a barrier between tiles) and, while
    // there are tiles left, goes on claiming and running them until none is left: one call per task.
    const uint32_t left = sh.left;
    const bool more = left != 0;
    // Only with a grid's worth of tiles unclaimed: a task of fewer tiles runs a batch per call and the
    // scheduler claims after each (a claim taken ahead there could hold tiles a block that joins later
    // would have run: 1M-element adds lose 3-5% in GB/s on an H100 with claims in the adapter).
    const bool claims_in_call = ahead_on && more && op != nullptr && left >= gridDim.x;
    if (threadIdx.x == 0) {
      sh.ctx = TileCtx{top, sh.payload.tiles, ticket, smem, &e.scratch};
      if (claims_in_call)
        sh.claims = TileClaims{reinterpret_cast<unsigned long long*>(&e.claim), 0ull, batch, left,
                               static_cast<uint32_t>((0x100000000ull + spread - 1) / spread), max_batch};
    }
    __syncthreads();
    uint32_t ran = count;
    if (claims_in_call)
      ran = op->claim(sh.payload.args, sh.ctx, count, &sh.claims);
    else if (op)
      op->tile(sh.payload.args, sh.ctx, count);
    if (threadIdx.x == 0) {
      done += ran;
      if (claims_in_call && (inserted || !may_insert) && slot < kBoardSize) {
        // The adapter returned: it saw the task's last tile claimed. Off the board (as above).
        uint64_t expect = board_value;
        dev_ref<uint64_t>(s.board[slot]).compare_exchange_strong(expect, 0ull, cuda::memory_order_relaxed);
      }
    }
    __syncthreads();  // the last tile's TileCtx buffer and smem are free again
    if (!more || claims_in_call) break;  // no tile left: this block took the last, or its adapter saw so
  }
  // Leave the task: report the tiles run here; the block that reports the last ones completes it.
  if (threadIdx.x == 0) {
    sh.last = 0;
    if (done > 0) {
      // Release: this block's tile writes (ordered before thread 0 by the barriers) happen before the
      // decrement; acquire: the completing block sees every other block's.
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      sh.last = dev_ref<uint32_t>(e.pending).fetch_sub(done, cuda::memory_order_acq_rel) == done;
    }
  }
  __syncthreads();
  if (sh.last) complete(p, sh, sh.ctx, op, st);
  __syncthreads();
}

// ---- front end ---------------------------------------------------------------------------------------
inline constexpr uint64_t kStopPollEvery = 8;
/// Pacing steps (ns): up when the paced poll came back empty and the next one found the task, down when
/// the paced poll found it. Up / (up + down) is about how often the controller lets a poll miss.
inline constexpr uint32_t kPaceUp = 64;
inline constexpr uint32_t kPaceDown = 4;
inline constexpr uint32_t kLoadsPerThread = kMaxWindow * kSlotChunks / GPUOS_BLOCK_THREADS;
static_assert(kLoadsPerThread * GPUOS_BLOCK_THREADS == kMaxWindow * kSlotChunks);

/// Chunk 0 word 0 of a slot (op | arg_bytes << 16 | hints << 24) with the logical op replaced by its
/// alias slot.
__device__ __forceinline__ uint32_t resolve_op(uint32_t w0, const uint16_t* alias) {
  const uint32_t op = w0 & 0xffffu;
  return op < GPUOS_MAX_OPS ? (w0 & 0xffff0000u) | alias[op] : w0;
}

/// Applies the control task whose chunk 0 is `c0` and chunk 1's first word `kind` (ControlArgs::kind;
/// chunk words are op|arg_bytes|hints, tiles, args[0..3], stamp) and completes its ticket. Thread 0.
__device__ __forceinline__ void apply_control(const LaunchParams& p, uint16_t* alias, uint4 c0, uint32_t kind,
                                              uint64_t ticket) {
  DeviceState& s = *p.state;
  const uint32_t logical = c0.z & 0xffffu, slot = c0.z >> 16;
  uint32_t st = kTaskBadArgs;
  if (((c0.x >> 16) & 0xffu) == sizeof(ControlArgs) && kind == kControlAlias && logical < GPUOS_MAX_OPS &&
      slot < GPUOS_MAX_OPS) {
    alias[logical] = static_cast<uint16_t>(slot);
    s.alias[logical] = static_cast<uint16_t>(slot);  // read by the next launch's front end
    st = kTaskOk;
  }
  store_sys_v4(&p.completions[ticket & ((1ull << p.log2_capacity) - 1)],
               make_uint4(static_cast<uint32_t>(ticket + 1), static_cast<uint32_t>((ticket + 1) >> 32), st,
                          st == kTaskOk ? 0u : GPUOS_OP_CONTROL));
}

/// Runs a lone single-tile task on the front end's block: one barrier between the poll and the tile (slot
/// 0's payload staged in shared memory; every thread builds the tile's context itself), one after it,
/// then the completion record. All threads call it; `chunk` is the thread's chunk of slot 0 (threads
/// below kSlotChunks). The barrier before the tile is here, not in the poll: staging the payload before
/// the poll's barrier lengthens every poll by as much as it saves here and, on an H100, costs the copy
/// loop ~4% of its tiny-task throughput. Its entry is never armed, so the worker that claims this ticket
/// finds no tile (the entry's claim word is exhausted since its last use). Not inlined: the call through
/// the jump table stays out of the front end's loop, whose registers (the window's chunks) it would
/// otherwise have to save around the call. With `t0` (the poll's return, ns; 0: not timing) it returns,
/// in thread 0, trace_steps(the poll's barrier passed, the tile's end, the record written), and writes
/// the steps' device times into the recorder's record `rec` (words 10-15; null: not timing). On return
/// sh.local_scratch is 0 again, for the next lone task (nobody reads it any more: a finish function ran
/// before complete()'s barrier).
template <bool kTrace>
__device__ __noinline__ uint64_t run_lone(const LaunchParams& p, BlockShared& sh, void* smem, const uint16_t* alias,
                                          uint4 chunk, uint64_t head, uint64_t launch, unsigned long long t0,
                                          uint64_t* rec) {
  const unsigned tid = threadIdx.x;
  const bool timing = kTrace && t0 != 0;
  // The steps' times go to shared memory as they are taken (sh.stamps): no clock value is live across
  // the operator's call. (The recorder still lengthens the traced loop: a traced nop takes ~0.4 us
  // longer than an untraced one, so its steps are upper bounds; front_end<false> has none of it.)
  unsigned long long* const stamp = sh.stamps;
  if (timing && tid == 0) {
    stamp[0] = global_ns();
    stamp[4] = clock64();
  }
  if (tid < kSlotChunks) {
    auto* w = reinterpret_cast<uint32_t*>(&sh.payload) + 3 * tid;
    w[0] = tid == 0 ? resolve_op(chunk.x, alias) : chunk.x;
    w[1] = chunk.y;
    w[2] = chunk.z;
  }
  const TileCtx ctx{0u, 1u, head, smem, &sh.local_scratch};
  __syncthreads();
  uint32_t st;
  const OpEntry* op = validate(sh, st);
  if (timing && tid == 0) stamp[1] = global_ns();
  if (op) op->tile(sh.payload.args, ctx, 1u);
  if (timing && tid == 0) stamp[2] = global_ns();
  __syncthreads();  // the tile's writes, before the record
  if (timing && tid == 0) stamp[3] = global_ns();
  complete(p, sh, ctx, op, st);
  uint64_t steps = 0;
  if (tid == 0) {
    if (timing) {
      const unsigned long long t_recorded = global_ns();
      steps = trace_steps(rec[8] - t0, stamp[3] - t0, t_recorded - t0);  // rec[8]: the poll's barrier
      for (int i = 0; i < 4; ++i) rec[10 + i] = stamp[i];  // entered, validated, called, tiled
      rec[14] = t_recorded;
      rec[15] = static_cast<uint64_t>(clock64()) - stamp[4];  // SM cycles over entered .. recorded
    }
    sh.local_scratch = 0.0;
    // Mark the (never armed) entry for diagnostics: which ticket the front end ran itself. After the
    // completion record, so the record's fence does not wait for these stores.
    DqEntry& e = p.dq[head & ((1ull << p.log2_capacity) - 1)];
    e.ticket = head;
    e.pad = 1u | static_cast<uint32_t>(launch << 1);
  }
  return steps;
}

/// The front end's loop. kTrace: the flight recorder is on (DeviceState::trace); the loop without it is
/// its own copy, so the recorder's clocks and stores take no registers from the loop that serves.
template <bool kTrace>
__device__ void front_end(const LaunchParams& p, BlockShared& sh, void* smem) {
  DeviceState& s = *p.state;
  const uint64_t mask = (1ull << p.log2_capacity) - 1;
  uint64_t head = load_acquire(s.head);
  uint32_t window = 1;
  const unsigned tid = threadIdx.x;
  uint64_t* const trace = kTrace ? s.trace : nullptr;
  uint64_t trace_pos = s.trace_pos;
  const uint64_t launch = s.launches;
  // The alias table, in shared memory: every copied task's op goes through it.
  __shared__ uint16_t alias[GPUOS_MAX_OPS];
  // What a poll found, for the whole block. Three buffers, so a poll needs one barrier: thread 0
  // resets the buffer of the poll after next before this poll's barrier (the last readers of that
  // buffer, two polls back, have all passed the previous poll's barrier), and the others' atomicMins
  // into it come after this barrier.
  struct PollResult {
    uint32_t ready;       // index of the first slot that is not ready (~0u: all were)
    uint32_t control_at;  // index of the first control task (~0u: none)
    uint32_t stop;
    uint32_t tiles0;      // tiles of the first slot
    uint32_t more0;       // the first slot's host hint (abi::kHintMore)
  };
  __shared__ PollResult polls[3];
  for (uint32_t i = tid; i < GPUOS_MAX_OPS; i += GPUOS_BLOCK_THREADS) alias[i] = s.alias[i];
  if (tid == 0) sh.local_scratch = 0.0;  // run_lone's scratch (it leaves it 0 for the next)
  if (tid < 3) polls[tid] = PollResult{~0u, ~0u, 0u, 0u, 0u};
  // Pacing state, thread 0's (in shared memory: the loop's registers are spoken for). after_lone: 1 = the
  // last poll ran a lone task and the next poll is paced; 2 = that paced poll came back empty.
  struct Pacing {
    unsigned long long lone_end;  // when the lone task's completion record went out
    uint32_t pace, after_lone, limit;
  };
  __shared__ Pacing pacing;
  if (tid == 0) pacing = Pacing{0ull, 0u, 0u, s.pace_limit_ns};
  __syncthreads();
  for (uint64_t iter = 0;; ++iter) {
    PollResult& pr = polls[iter % 3];
    // All reads of the ring and the control word go out together: one round trip. The control word is
    // read on every kStopPollEvery-th poll only: a second line in the same poll costs ~0.3-0.5 us of
    // round trip on an H100 (bench_dispatch's ladder), a stop waits a few polls longer.
    unsigned long long stop_run = 0, t_issue = 0, t_return = 0;
    uint64_t lone_steps = 0;  // run_lone's timing (trace only)
    // Pacing. A task found alone is most often a caller waiting for it, whose next task is written right
    // after it sees the completion record. A poll issued at once after the record can reach the ring just
    // before that write, and the task then waits a whole extra round trip (the closed loop's slow mode,
    // docs/benchmarks.md, Dispatch). So the first poll after a lone task starts `pace` ns after the
    // record; pace adapts between 0 and pace_limit: up when that poll came back empty and the next one
    // found a task, down when it found one. Where the first poll already finds the next task, pace stays
    // 0. Only the lanes that read (warp 0, one slot) wait.
    if (tid < 32) {
      if (tid == 0 && pacing.after_lone == 1 && pacing.pace != 0) {
        const unsigned long long until = pacing.lone_end + pacing.pace;
        while (global_ns() < until) {
        }
      }
      __syncwarp();
    }
    if (tid == 0 && trace) t_issue = global_ns();
    if (tid == 0 && (iter % kStopPollEvery) == 0) stop_run = load_sys_u64(&p.control->stop_run);
    uint4 v[kLoadsPerThread];
    const uint32_t nchunks = window * kSlotChunks;
#pragma unroll
    for (uint32_t k = 0; k < kLoadsPerThread; ++k) {
      const uint32_t ci = tid + k * GPUOS_BLOCK_THREADS;
      if (ci < nchunks) v[k] = load_sys_v4(&p.ring[(head + ci / kSlotChunks) & mask].c[ci % kSlotChunks]);
    }
#pragma unroll
    for (uint32_t k = 0; k < kLoadsPerThread; ++k) {
      const uint32_t ci = tid + k * GPUOS_BLOCK_THREADS;
      if (ci < nchunks && v[k].w != stamp_of(head + ci / kSlotChunks, p.log2_capacity))
        atomicMin(&pr.ready, ci / kSlotChunks);
      else if (ci < nchunks && ci % kSlotChunks == 0 && (v[k].x & 0xffffu) == GPUOS_OP_CONTROL)
        atomicMin(&pr.control_at, ci / kSlotChunks);
    }
    if (tid == 0) {
      pr.stop = stop_run == p.run_id;
      pr.tiles0 = v[0].y;  // chunk 0 of slot 0: op|arg_bytes|hints, tiles, args[0..3]
      pr.more0 = (v[0].x >> 24) & kHintMore;
      polls[(iter + 1) % 3] = PollResult{~0u, ~0u, 0u, 0u, 0u};  // the next poll's
      if (trace) t_return = global_ns();  // after thread 0's reads returned (its stamp was compared)
    }
    __syncthreads();
    // Every chunk of the poll is in (the recorder's word 8 of this poll's record, read back by run_lone).
    if (tid == 0 && trace) trace_record(trace, trace_pos)[8] = global_ns();
    uint32_t ready = pr.ready < window ? pr.ready : window;
    const uint32_t ctl = pr.control_at, tiles0 = pr.tiles0;
    const bool more0 = pr.more0 != 0;
    const bool stop = pr.stop;
    if (stop) break;  // what this poll saw stays in the ring for the next launch
    if (tid == 0 && pacing.after_lone != 0) {
      if (ready > 0) {
        const uint32_t pace = pacing.pace, limit = pacing.limit;
        if (pacing.after_lone == 1)
          pacing.pace = pace > kPaceDown ? pace - kPaceDown : 0;
        else
          pacing.pace = pace + kPaceUp < limit ? pace + kPaceUp : limit;
        pacing.after_lone = 0;
      } else {
        pacing.after_lone = pacing.after_lone == 1 ? 2 : 0;  // a second empty poll: nobody was waiting to submit
      }
    }
    // Tasks before a control task are copied with the old alias table; the control task is applied
    // alone, in its turn; the tasks after it wait for the next poll.
    const bool control = ctl == 0 && ready > 0;
    if (ctl < ready) ready = ctl == 0 ? 1 : ctl;
    const bool lone = ready == 1 && tiles0 == 1 && !control;

    if (tid == 0 && (iter & 63) == 0) {
      store_sys_u64(&p.control->heartbeat, iter + 1);
      store_sys_u64(&p.control->fetched, head);
    }
    if (ready == 0) {
      window = 1;
      continue;
    }

    if (control) {
      const uint32_t kind = __shfl_sync(0xffffffffu, v[0].x, 1);  // chunk 1 of slot 0 is thread 1's
      if (tid == 0) apply_control(p, alias, v[0], kind, head);
      __syncthreads();
    } else if (lone) {
      // Lone single-tile task: run it here, no hand-off (run_lone says more).
      uint64_t* rec = trace ? trace_record(trace, trace_pos) : nullptr;  // this poll's record
      if (tid == 0 && rec) {
        rec[9] = global_ns();  // run_lone called
      }
      lone_steps = run_lone<kTrace>(p, sh, smem, alias, v[0], head, launch, trace ? t_return : 0ull, rec);
      // No barrier: sh.payload is next written after the next poll's barrier.
      // Pace the next poll when it reads one slot (no hint that more follow); pacing off: limit 0.
      if (tid == 0) {
        pacing.lone_end = global_ns();
        pacing.after_lone = pacing.limit != 0 && next_window(window, ready, more0) == 1 ? 1u : 0u;
      }
    } else {
      // Copy the ready slots into the device queue, arm each entry, then publish them all.
#pragma unroll
      for (uint32_t k = 0; k < kLoadsPerThread; ++k) {
        const uint32_t ci = tid + k * GPUOS_BLOCK_THREADS;
        if (ci < ready * kSlotChunks) {
          const uint64_t t = head + ci / kSlotChunks;
          DqEntry& e = p.dq[t & mask];
          auto* w = reinterpret_cast<uint32_t*>(&e.payload) + 3 * (ci % kSlotChunks);
          w[0] = ci % kSlotChunks == 0 ? resolve_op(v[k].x, alias) : v[k].x;
          w[1] = v[k].y;
          w[2] = v[k].z;
          if (ci % kSlotChunks == 0) {
            const uint32_t tiles = slot_tiles(v[k].y);
            e.ticket = t;
            e.pad = static_cast<uint32_t>(launch << 1);
            e.pending = tiles;
            e.scratch = 0.0;
          }
        }
      }
      // No fence by the writers: the barrier makes their stores visible to the arming threads, and each
      // arming thread's release fence (cumulative) publishes them at device scope before its claim words
      // (the pattern of a grid barrier's arrival). On an H100 (bench_throughput) the copy loop publishes
      // 34.0-34.4 M tiny tasks/s this way, 23.7 M with a release exchange per entry instead, 20.8 M with
      // a fence in every writer as well.
      __syncthreads();
      // One release fence per arming thread, then its entries' claim words (relaxed stores).
      if (tid % kSlotChunks == 0 && tid < ready * kSlotChunks)
        cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
#pragma unroll
      for (uint32_t k = 0; k < kLoadsPerThread; ++k) {
        const uint32_t ci = tid + k * GPUOS_BLOCK_THREADS;
        if (ci < ready * kSlotChunks && ci % kSlotChunks == 0) {
          const uint64_t t = head + ci / kSlotChunks;
          const uint32_t tiles = slot_tiles(v[k].y);
          dev_ref<uint64_t>(p.dq[t & mask].claim).store(make_claim(tiles, t), cuda::memory_order_relaxed);
        }
      }
      __syncthreads();
    }
    // Release: a worker that sees `head` past its ticket must see the entry armed. A lone task's entry
    // is never armed, so its worker needs nothing from this store but the number (no fence).
    if (tid == 0) {
      if (lone)
        dev_ref<uint64_t>(s.head).store(head + ready, cuda::memory_order_relaxed);
      else
        store_release(s.head, head + ready);
      if (trace) {
        // Stores only (the position lives in a register): the recorder barely perturbs the timing.
        uint64_t* r = trace_record(trace, trace_pos++);
        r[0] = head;
        r[1] = ready;
        r[2] = window | (static_cast<uint64_t>(lone) << 32) | (static_cast<uint64_t>(pacing.pace) << 40);
        r[3] = launch;
        r[4] = t_issue;
        r[5] = t_return;
        r[6] = global_ns();
        // A lone task's steps, in ns after t_return: the poll's barrier, tile run, record written.
        r[7] = lone_steps;
      }
    }
    head += ready;
    window = next_window(window, ready, more0);
  }
  if (tid == 0) {
    store_sys_u64(&p.control->fetched, head);
    store_sys_u64(&p.control->stop_seen_run, p.run_id);  // diagnostics: when a stop reached the device
    s.exit_head = head;
    s.trace_pos = trace_pos;
    store_release(s.closed, 1u);
  }
}

// ---- workers -----------------------------------------------------------------------------------------
__device__ void worker(const LaunchParams& p, BlockShared& sh, void* smem) {
  DeviceState& s = *p.state;
  const uint64_t mask = (1ull << p.log2_capacity) - 1;
  uint64_t mine = 0;
  bool have = false;
  uint32_t backoff = 0;
  for (;;) {
    if (threadIdx.x < 32) {
      uint32_t action = kIdle;
      uint64_t help = 0;
      uint32_t help_slot = 0;
      if (threadIdx.x == 0) {
        if (!have) {
          mine = dev_ref<uint64_t>(s.claim).fetch_add(1ull, cuda::memory_order_relaxed);
          have = true;
        }
        // Relaxed polls, one acquire fence once there is something to act on: an acquire load at
        // device scope invalidates the whole L1 of the SM (CCTL.IVALL in the SASS), and idle workers
        // poll every microsecond, on every SM, the front end's included. (It keeps the SMs' L1 valid;
        // the lone task's path takes the same time with acquire polls on an H100.)
        const uint64_t h = dev_ref<uint64_t>(s.head).load(cuda::memory_order_relaxed);
        if (mine < h) {
          action = kRunOwn;
        } else if (dev_ref<uint32_t>(s.closed).load(cuda::memory_order_relaxed)) {
          // The front end's last store to head happened before closed: re-read it after the fence.
          cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
          action = mine < dev_ref<uint64_t>(s.head).load(cuda::memory_order_relaxed) ? kRunOwn : kExit;
        }
        // Acquire (pairs with the front end's release of head): the entry's claim word read next is the
        // one the front end armed, not its previous lap's.
        if (action == kRunOwn) cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
      }
      action = __shfl_sync(0xffffffffu, action, 0);
      if (action == kIdle) {
        // Look for a multi-tile task with tiles left; start at a block-specific slot to spread helpers.
        const uint32_t lane = threadIdx.x;
        const uint32_t base = blockIdx.x % kBoardSize;
        const uint32_t i0 = (base + lane) % kBoardSize, i1 = (base + lane + 32) % kBoardSize;
        const uint64_t b0 = dev_ref<uint64_t>(s.board[i0]).load(cuda::memory_order_relaxed);
        const uint64_t b1 = dev_ref<uint64_t>(s.board[i1]).load(cuda::memory_order_relaxed);
        const uint32_t m0 = __ballot_sync(0xffffffffu, b0 != 0), m1 = __ballot_sync(0xffffffffu, b1 != 0);
        if (m0 | m1) {
          const int src = m0 ? __ffs(m0) - 1 : __ffs(m1) - 1;
          help = __shfl_sync(0xffffffffu, m0 ? b0 : b1, src);
          help_slot = m0 ? (base + src) % kBoardSize : (base + src + 32) % kBoardSize;
          action = kHelp;
        }
      }
      if (threadIdx.x == 0) {
        sh.action = action;
        sh.ticket = action == kHelp ? help : mine;
        sh.board_slot = help_slot;
      }
    }
    __syncthreads();
    const uint32_t action = sh.action;
    const uint64_t t = sh.ticket;
    const uint32_t bslot = sh.board_slot;
    __syncthreads();
    if (action == kExit) return;
    if (action == kRunOwn) {
      backoff = 0;
      work_entry(p, sh, smem, p.dq[t & mask], kBoardSize, true, 0);
      if (threadIdx.x == 0) have = false;
    } else if (action == kHelp) {
      backoff = 0;
      work_entry(p, sh, smem, p.dq[(t - 1) & mask], bslot, false, t);
    } else {
      // Nothing to do: back off a little so idle blocks do not saturate L2 with polls.
      backoff = backoff < 1024 ? backoff + 64 : backoff;
      __nanosleep(backoff);
    }
  }
}

}  // namespace gpuos::kern

/// Blocks per SM the resident kernel is compiled for. Operators are called through the jump table, so
/// the register count of the whole image is the maximum over every operator it contains: without this
/// bound one heavy operator (the heap's control operator, or a user's) would cut the grid to one block
/// per SM. With it, such an operator spills instead.
extern "C" __global__ void __launch_bounds__(GPUOS_BLOCK_THREADS, GPUOS_MIN_BLOCKS_PER_SM)
    gpuos_main(const gpuos::abi::LaunchParams p) {
  using namespace gpuos::kern;
  __shared__ BlockShared sh;
  __shared__ __align__(16) unsigned char tile_smem[GPUOS_TILE_SMEM_BYTES];
  gpuos::abi::DeviceState& s = *p.state;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    // A fresh run: every published task of the last run was finished before it exited, so claims
    // restart at head; the board may hold stale (exhausted) entries.
    s.claim = s.head;
    s.closed = 0;
    s.exited = 0;
    s.launches += 1;
    s.start_head = s.head;
    for (uint32_t i = 0; i < gpuos::abi::kBoardSize; ++i) s.board[i] = 0;
    gpuos_heap_of_launch = static_cast<gpuos::tlsf::Control*>(p.heap);
    __threadfence();
  }
  cache_op_table(sh);
  cooperative_groups::this_grid().sync();
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) {
      store_sys_u64(&p.control->abi_version, GPUOS_ABI_VERSION);
      __threadfence_system();
      store_sys_u64(&p.control->started_run, p.run_id);
    }
    if (s.trace)
      front_end<true>(p, sh, tile_smem);
    else
      front_end<false>(p, sh, tile_smem);
  } else {
    worker(p, sh, tile_smem);
  }
  // Diagnostics: the last block out says so in mapped memory, so the host can tell the kernel's own
  // drain from the driver's work after it (ResidentKernel's StopTiming, GPUOS_SWITCH_TRACE).
  if (threadIdx.x == 0 &&
      dev_ref<uint32_t>(s.exited).fetch_add(1u, cuda::memory_order_acq_rel) == gridDim.x - 1)
    store_sys_u64(&p.control->drained_run, p.run_id);
}
