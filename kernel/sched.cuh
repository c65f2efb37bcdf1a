// What the resident kernel's two compilation units share: the memory-model helpers, the block's shared
// state and the inline steps both take. kernel/scheduler.cu (the front end, the worker loop, the graph
// bookkeeping) and kernel/dispatch.cu (the loops that call operators' tiles: chain links and placed
// roles) include it. The image built at build time compiles both in one translation unit (image.cu); a
// generation links each as relocatable SASS, or the dispatch unit as LTO-IR re-optimized with that
// generation's operators so that their tiles are inlined where they are called (GPUOS_INLINE_OPERATORS,
// jit/table.cpp).
//
// The block's shared state is defined by the scheduler's unit; the dispatch unit, compiled on its own
// (dispatch_unit.cu), declares it extern and reaches the same shared-memory variables.
#pragma once

#include <cooperative_groups.h>
#include <cuda/atomic>

#include "gpuos/op.cuh"
#include "kernel/deps.hpp"
#include "kernel/window.hpp"
#include "kernel/wire.h"

#if defined(GPUOS_SHARED_STATE_ELSEWHERE)
#define GPUOS_SHARED_ extern __shared__
#else
#define GPUOS_SHARED_ __shared__
#endif


namespace gpuos::kern {
using namespace gpuos::abi;

// ---- memory-model helpers ------------------------------------------------------------------------
template <class T>
using dev_ref = cuda::atomic_ref<T, cuda::thread_scope_device>;

/// An acquire fence at device scope (PTX's split fence), after a strong (relaxed or volatile) read that saw
/// a release: this thread's later reads see what was released. On sm_90 it is an L1 invalidation alone;
/// cuda::atomic_thread_fence emits fence.acq_rel for an acquire too, which adds a MEMBAR: a wait for
/// every memory operation the thread has in flight.
__device__ __forceinline__ void fence_acquire() { asm volatile("fence.acquire.gpu;" ::: "memory"); }

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
/// Two adjacent 8-byte words (16-byte aligned) in one relaxed device-scope read: one L2 request.
__device__ __forceinline__ ulonglong2 load_relaxed_v2(const void* p) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0,%1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
  return v;
}

/// Starts a 16-byte copy from global memory (read at L2, not L1) into shared memory; wait_async waits
/// for the thread's copies. The copy runs while the thread goes on (an operator's tile): no register
/// holds it.
__device__ __forceinline__ void copy_async16(void* smem_dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
#else
  *static_cast<uint4*>(smem_dst) = *static_cast<const uint4*>(src);
#endif
}
/// An 8-byte copy into shared memory, through L1 (for data that never changes while an instance lives).
__device__ __forceinline__ void copy_async8(void* smem_dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(src) : "memory");
#else
  *static_cast<uint2*>(smem_dst) = *static_cast<const uint2*>(src);
