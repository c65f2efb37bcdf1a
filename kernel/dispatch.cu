// The loops that call operators' tiles: chains of one-tile graph nodes (run_links) and the roles of
// placed launches (run_role). The built-in operators' tiles are inlined into them. With
// GPUOS_INLINE_OPERATORS=1 a generation links this unit as LTO-IR with its operators and a generated
// table whose gpuos_loaded_tile calls each loaded operator's adapter by name (jit/table.cpp), so the
// loaded operators' tiles are inlined too: a call to an operator's adapter costs its saved registers and
// a slower body (~1.5-2.5 us a call for the Llama projection tile on an H100, docs/design.md).
#include "kernel/sched.cuh"

// The built-in operators' adapters (kernel/builtin_ops.cu, compiled in the same translation unit as this
// file in every image; inline, as every operator's range adapter is: gpuos/op.cuh).
#define GPUOS_DECLARE_TILE_(ID, name)                                                       \
  extern "C" __device__ __forceinline__ void gpuos_op_##name##_tile(const void* a, const ::gpuos::TileCtx& c, \
                                                                    unsigned int count);
GPUOS_BUILTIN_OPS(GPUOS_DECLARE_TILE_)
#undef GPUOS_DECLARE_TILE_

#if defined(GPUOS_INLINE_LOADED)
/// The image's operators loaded at run time, called by name (so inlined) when `tile` is one of their range
/// adapters, else through the pointer: defined by the generated table of each generation (jit/table.cpp),
/// which nvJitLink links with this unit's LTO-IR.
extern "C" __device__ void gpuos_loaded_tile(gpuos::TileRangeFn tile, const void* args, const gpuos::TileCtx& c,
                                             unsigned int count);
#endif

namespace gpuos::kern {

/// All threads: `count` tiles, the last `c.tile`, through operator adapter `tile` (a chain link's, a placed
/// item's). A built-in operator's adapter is called by name and so inlined here, and so is a loaded one's
/// through gpuos_loaded_tile where this unit is linked as LTO-IR with GPUOS_INLINE_LOADED; otherwise a
/// loaded operator is called through its row. An H100 takes ~1,200 cycles for a tiny add's call through
/// the jump table from run_links (the adapter saves and restores ~30 registers through the stack) and
/// ~350 inlined.
__device__ __forceinline__ void direct_tile(TileRangeFn tile, const void* args, const TileCtx& c, uint32_t count) {
#define GPUOS_DIRECT_BUILTIN_(ID, name)     \
  if (tile == &gpuos_op_##name##_tile) {    \
    gpuos_op_##name##_tile(args, c, count); \
    return;                                 \
  }
  GPUOS_BUILTIN_OPS(GPUOS_DIRECT_BUILTIN_)
#undef GPUOS_DIRECT_BUILTIN_
#if defined(GPUOS_INLINE_LOADED)
  gpuos_loaded_tile(tile, args, c, count);
#else
  tile(args, c, count);
#endif
}

/// What run_links reads of a record to run it as a link: its successor word and count, and its operator's
/// row as the payload's header names it (`st`: whether it can run). Every thread alike, from shared memory.
struct LinkStep {
  uint2 sc;         // succ_begin, succ_count
  uint32_t op;      // the payload's operator (jump-table slot)
  uint32_t st;      // kTaskOk, or why the node cannot run
  TileRangeFn tile;
  uint4 e1;         // the row's second half: finish (x, y), arg_bytes, flags
};
__device__ __forceinline__ LinkStep link_step(const BlockShared& sh, const TaskRecord& m) {
  LinkStep k;
  k.sc = *reinterpret_cast<const uint2*>(&m.succ_begin);
  const uint64_t hdr = *reinterpret_cast<const uint64_t*>(&m.payload);
  k.op = static_cast<uint32_t>(hdr & 0xffffu);
  const uint32_t arg_bytes = static_cast<uint32_t>(hdr >> 16) & 0xffu;
  const uint32_t tiles = static_cast<uint32_t>(hdr >> 32);
  const OpEntry* const row = &sh.ops[k.op < GPUOS_MAX_OPS ? k.op : 0u];
  k.e1 = *reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(row) + 16);
  k.tile = row->tile;
  k.st = payload_status(k.op < GPUOS_MAX_OPS && k.tile != nullptr, k.e1.z, arg_bytes, tiles);
  return k;
}

/// All threads of a worker block, cs.rec[cs.link_b] holding the words of cs.link_r, a graph node of one
/// tile with no cause: runs chain links (a node of one tile whose only successor has no other predecessor)
/// one after another, in this block, while the next is one too and nothing asks the block to stop.
/// Returns with cs.link_r at the record it stopped on, its words in cs.rec[cs.link_b] (ticket included),
/// not run (cs.link_ran 0: it is no chain link) or run with status cs.link_st (1: it needs node_done).
///
/// A step is the tile, one barrier and a decision every thread makes alike, and costs little more than
/// the operator's call (an H100, a tiny add: ~2,600 cycles a step with the general bookkeeping of every
/// node, ~900 here): out of line, so that what lives across the call stays in registers the callee
/// preserves, with every value that cannot change during the run read once (the block's own ticket and
/// chain, the watchdog's record, the launch's ticket), the next link decoded right after the barrier
/// (link_step: its successor word and its operator's row), and one store a link for the watchdog:
/// - While the node's tile runs, the successor's payload and line 1 are copied into the other record
///   of cs (cp.async: no register holds them across the operator's call), with `head`.
/// - The successor runs next in the same block, so the node's writes need no fence to reach it: the
///   barrier after the tile orders them for the whole block. The block keeps the strongest release its
///   nodes since the last fence need (cs.unreleased) and pays it once, before anything leaves the block
///   (an arrival, a hand-off to the board, a completion record). Nothing else may run the successor: it
///   becomes ready only through this node.
/// - A link's scratch word is in shared memory (two, alternating; the next one is zeroed while the tile
///   runs): no node but this one reads it. The successor's arrival count is not touched (an in-degree of
///   1 never reads it), its claim word is never armed, and its record's ticket is written only where the
///   run stops (no one reads it before).
__device__ __noinline__ void run_links(const LaunchParams& p) {
  BlockShared& sh = block_shared;
  WorkerShared& cs = worker_shared;
  const unsigned tid = threadIdx.x;
  uint32_t b = cs.link_b;
  TaskRecord* const recs = cs.link_r - cs.rec[b].node;
  uint32_t cur = cs.rec[b].node;
  uint32_t run = cs.link_run;
  const uint64_t ticket = cs.rec[b].ticket;
  // The block's own ticket and chain do not change while it runs here.
  const uint64_t mine = cs.have ? cs.mine : ~0ull;
  const uint32_t streak = sh.chain != 0 ? kMaxStreak : ~0u;  // continuations before the chain's turn
  BlockWork* const work = sh.work;
  uint32_t calls = sh.work_calls;
  uint32_t unreleased = cs.unreleased;  // thread 0's
  uint32_t ran = 0;
  bool noted = false;  // thread 0's: the watchdog's record is busy with a link
  // The prefetch, one copy per thread of warp 0 with no branch: threads 0..13 a 16-byte piece of the
  // successor's record from kPrefetchFrom on, thread 14 `head` and special_post.
  const uint64_t* const head = &p.state->head;  // (p is in local memory: one load, not one a step)
  const bool copies = tid <= kPrefetchCopies;
  const uint32_t piece = kPrefetchFrom + 16 * tid;
  if (tid < 2) {
    cs.tile_ctx[tid] = TileCtx{0u, 1u, ticket, tile_smem, &cs.link_scratch[tid]};
    cs.link_scratch[tid] = 0.0;
  }
  __syncthreads();
  // The step after a barrier decodes the next one's record at once (one load for what the decision
  // needs, one for the operator's row), so that a step goes from its prefetch to its tile directly.
  LinkStep k = link_step(sh, cs.rec[b]);
  for (;;) {
    if (!is_link(k.sc)) break;  // not a link: the caller runs it
    const uint32_t next = k.sc.x & kSuccNodeMask;
    const TaskRecord& m = cs.rec[b];
    // cs.rec[b ^ 1] was last read before the barrier that ended the step before this one.
    if (copies)
      copy_async16(tid < kPrefetchCopies ? reinterpret_cast<char*>(&cs.rec[b ^ 1]) + piece
                                         : reinterpret_cast<char*>(&cs.head_post[b]),
                   tid < kPrefetchCopies ? reinterpret_cast<const char*>(&recs[next]) + piece
                                         : reinterpret_cast<const char*>(head));
    else if (tid == 32)
      cs.link_scratch[b ^ 1] = 0.0;  // the successor's; the last tile that used it ended before this step
    if (k.st == kTaskOk) {
      // The watchdog's record: each link's call with its own count, so that a link is timed alone
      // against its operator's deadline; left busy until the next link's (the block is busy with the
      // chain) and marked idle where the run ends, one store a link.
      if (tid == 0 && work) {
        work_busy(work, ticket, 0u, ++calls, k.op);
        noted = true;
      }
      direct_tile(k.tile, m.payload.args, cs.tile_ctx[b], 1u);
    }
    wait_async();
    __syncthreads();  // the tile's writes, the prefetch
    if (k.st == kTaskOk && (k.e1.x | k.e1.y) != 0) {
      const TileFn finish = reinterpret_cast<TileFn>(static_cast<uintptr_t>(k.e1.x) | static_cast<uintptr_t>(k.e1.y) << 32);
      if (tid == 0 && work) work_busy(work, ticket, kWorkFinish, ++calls, k.op);
      finish(m.payload.args, cs.tile_ctx[b]);
      if (tid == 0 && work) work_idle(work, calls);
      noted = false;
      __syncthreads();
    }
    unreleased = merge_writes(unreleased, k.st == kTaskOk ? k.e1.w : GPUOS_OP_NO_WRITES);
    // Every thread decides alike, from shared memory no thread writes before the next barrier.
    const TaskRecord& q = cs.rec[b ^ 1];
    const uint32_t st = k.st;
    const uint64_t qcause = q.cause;
    const bool yield = mine < cs.head_post[b].x || run >= streak;
    k = link_step(sh, q);
    if (st != kTaskOk || yield || qcause != 0 || slot_tiles(static_cast<uint32_t>(*reinterpret_cast<const uint64_t*>(&q.payload) >> 32)) != 1) {
      ran = 1;
      k.st = st;
      break;
    }
    cur = next;
    b ^= 1;
    ++run;
  }
  TaskRecord& r = recs[cur];
  if (tid == 0) {
    // Where the caller goes on: the general path reads the record's ticket and scratch.
    cs.rec[b].ticket = ticket;
    r.ticket = ticket;
    r.scratch = ran ? cs.link_scratch[b] : 0.0;
    cs.link_r = &r;
    cs.link_b = b;
    cs.link_run = run;
    cs.link_ran = ran;
    cs.link_st = k.st;
    cs.unreleased = unreleased;
    sh.work_calls = calls;
    if (work && noted) work_idle(work, calls);
  }
  __syncthreads();
}