#endif
}
/// A placed node's {done, bad} in one relaxed device-scope read.
__device__ __forceinline__ uint2 load_relaxed_u32x2(const void* p) {
  uint2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void wait_async() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// ---- per-block shared state ----------------------------------------------------------------------
enum Action : uint32_t { kIdle, kRunOwn, kHelp, kRunNext, kRunChain, kRunTaken, kSpecial, kGang, kExit, kAbort };

/// Graph nodes made ready at once (a node's successors, a launch's roots) go out in rounds of this many.
inline constexpr uint32_t kReadyRound = GPUOS_BLOCK_THREADS;
/// Continuations a block runs in a row before it offers the next one to the board and looks at its own
/// ticket and its chain: a long dependent chain keeps one block busy, but not for ever.
inline constexpr uint32_t kMaxStreak = 32;

struct BlockShared {
  /// This image's jump-table rows, copied at launch: the rows cannot change while an image runs, and
  /// read from global memory they cost two dependent L2 round trips per task (every acquire fence
  /// drops the L1 copy). 16-byte aligned: run_links reads a row's second half in one load.
  alignas(16) OpEntry ops[GPUOS_MAX_OPS];
  Payload payload;  // the task being run (args read from here by every thread)
  /// What the running batch of tiles is told (the adapter copies it; finish() reads ticket and scratch).
  TileCtx ctx;
  double local_scratch;  // scratch of a task the front end runs itself
  uint64_t ticket;  // of the record being run (load_meta)
  uint32_t action;
  uint32_t valid;  // the claim got tiles
  uint32_t tile;
  uint32_t last;  // this block finished the task's last tile
  uint32_t left;  // tiles the claim left for later claims (0: it took the last)
  uint32_t board_slot;
  TileClaims claims;  // how the running batch's adapter claims on (work_entry)
  unsigned long long stamps[5];  // the front end's flight recorder: a lone task's step times (run_lone)
  // The rest of the record being run, read with its payload (load_meta). (New fields go last: on an H100
  // build, moving the fields above had the front end's loop spill a register per chunk copied.)
  uint64_t cause;  // TaskRecord::cause as read (meaningful for graph nodes and tasks with dependencies)
  uint64_t exec;   // graph nodes: their GraphExec; 0: a host ticket
  uint32_t node, sinks, succ_begin, succ_count;
  // Ready records this block keeps (thread 0's): the one it runs next, unarmed (its continuation), and
  // armed ones that found no board slot, chained through TaskRecord::next_ready.
  uint64_t next;
  uint64_t chain;
  // Graph nodes made ready in one round (node_done, graph_start: GraphScratch::ready_nodes) and where
  // they go (publish_ready).
  uint32_t nready;
  uint64_t ready_items, ready_batch;
  // The scheduler's settings in DeviceState, copied at launch (the host writes them before it): read
  // from global memory they cost an L2 round trip per task (every acquire fence drops the L1 copy).
  uint32_t max_batch, claim_spread, claim_ahead_off;
  /// Worker blocks: this block's place in the order placed launches give their roles (placed_position).
  uint32_t placed_pos;
  /// The watchdog's record of this block (DeviceState::work; null beyond the table) and its call count.
  BlockWork* work;
  uint32_t work_calls;
};

/// The block's shared state and the tiles' shared memory are variables at namespace scope, and the
/// functions that use them name them rather than take them as parameters: an image linked at run time
/// compiles this file as relocatable code, where a function that is not inlined would reach state passed
/// by reference or pointer through generic loads and stores; named, every access is a shared-memory one.
GPUOS_SHARED_ BlockShared block_shared;
GPUOS_SHARED_ __align__(16) unsigned char tile_smem[GPUOS_TILE_SMEM_BYTES];

/// What a block's graph work keeps in shared memory, in the tiles' dynamic shared memory (free while a
/// block completes a node or starts a launch: no tile runs then). Kept out of BlockShared: a larger
/// BlockShared cost the front end's loop a spilled register per chunk copied (an H100 build).
struct GraphScratch {
  uint32_t ready_nodes[kReadyRound];  // this round's ready nodes
  GraphShape shape;                   // graph_start: the launched instance's fixed line
};
static_assert(sizeof(GraphScratch) <= GPUOS_TILE_SMEM_BYTES);



/// One thread, the block's record `work` present (sh.work): the block calls operator `op` (its jump-table
/// slot) for `ticket`, from tile `tile` (kWorkFinish: the finish function); `count` tells two such calls
/// apart (BlockWork::call). Two plain stores a call, this and work_idle, no fence: the watchdog only needs
/// to see a call that lasts.
__device__ __forceinline__ void work_busy(BlockWork* work, uint64_t ticket, uint32_t tile, uint32_t count, uint32_t op) {
  const uint32_t call = ((count & 0x7fffu) << 16) | (op & 0xffffu) | kWorkBusy;
  const unsigned long long w1 = tile | (static_cast<unsigned long long>(call) << 32);
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(work), "l"(ticket), "l"(w1) : "memory");
}
/// One thread, the block's record present: the call work_busy announced with `count` has returned.
__device__ __forceinline__ void work_idle(BlockWork* work, uint32_t count) {
  reinterpret_cast<volatile BlockWork*>(work)->call = (count & 0x7fffu) << 16;
}
/// All threads (thread 0 writes): work_busy with the block's call count, one more.
__device__ __forceinline__ void work_begin(BlockShared& sh, uint64_t ticket, uint32_t op, uint32_t tile) {
  if (threadIdx.x == 0 && sh.work) work_busy(sh.work, ticket, tile, ++sh.work_calls, op);
}
/// All threads (thread 0 writes): the call work_begin announced has returned.
__device__ __forceinline__ void work_end(BlockShared& sh) {
  if (threadIdx.x == 0 && sh.work) work_idle(sh.work, sh.work_calls);
}


/// Whether a payload can run: kTaskBadOp when its id has no operator in this image (`has_op`), kTaskBadArgs
/// when its argument size is not the operator's (`row_arg_bytes`) or its tile count is out of range.
__device__ __forceinline__ uint32_t payload_status(bool has_op, uint32_t row_arg_bytes, uint32_t arg_bytes,
                                                   uint32_t tiles) {
  return !has_op                                                                   ? kTaskBadOp
         : row_arg_bytes != arg_bytes || tiles == 0 || tiles > GPUOS_MAX_TILES ? kTaskBadArgs
                                                                                   : kTaskOk;
}

/// The operator of the payload in sh, or null when it cannot run; `st` says why (kTaskOk otherwise).
__device__ __forceinline__ const OpEntry* validate(const BlockShared& sh, const Payload& p, uint32_t& st) {
  const OpEntry* e = p.op < GPUOS_MAX_OPS ? &sh.ops[p.op] : nullptr;
  if (!e || !e->tile)
    st = kTaskBadOp;
  else
    st = payload_status(true, e->arg_bytes, p.arg_bytes, p.tiles);
  return st == kTaskOk ? e : nullptr;
}
__device__ __forceinline__ const OpEntry* validate(const BlockShared& sh, uint32_t& st) {
  return validate(sh, sh.payload, st);
}

/// A slot's tile count as the device queue uses it: 0 or more than GPUOS_MAX_TILES (rejected by the
/// host, so only a corrupt slot) count as 1.
__device__ __forceinline__ uint32_t slot_tiles(uint32_t tiles) {
  return (tiles == 0 || tiles > GPUOS_MAX_TILES) ? 1u : tiles;
}

/// Thread 0, after a task's last tile and a barrier: its writes (ordered before this thread by the barrier,
/// and those of its other tiles, acquired through `pending`) become visible before what follows (a
/// completion record, a dependent's start). Device scope suffices for device memory, which the host
/// reads with copies through the same L2; an operator that writes over the bus (mapped host memory, a
/// peer) asks for system scope (GPUOS_OP_HOST_WRITES); one that writes nothing (GPUOS_OP_NO_WRITES), or
/// a task that did not run, has nothing to release.
/// The fence is fence.acq_rel: a MEMBAR (the release) and an invalidation of the SM's L1 (CCTL.IVALL, the
/// acquire). The front end's lone tasks rely on the invalidation: the next one's inputs, written by the
/// host since, are read through L1 with no acquire of their own (with fence.release there, the built-ins
/// read stale inputs: tests/gpu/test_ops.cpp, H200). kReleaseOnly leaves it out (fence.release), for a
/// block whose every later read of other blocks' writes is behind an acquire of its own (run_role).
template <bool kReleaseOnly = false>
__device__ __forceinline__ void release_flags(uint32_t flags) {
  if (flags & GPUOS_OP_HOST_WRITES) {
    if constexpr (kReleaseOnly) asm volatile("fence.release.sys;" ::: "memory");
    else asm volatile("fence.acq_rel.sys;" ::: "memory");
  } else if (!(flags & GPUOS_OP_NO_WRITES)) {
    if constexpr (kReleaseOnly) asm volatile("fence.release.gpu;" ::: "memory");
    else asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
}
/// The flags release_flags reads of an operator (one that did not run writes nothing).
__device__ __forceinline__ uint32_t write_flags(const OpEntry* e) { return e ? e->flags : GPUOS_OP_NO_WRITES; }
__device__ __forceinline__ void release_writes(const OpEntry* e) { release_flags(write_flags(e)); }
/// The writes of two operators as one (release_flags): over the bus if either's are, none if neither writes.
__device__ __forceinline__ uint32_t merge_writes(uint32_t a, uint32_t b) {
  return ((a | b) & GPUOS_OP_HOST_WRITES) | (a & b & GPUOS_OP_NO_WRITES);
}

/// Writes ticket's completion record (one 16-byte posted write to mapped host memory) and counts the
/// completion (DeviceState::completed: a stopping kernel's blocks leave once it reaches `head`).
__device__ __forceinline__ void host_record(const LaunchParams& p, uint64_t ticket, uint32_t st, uint32_t detail) {
  store_sys_v4(&p.completions[ticket & ((1ull << p.log2_capacity) - 1)],
               make_uint4(static_cast<uint32_t>(ticket + 1), static_cast<uint32_t>((ticket + 1) >> 32), st, detail));
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(&p.state->completed) : "memory");
}