/// Warp 0: waits until every predecessor item `it` (of launch k) names is complete, each lane polling
/// its share of them (a node waiting for many polls them all at once, not one round trip after another)
/// without sleeping between polls (a wait is one load in flight a lane; a backoff of 32-256 ns made the
/// 1B Llama step 0.8 us slower on an H200);
/// true when one of them failed or did not run. `pre`: its first waits, prefetched; `bad_local`: a node
/// this role completed failed or did not run in this launch (only then are its own predecessors' marks
/// read).
__device__ __forceinline__ bool role_wait(const RoleShared& rs, const PlacedItem& it, const PlacedWait* pre,
                                          bool bad_local) {
  const uint32_t k = rs.k;
  bool skip = false, waited = false;
  for (uint32_t j = threadIdx.x; j < it.wcount; j += 32) {
    PlacedWait w;
    if (j < kRoleWaits) {
      w = pre[j];
    } else {
      const volatile PlacedWait& raw = reinterpret_cast<const PlacedWait*>(rs.pwaits)[it.wbegin + j];
      w = PlacedWait{raw.node, raw.weight};
    }
    const uint32_t u = w.node & ~kPlacedSameRole;
    PlacedNode* pn = reinterpret_cast<PlacedNode*>(rs.pnodes) + u;
    if (w.node & kPlacedSameRole) {
      if (bad_local && reinterpret_cast<volatile PlacedNode*>(pn)->bad == k) skip = true;
      continue;
    }
    const uint32_t target = k * w.weight;
    uint2 v = load_relaxed_u32x2(pn);
    while (static_cast<int32_t>(v.x - target) < 0) v = load_relaxed_u32x2(pn);
    waited = true;
    if (v.y == k) skip = true;
  }
  // Acquire, by each lane that saw a count: the predecessors' writes, released before their counts (the
  // barrier after this passes them on to the block).
  if (waited) fence_acquire();
  return __any_sync(0xffffffffu, skip);
}

/// Threads 0-11: starts the copies of item i's node's payload and first waits into the role's buffers
/// i % 2 (its header must be in rs.item_of(i)).
__device__ __forceinline__ void role_fetch_node(RoleShared& rs, uint32_t i) {
  const unsigned tid = threadIdx.x;
  const PlacedItem& it = rs.item_of(i);
  if (tid >= 2 && tid < 8) {
    const char* src = reinterpret_cast<const char*>(rs.recs) + sizeof(TaskRecord) * it.node + offsetof(TaskRecord, payload);
    copy_async16(reinterpret_cast<char*>(&rs.payload_of(i)) + 16 * (tid - 2), src + 16 * (tid - 2));
  } else if (tid >= 8 && tid < 8 + kRoleWaits && tid - 8 < it.wcount) {
    copy_async8(&rs.waits_of(i)[tid - 8], reinterpret_cast<const PlacedWait*>(rs.pwaits) + it.wbegin + (tid - 8));
  }
}
/// Threads 0-1: starts the copy of item i's header into rs.item_of(i).
__device__ __forceinline__ void role_fetch_item(RoleShared& rs, uint32_t i) {
  const unsigned tid = threadIdx.x;
  if (tid < 2)
    copy_async16(reinterpret_cast<char*>(&rs.item_of(i)) + 16 * tid,
                 reinterpret_cast<const char*>(reinterpret_cast<const PlacedItem*>(rs.pitems) + i) + 16 * tid);
}


}  // namespace gpuos::kern

/// gpuos/op.cuh, gpuos::await_inputs: all threads of the block. Two barriers: the first passes the wait
/// and its acquire (warp 0's) to the block, the second keeps thread 0's clearing of `pending` after
/// every thread's look at it, so that a later call (the next tile's, run_role's after the operator)
/// returns at once.
extern "C" __device__ __noinline__ unsigned int gpuos_await_inputs() {
  using namespace gpuos::kern;
  AwaitState& a = await_state;
  if (!a.pending) return a.ok;
  if (threadIdx.x < 32) {
    const RoleShared& rs = worker_shared.role;
    const uint32_t i = a.slot;
    const bool skip = role_wait(rs, rs.item_of(i), rs.waits_of(i), a.bad_local != 0);
    if (threadIdx.x == 0) a.ok = skip ? 0u : 1u;
  }
  __syncthreads();
  const unsigned int ok = a.ok;
  if (threadIdx.x == 0) a.pending = 0;
  __syncthreads();
  return ok;
}