/// The detail of a kTaskDepFailed record: the root cause's ticket (low 32 bits) from a cause word.
__device__ __forceinline__ uint32_t cause_detail(uint64_t cause) { return static_cast<uint32_t>(cause - 1); }

/// Tiles a record made ready by its dependencies is armed with: one for a task that completes without
/// running (a failed dependency, a skipped node) and for a graph launch, else its payload's. Only for
/// graph nodes and tasks with dependencies (others' `cause` is a former ticket's).
__device__ __forceinline__ uint32_t ready_tiles(const TaskRecord& r) {
  const volatile TaskRecord& v = r;
  if (v.cause != 0 || v.payload.op == GPUOS_OP_GRAPH) return 1u;
  return slot_tiles(v.payload.tiles);
}

/// Arms record r with `tiles` claimable tiles. The claim is stored last, with release: whoever claims a
/// tile sees the record as armed here.
__device__ __forceinline__ void arm_ready(TaskRecord& r, uint32_t tiles) {
  r.pending = tiles;
  r.scratch = 0.0;
  dev_ref<uint64_t>(r.claim).store(make_claim(tiles, r.ticket), cuda::memory_order_release);
}



/// Word k (0-5) of what a block reads of a record's ticket and line 1 to run it, in 8-byte units: what
/// load_meta and copy_record read with thread 32 + k (the indices packed a byte each in one constant).
__device__ __forceinline__ uint32_t run_word(uint32_t k) {
  constexpr uint64_t packed = offsetof(TaskRecord, ticket) / 8 | offsetof(TaskRecord, cause) / 8 << 8 |
                              offsetof(TaskRecord, exec) / 8 << 16 | offsetof(TaskRecord, deps_left) / 8 << 24 |
                              static_cast<uint64_t>(offsetof(TaskRecord, succ_begin) / 8) << 32 |
                              static_cast<uint64_t>(offsetof(TaskRecord, weak) / 8) << 40;
  return static_cast<uint32_t>(packed >> (8 * k)) & 0xffu;
}

/// Loads what the block needs of a record it runs into shared memory: the payload (12 threads, 8 bytes
/// each) and the words of run_word (threads 32-37), in one round trip. A barrier follows before any use.
__device__ __forceinline__ void load_meta(BlockShared& sh, const TaskRecord& e) {
  static_assert(sizeof(Payload) == 12 * 8);
  const volatile unsigned long long* w = reinterpret_cast<const volatile unsigned long long*>(&e);
  const unsigned tid = threadIdx.x;
  if (tid < 12) {
    reinterpret_cast<unsigned long long*>(&sh.payload)[tid] = w[offsetof(TaskRecord, payload) / 8 + tid];
  } else if (tid >= 32 && tid < 38) {
    const uint64_t v = w[run_word(tid - 32)];
    if (tid == 32) {
      sh.ticket = v;
    } else if (tid == 33) {
      sh.cause = v;
    } else if (tid == 34) {
      sh.exec = v;
    } else if (tid == 35) {
      sh.node = static_cast<uint32_t>(v >> 32);
    } else if (tid == 36) {
      sh.succ_begin = static_cast<uint32_t>(v);
      sh.succ_count = static_cast<uint32_t>(v >> 32);
    } else {
      sh.sinks = static_cast<uint32_t>(v >> 32);
    }
  }
  static_assert(offsetof(TaskRecord, node) == offsetof(TaskRecord, deps_left) + 4);
  static_assert(offsetof(TaskRecord, succ_count) == offsetof(TaskRecord, succ_begin) + 4);
  static_assert(offsetof(TaskRecord, sinks) == offsetof(TaskRecord, weak) + 4);
}