namespace gpuos::kern {

/// All threads: runs the tiles of a claiming item (kPlacedClaim) this block claims from the node's placed
/// claim word, the first claim already made (rs.claim_old); returns how many it took. Batches as
/// work_entry claims them: while a grid's worth is left, the operator's claiming adapter runs the rest in
/// one call (each claim issued ahead); else a batch per call, claimed here. A node that does not run
/// (`op` null) still takes every tile left, so that its count completes.
__device__ __noinline__ uint32_t run_claiming_item(PlacedNode& pn, const OpEntry* op, const Payload& pl, TileCtx ctx) {
  BlockShared& sh = block_shared;
  RoleShared& rs = worker_shared.role;
  const unsigned tid = threadIdx.x;
  const uint32_t spread = claim_spread_of(sh), max_batch = max_batch_of(sh);
  uint32_t batch = claim_batch(slot_tiles(pl.tiles) / spread, max_batch), ran = 0;
  uint64_t old = rs.claim_old;
  __syncthreads();  // every thread read claim_old
  for (;;) {
    const int32_t rem = claim_remaining(old);
    const uint32_t got = rem > 0 ? (static_cast<uint32_t>(rem) < batch ? static_cast<uint32_t>(rem) : batch) : 0u;
    if (got == 0) break;
    const uint32_t left = static_cast<uint32_t>(rem) - got;
    if (!op) {
      if (tid == 0) rs.claim_old = dev_ref<uint64_t>(pn.claim).fetch_sub(kClaimOne * left, cuda::memory_order_relaxed);
      __syncthreads();
      const int32_t more = claim_remaining(rs.claim_old);
      ran += got + (more > 0 ? (static_cast<uint32_t>(more) < left ? static_cast<uint32_t>(more) : left) : 0u);
      __syncthreads();
      break;
    }
    ctx.tile = static_cast<uint32_t>(rem) - 1;
    const uint32_t next = claim_batch(static_cast<uint32_t>(rem) / spread, max_batch);
    if (left >= gridDim.x && sh.claim_ahead_off == 0) {
      if (tid == 0)
        rs.claims = claims_on(&pn.claim, next, left, spread, max_batch);
      __syncthreads();
      work_begin(sh, ctx.ticket, pl.op, ctx.tile);
      ran += op->claim(pl.args, ctx, got, &rs.claims);
      work_end(sh);
      __syncthreads();
      break;
    }
    work_begin(sh, ctx.ticket, pl.op, ctx.tile);
    op->tile(pl.args, ctx, got);
    work_end(sh);
    ran += got;
    if (left == 0) break;
    batch = next;
    if (tid == 0) rs.claim_old = dev_ref<uint64_t>(pn.claim).fetch_sub(kClaimOne * batch, cuda::memory_order_relaxed);
    __syncthreads();
    old = rs.claim_old;
    __syncthreads();
  }
  return ran;
}

/// The thread of run_role that ends an item (its node's marks, counts and release, the launch's end): one
/// of warp 1, so that the release fence, which waits until the item's writes have reached L2 (~0.6 us
/// for a tiny add on an H100), stalls warp 1 while warp 0 goes on to the next item's wait.
inline constexpr unsigned kRoleTail = 32;

/// All threads of a worker block: runs its role (role_of) in the placed launch of instance `x` (its gang
/// number seen, with acquire): each item in turn, tiles [first, first + count) of its node through the operator's
/// plain adapter, after waiting for its predecessors' counts (PlacedNode::done grown by this launch's
/// share). The block that completes a node (the one holding all its tiles, or the last to count its
/// tiles) runs its finish function and counts it once more; the last node without a successor completes
/// the launch and ends the gang. A node spread in chunks over several roles that has neither a finish
/// function nor to complete the launch needs no block to learn that it completed: each chunk counts its
/// tiles with a release and one reduction, the first chunk adding the node's + 1, and the waiters see
/// the node complete as soon as the last count lands (no round trip, no second release on the way).
///
/// A step costs the tiles and two barriers when the item waits for nothing (its predecessors ran here):
/// the next items' headers, payloads and waits are copied into shared memory while the tiles run
/// (cp.async), the tiles' context and what the item needs after its tiles (RoleShared::cur, ::tail) are
/// written to shared memory before the first barrier, a
/// built-in operator's tiles are inlined (direct_tile), and a node completed here whose successors all run
/// here is neither released nor counted (the barrier orders its writes for this block; the block releases
/// them before anything leaves it). A node other roles wait for costs a release fence and one atomic, in
/// warp 1 (kRoleTail), while warp 0 starts the next item's wait: a poll of the counter until it has grown,
/// then an acquire fence without a MEMBAR (fence_acquire). The release leaves the SM's L1 as it is
/// (release_flags<true>): every read of other blocks' writes here is behind such a wait or the launch's
/// join, and the worker's loop acquires before each task it takes.
__device__ __noinline__ void run_role(const LaunchParams& p, GraphExec& x) {
  BlockShared& sh = block_shared;
  RoleShared& rs = worker_shared.role;
  void* const smem = tile_smem;
  const unsigned tid = threadIdx.x;
  if (tid == 0) {
    const volatile GraphExec& vx = x;
    rs.recs = vx.shape.recs;
    rs.pitems = vx.shape.pitems;
    rs.pwaits = vx.shape.pwaits;
    rs.pnodes = vx.shape.pnodes;
    rs.nsinks = vx.shape.nsinks;
    rs.k = vx.run.placed;
    rs.ticket = vx.run.ticket;
    const volatile uint32_t* off = reinterpret_cast<const volatile uint32_t*>(vx.shape.role_off);
    const uint32_t role = role_of(sh.placed_pos, vx.run.launcher_pos);
    rs.begin = off[role];
    rs.end = off[role + 1];
  }
  __syncthreads();
  const uint32_t begin = rs.begin, end = rs.end, k = rs.k;
  if (begin == end) return;
  role_fetch_item(rs, begin);
  wait_async();
  if (begin + 1 < end) role_fetch_item(rs, begin + 1);
  __syncthreads();
  role_fetch_node(rs, begin);
  wait_async();
  __syncthreads();
  PlacedNode* const pnodes = reinterpret_cast<PlacedNode*>(rs.pnodes);
  if (tid == kRoleTail) rs.tail.unreleased = GPUOS_OP_NO_WRITES;
  bool bad_local = false;  // every thread's alike
  for (uint32_t i = begin; i < end; ++i) {
    const PlacedItem it = rs.item_of(i);
    // The next items' words, while this one waits and runs.
    if (i + 2 < end) role_fetch_item(rs, i + 2);
    if (i + 1 < end) role_fetch_node(rs, i + 1);
    const bool claiming = it.flags & kPlacedClaim;
    const bool waits = !(it.flags & kPlacedNoWait) || bad_local;
    PlacedNode& pn = pnodes[it.node];
    const Payload& pl = rs.payload_of(i);
    // A claiming item's first claim, made before the wait: claims do not depend on the predecessors.
    if (claiming && tid == 32) {
      const uint32_t batch = claim_batch(slot_tiles(pl.tiles) / claim_spread_of(sh), max_batch_of(sh));
      rs.claim_old = dev_ref<uint64_t>(pn.claim).fetch_sub(kClaimOne * batch, cuda::memory_order_relaxed);
    }
    uint32_t vst = kTaskOk;
    const OpEntry* const vop = validate(sh, pl, vst);
    // An operator that awaits its inputs itself is called first and waits inside (AwaitState), a claiming
    // item's at its first claimed tiles (a later call of the item's returns from the await at once).
    const bool early = waits && vop && (vop->flags & GPUOS_OP_AWAITS_INPUTS);
    if (early && tid == 0) {
      await_state.slot = i;
      await_state.bad_local = bad_local ? 1u : 0u;
      await_state.pending = 1;
    }
    if (tid == 0) {
      TaskRecord& rec = reinterpret_cast<TaskRecord*>(rs.recs)[it.node];
      worker_shared.tile_ctx[i % 2] = TileCtx{it.first + it.count - 1, pl.tiles, rs.ticket, smem, &rec.scratch};
    }
    if (tid == kRoleTail) {
      const uint32_t n = pl.tiles;
      rs.tail.done = &pn.done;
      rs.tail.chunk_add = it.count + (it.first == 0 ? 1u : 0u);
      rs.tail.complete_at = (k - 1) * placed_weight(n) + n;
      rs.tail.publish_add = !claiming && it.count == n ? placed_weight(n) : 1u;
    }
    if (waits && !early && tid < 32) {
      const bool sk = role_wait(rs, it, rs.waits_of(i), bad_local);
      if (tid == 0) rs.skip = sk;
    }
    if (tid == 0) {
      const bool sk = waits && !early && rs.skip;  // thread 0's own store
      rs.cur.op = sk ? nullptr : vop;
      rs.cur.st = sk ? kTaskOk : vst;
      rs.cur.flags = (claiming ? kCurClaim : 0u) | (early ? kCurEarly : 0u) |
                     (!claiming && it.count == pl.tiles ? kCurWhole : 0u) | (it.flags & kPlacedSink ? kCurSink : 0u) |
                     (it.flags & kPlacedPublish ? kCurPublish : 0u);
      rs.cur.count = it.count;
    }
    // The item's context (thread 0's), its wait, and, after an item that awaited its inputs, thread 0's
    // reset of await_state.ok past that item's barrier, for every thread.
    __syncthreads();
    {
      const bool skip = waits && !early && rs.skip;
      const OpEntry* const op = skip ? nullptr : vop;
      const TileCtx& ctx = worker_shared.tile_ctx[i % 2];
      if (!claiming) {
        if (op) {
          work_begin(sh, rs.ticket, pl.op, ctx.tile);
          direct_tile(op->tile, pl.args, ctx, it.count);
          work_end(sh);
        }
      } else {
        rs.cur.count = run_claiming_item(pn, op, pl, ctx);  // every thread's alike
      }
    }
    const volatile RoleShared& vrs = rs;
    const OpEntry* op = vrs.cur.op;
    uint32_t st = vrs.cur.st;
    const uint32_t cf = vrs.cur.flags;
    const uint32_t ran = vrs.cur.count;  // the tiles the block ran (a claiming item's: those it claimed)
    bool skip = op == nullptr && st == kTaskOk;
    if (cf & kCurEarly) {
      // The wait, if the operator did not get to it (a no-op if it did); what it found decides as a
      // wait before the call does (the operator wrote nothing when it found a failure).
      if (gpuos_await_inputs() == 0) {
        skip = true;
        st = kTaskOk;
        op = nullptr;  // no finish function; its writes are none
      }
    }
    wait_async();
    __syncthreads();  // the tiles' writes for the whole block; the next items' words
    if ((cf & kCurEarly) && tid == 0) await_state.ok = 1;  // every thread read it before the barrier
    const bool claiming_ = cf & kCurClaim, whole = cf & kCurWhole;  // from rs.cur, not kept across the tiles
    // A chunk of a spread node that nothing waits for the end of (no finish function, not a sink):
    // counted without learning whether it was the last, its first chunk adding the node's + 1.
    const bool counted = !whole && !claiming_ && !(cf & kCurSink) && !(op && op->finish);
    const bool bad = skip || st != kTaskOk;
    bool last = !counted;
    if (tid == kRoleTail) {
      uint32_t unreleased = merge_writes(rs.tail.unreleased, write_flags(op));
      uint32_t* const done = rs.tail.done;
      if (bad) {
        dev_ref<uint32_t>(pn.bad).store(k, cuda::memory_order_relaxed);
        unreleased = merge_writes(unreleased, 0u);  // the mark leaves the block like a write
        if (st != kTaskOk) {
          uint64_t none = 0;
          dev_ref<uint64_t>(x.run.cause).compare_exchange_strong(none, (static_cast<uint64_t>(st) << 32) | (it.node + 1),
                                                                 cuda::memory_order_relaxed);
        }
      }
      if (counted) {
        const uint32_t add = rs.tail.chunk_add;
        release_flags<true>(unreleased);
        unreleased = GPUOS_OP_NO_WRITES;
        asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(done), "r"(add) : "memory");
      } else if (!whole) {
        // Count this block's tiles; the block that counts the last ones completes the node.
        const uint32_t complete_at = rs.tail.complete_at;
        release_flags<true>(unreleased);
        unreleased = GPUOS_OP_NO_WRITES;
        const uint32_t old = ran ? dev_ref<uint32_t>(*done).fetch_add(ran, cuda::memory_order_relaxed) : 0u;
        rs.last = ran != 0 && old + ran == complete_at;
        // Acquire: the other blocks' tiles; their release travels on with this block's count below.
        if (rs.last) {
          fence_acquire();
          unreleased = merge_writes(write_flags(op), 0u);
        }
      }
      rs.tail.unreleased = unreleased;
    }
    bad_local = bad_local || bad;
    // A failed node's mark (kRoleTail's store) before a later item's wait reads it (run only once a node
    // this role completed failed).
    if (bad) __syncthreads();
    if (!whole && !counted) {
      __syncthreads();
      last = rs.last;
    }
    if (!last) continue;
    if (op && op->finish) {
      work_begin(sh, rs.ticket, pl.op, kWorkFinish);
      op->finish(pl.args, worker_shared.tile_ctx[i % 2]);
      work_end(sh);
      __syncthreads();
    }
    if (tid == kRoleTail) {
      const bool publish = (cf & kCurPublish) || !whole;
      const bool sink = cf & kCurSink;
      uint32_t* const done = rs.tail.done;
      const uint32_t add = rs.tail.publish_add;
      if (publish || sink) {
        release_flags<true>(rs.tail.unreleased);
        rs.tail.unreleased = GPUOS_OP_NO_WRITES;
      }
      if (publish) asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(done), "r"(add) : "memory");
      if (sink && sink_done(x, rs.nsinks)) {
        // The gang ends with its launch: every node is complete, so every role is past its last wait.
        dev_ref<uint32_t>(p.state->gang_busy).store(0u, cuda::memory_order_relaxed);
        launch_done(p, x);
      }
    }
  }
  if (tid == kRoleTail) release_flags<true>(rs.tail.unreleased);
  __syncthreads();
}

}  // namespace gpuos::kern