/// Why the loaded record completes without running: 0, or its cause (only graph nodes and tasks with
/// dependencies have one; another task's `cause` word is a former ticket's).
__device__ __forceinline__ uint64_t cause_of(const BlockShared& sh) {
  return (sh.exec != 0 || (sh.payload.hints & kHintDeps)) ? sh.cause : 0ull;
}

/// Tiles the loaded record runs as (the count it is armed with: ready_tiles, the front end's arming).
__device__ __forceinline__ uint32_t run_tiles(const BlockShared& sh) {
  return cause_of(sh) != 0 || sh.payload.op == GPUOS_OP_GRAPH ? 1u : slot_tiles(sh.payload.tiles);
}

// ---- graphs --------------------------------------------------------------------------------------------
/// The in-degree a successor word carries, or the instance's table's when it did not fit.
__device__ __forceinline__ uint32_t succ_indeg(const GraphExec& x, uint32_t w) {
  const uint32_t d = w >> kSuccNodeBits;
  return d < kSuccIndegMax ? d : reinterpret_cast<const uint32_t*>(x.shape.indeg)[w & kSuccNodeMask];
}



/// Thread 0: a node without a successor of instance x completed; true when it was the launch's last
/// (`sinks` such nodes a launch; the count goes on over all launches, placed or not).
__device__ __forceinline__ bool sink_done(GraphExec& x, uint32_t sinks) {
  const uint64_t n = dev_ref<uint64_t>(x.run.sinks_done).fetch_add(1ull, cuda::memory_order_acq_rel) + 1;
  return n % sinks == 0;
}



/// Most tiles one claim takes, unless DeviceState::max_batch says otherwise.
inline constexpr uint32_t kMaxBatch = 32;
/// A claim takes (tiles left) / (kClaimSpread x grid) tiles, at least 1, at most the batch bound, unless
/// DeviceState::claim_spread says otherwise: one tile at a time for a task of up to ~17k tiles on a
/// 264-block grid (64M floats), larger batches only for larger tasks, so that one claim word is not
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

/// The claim spread (times the grid) and batch bound in effect: DeviceState's settings, else the defaults.
__device__ __forceinline__ uint32_t claim_spread_of(const BlockShared& sh) {
  return (sh.claim_spread ? sh.claim_spread : kClaimSpread) * gridDim.x;
}
__device__ __forceinline__ uint32_t max_batch_of(const BlockShared& sh) { return sh.max_batch ? sh.max_batch : kMaxBatch; }

/// How an operator's claiming adapter claims on from claim word `word`: `take` tiles next, `left` left
/// unclaimed by the block's last claim, later claims sized by `spread` and bounded by `max_batch`.
__device__ __forceinline__ TileClaims claims_on(uint64_t* word, uint32_t take, uint32_t left, uint32_t spread,
                                                uint32_t max_batch) {
  return TileClaims{reinterpret_cast<unsigned long long*>(word), 0ull, take, left,
                    static_cast<uint32_t>((0x100000000ull + spread - 1) / spread), max_batch};
}

/// Tiles a claim asks for, from `share` (the tiles left over the grid): at least 1, at most `max_batch`.
__device__ __forceinline__ uint32_t claim_batch(uint32_t share, uint32_t max_batch) {
  return share < 1 ? 1 : (share > max_batch ? max_batch : share);
}



/// Copies what a block reads of a record it runs (the words load_meta reads) from `e` into `d`, a record
/// in shared memory, in one round trip (threads 0-11 and 32-37).
__device__ __forceinline__ void copy_record(TaskRecord& d, const TaskRecord& e) {
  const volatile unsigned long long* w = reinterpret_cast<const volatile unsigned long long*>(&e);
  unsigned long long* o = reinterpret_cast<unsigned long long*>(&d);
  const unsigned tid = threadIdx.x;
  const uint32_t i = tid < 12 ? offsetof(TaskRecord, payload) / 8 + tid : tid >= 32 && tid < 38 ? run_word(tid - 32) : ~0u;
  if (i != ~0u) o[i] = w[i];
}

/// What a block running a role of a placed launch keeps in shared memory (run_role): item i's header in
/// item[i % 3] (two ahead), its node's payload and first waits in payload[i % 2] and wait[i % 2] (one ahead),
/// all prefetched while the item before runs.
inline constexpr uint32_t kRoleWaits = 4;  // waits prefetched per item (more are read when needed)
struct RoleShared {
  PlacedItem item[3];
  Payload payload[2];
  PlacedWait wait[2][kRoleWaits];
  /// Item i's slots: its header, its node's payload, its first waits.
  __device__ __forceinline__ PlacedItem& item_of(uint32_t i) { return item[i % 3]; }
  __device__ __forceinline__ const PlacedItem& item_of(uint32_t i) const { return item[i % 3]; }
  __device__ __forceinline__ Payload& payload_of(uint32_t i) { return payload[i % 2]; }
  __device__ __forceinline__ PlacedWait* waits_of(uint32_t i) { return wait[i % 2]; }
  __device__ __forceinline__ const PlacedWait* waits_of(uint32_t i) const { return wait[i % 2]; }
  uint64_t recs, pitems, pwaits, pnodes, ticket;
  uint32_t k;          // the launch's number (GraphRun::placed)
  uint32_t nsinks;
  uint32_t begin, end;  // the role's items
  uint32_t skip;        // the running item does not run (a predecessor failed or did not run)
  uint32_t last;        // this block completes the running item's node
  uint64_t claim_old;   // a claiming item's last claim, as the claim word was before it
  TileClaims claims;    // how a claiming item's adapter claims on
  // What run_role needs of an item after its tiles, written before them. Here, not in registers: kept
  // there across the inlined tiles, the compiler spills them, and the step is slower (the 1B Llama step
  // 1.0993 ms here against 1.1075 in registers, one call on an H200; docs/design.md, Running a role).
  /// Every thread's, written by thread 0 before the item's barrier, read after the tiles before the
  /// barrier after them (a single slot: thread 0 writes the next item's after that barrier).
  struct {
    const OpEntry* op;  // null: the item does not run (a predecessor failed or did not run, or validate)
    uint32_t st;        // validate's status; kTaskOk when a predecessor failed or did not run
    uint32_t flags;     // kCur*
    uint32_t count;     // its tiles (a claiming item's: those it claimed, written after them)
  } cur;
  /// The tail thread's (kRoleTail), written and read by it alone.
  struct {
    uint32_t* done;        // the item's node's PlacedNode::done
    uint32_t unreleased;   // what the block wrote since its last release (merge_writes)
    uint32_t chunk_add;    // a counted chunk's count: its tiles, + 1 for the node's first chunk
    uint32_t complete_at;  // the node's done when this launch has counted all its tiles
    uint32_t publish_add;  // a completed node's count
  } tail;
};
/// RoleShared::cur's flags: a claiming item; its operator awaits its inputs itself; it holds all its
/// node's tiles; its node is a sink; its node is published (PlacedItem::flags).
inline constexpr uint32_t kCurClaim = 1u, kCurEarly = 2u, kCurWhole = 4u, kCurSink = 8u, kCurPublish = 16u;
static_assert(offsetof(RoleShared, item) % 16 == 0 && offsetof(RoleShared, payload) % 16 == 0);
static_assert(sizeof(RoleShared) <= 2 * sizeof(TaskRecord));

/// A worker block's own shared memory: its loop's state (thread 0's) and its continuations' records.
/// The loop's state lives here rather than in registers: with run_continuations reachable from the
/// loop, the compiler kept it on the stack, and the worker's loop lost 3% of its tiny-task throughput
/// on an H100.
struct WorkerShared {
  uint64_t mine;        // the block's own ticket, when `have`
  uint64_t tried_post;  // the last special post this block tried to take (once per post)
  uint64_t gang_seen;   // the last placed launch (DeviceState::gang_seq) this block looked at
  uint32_t have;
  uint32_t streak;      // continuations the worker's loop started in a row
  union {
    /// run_continuations: the records of the nodes run in turn: the one running and its successor's,
    /// prefetched (payload and line 1: bytes kPrefetchFrom on; the ticket is written here by the block).
    TaskRecord rec[2];
    RoleShared role;  // run_role's
  };
  ulonglong2 head_post[2];  // DeviceState head and special_post, read with the prefetch into rec[k ^ 1]
  uint64_t handed;          // the record node_done handed the block, for every thread
  // run_links' state, read and written by all threads alike: its live values across an operator's call
  // are only these (in registers they were saved and reloaded around every call).
  TaskRecord* link_r;    // the record in rec[link_b]
  uint32_t link_b;
  uint32_t link_run;     // continuations run since run_continuations was entered
  uint32_t link_ran;     // link_r ran (with status link_st) and waits for node_done; 0: it has not run
  uint32_t link_st;
  uint32_t unreleased;   // what the nodes run since the last release wrote (merge_writes)
  // What the tiles of run_links (by the parity of their record in rec) and of run_role (by the parity of
  // their item) are told. Not in registers: there, the context of the built-ins inlined in run_role was
  // spilled to the stack.
  TileCtx tile_ctx[2];
  double link_scratch[2];  // their scratch words
};
/// A worker block's own shared memory (the front end's block leaves it unused); at namespace scope for
/// the reason block_shared is.
GPUOS_SHARED_ WorkerShared worker_shared;
inline constexpr uint32_t kPrefetchFrom = offsetof(TaskRecord, payload);
inline constexpr uint32_t kPrefetchCopies = (sizeof(TaskRecord) - kPrefetchFrom) / 16;
static_assert(kPrefetchFrom % 16 == 0 && kPrefetchCopies < GPUOS_BLOCK_THREADS);

/// An item of a placed launch whose operator awaits its inputs itself (GPUOS_OP_AWAITS_INPUTS): the
/// operator is called before the item's wait, starts what does not depend on the node's predecessors (its
/// weights' loads), and then calls gpuos_await_inputs, which waits here as run_role would have. Thread 0
/// of the block writes it before the call; `pending` says the wait is still to come, `ok` what it found
/// (0: a predecessor failed or did not run, and the operator must not write). Outside such an item,
/// pending is 0 and ok 1, so an awaiting operator run as a plain task does not wait. The item is named by
/// its index in the role (`slot`), not by pointers: the wait then reads the role's words (RoleShared, in
/// worker_shared) with shared-memory loads, where through pointers kept here they are generic loads (the
/// 1B Llama step on an H200: 1.0205 ms against 1.0243 with the pointers in one call, 1.0229 against
/// 1.0246 in another).
struct AwaitState {
  uint32_t slot;  ///< the item's index in run_role (RoleShared::item_of, waits_of)
  uint32_t pending;
  uint32_t ok;
  uint32_t bad_local;
};
GPUOS_SHARED_ AwaitState await_state;

/// Thread 0, at kernel start (a barrier follows before any use).
__device__ __forceinline__ void await_reset() {
  await_state.pending = 0;
  await_state.ok = 1;
}

/// Whether a graph node with successor word `sc` (succ_begin, succ_count) is a chain link: its only successor
/// has no other predecessor.
__device__ __forceinline__ bool is_link(uint2 sc) { return sc.y == 1 && (sc.x >> kSuccNodeBits) == 1; }

/// The role of the worker block at place `pos` in a placed launch whose launcher is at place `lp`: the
/// launcher runs role 0 (at once, on its next look at the gang); the others follow the order of places.
__device__ __forceinline__ uint32_t role_of(uint32_t pos, uint32_t lp) {
  return pos == lp ? 0u : pos < lp ? pos + 1u : pos;
}

// ---- across the units ---------------------------------------------------------------------------------
// kernel/scheduler.cu
__device__ void launch_done(const LaunchParams& p, GraphExec& x);
__device__ void finish(const LaunchParams& p, TaskRecord& e, const TileCtx& c, const OpEntry* op, uint32_t st);
// kernel/dispatch.cu
__device__ __noinline__ void run_links(const LaunchParams& p);
__device__ __noinline__ void run_role(const LaunchParams& p, GraphExec& x);

}  // namespace gpuos::kern
