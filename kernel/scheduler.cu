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

#include "kernel/heap_ops.cuh"
#include "kernel/sched.cuh"

extern "C" __device__ const gpuos::OpEntry* const gpuos_op_table[GPUOS_MAX_OPS];
extern "C" __device__ const unsigned int gpuos_image_abi_version = GPUOS_ABI_VERSION;

namespace gpuos::kern {

/// Copies the jump table's rows into sh.ops (all threads; a barrier follows before any use).
__device__ __forceinline__ void cache_op_table(BlockShared& sh) {
  for (uint32_t i = threadIdx.x; i < GPUOS_MAX_OPS; i += blockDim.x) {
    // Heap requests are served by this image's own operator, whatever the jump table holds at that id.
    const OpEntry* e = i == GPUOS_OP_HEAP_CTL ? &gpuos_op_heap_ctl_entry : gpuos_op_table[i];
    sh.ops[i] = e ? *e : OpEntry{nullptr, nullptr, nullptr, 0u, 0u};
  }
}

/// The host's watchdog gave up on this kernel (kAbortRun): ends the launch at once with a fault, as the
/// host expects. A store to address 0 (never mapped) makes the driver end it with
/// CUDA_ERROR_ILLEGAL_ADDRESS, reported to the host ~0.17 s later on an H100 (a trap: ~0.6 s); the
/// host has already failed every pending task with its own reason. The trap is there in case the store
/// does not fault.
__device__ __noinline__ void abort_kernel() {
  asm volatile("st.global.volatile.u32 [%0], %1;" ::"l"(0ull), "r"(0u) : "memory");
  __nanosleep(1000000);
  __trap();
}
/// Thread 0: puts `value` (an armed record's address, or an armed batch's address | 1) on the board;
/// false when every slot is taken. `slot` receives where.
__device__ bool board_insert(const LaunchParams& p, uint64_t value, uint32_t& slot) {
  DeviceState& s = *p.state;
  for (uint32_t k = 0; k < kBoardSize; ++k) {
    const uint32_t i = static_cast<uint32_t>((value >> 8) + k) % kBoardSize;
    uint64_t expect = 0;
    if (dev_ref<uint64_t>(s.board[i]).compare_exchange_strong(expect, value, cuda::memory_order_acq_rel)) {
      slot = i;
      return true;
    }
  }
  return false;
}

/// Thread 0: the block runs armed record r later itself (it found no board slot).
__device__ __forceinline__ void chain(BlockShared& sh, TaskRecord& r) {
  r.next_ready = sh.chain;
  sh.chain = reinterpret_cast<uint64_t>(&r);
}

/// Thread 0: offers ready record r (not armed) to other blocks: armed on the board, else armed in the
/// block's chain.
__device__ void offer(const LaunchParams& p, TaskRecord& r) {
  BlockShared& sh = block_shared;
  arm_ready(r, ready_tiles(r));
  uint32_t slot;
  if (!board_insert(p, reinterpret_cast<uint64_t>(&r), slot)) chain(sh, r);
}

/// Thread 0: hands on a record that became ready (not armed): the block's continuation if it has none,
/// else offered (above).
__device__ void hand_on(const LaunchParams& p, TaskRecord& r) {
  BlockShared& sh = block_shared;
  if (sh.next == 0) {
    sh.next = reinterpret_cast<uint64_t>(&r);
    return;
  }
  offer(p, r);
}

/// Thread 0: hands on armed batch b of ready records, not armed: on the board, or (no slot) armed into
/// the block's chain. Once on the board, helpers may take records from it at once, each record to one
/// block, which runs it as its continuation (kRunTaken); taken back, only the records its claim word
/// still holds are the block's.
__device__ void hand_on_batch(const LaunchParams& p, ReadyBatch& b) {
  BlockShared& sh = block_shared;
  uint32_t slot;
  if (board_insert(p, reinterpret_cast<uint64_t>(&b) | 1ull, slot)) return;
  const int32_t left = claim_remaining(dev_ref<uint64_t>(b.claim).exchange(0ull, cuda::memory_order_acq_rel));
  const uint64_t* items = reinterpret_cast<const uint64_t*>(b.items);
  for (int32_t i = 0; i < left; ++i) {
    TaskRecord& r = *reinterpret_cast<TaskRecord*>(items[i]);
    arm_ready(r, ready_tiles(r));
    chain(sh, r);
  }
}

/// Thread 0: takes one record from the ready batch at board value `value` (address | 1) in board slot
/// `slot`; its address, or 0 when none was left. The batch leaves the board with its last record.
__device__ uint64_t take_from_batch(const LaunchParams& p, uint64_t value, uint32_t slot) {
  ReadyBatch& b = *reinterpret_cast<ReadyBatch*>(value & ~1ull);
  // Acquire: the items and their records as armed before the batch (a stale value claims nothing).
  const int32_t rem = claim_remaining(dev_ref<uint64_t>(b.claim).fetch_sub(kClaimOne, cuda::memory_order_acq_rel));
  if (rem <= 1) {
    uint64_t expect = value;
    dev_ref<uint64_t>(p.state->board[slot]).compare_exchange_strong(expect, 0ull, cuda::memory_order_relaxed);
  }
  if (rem <= 0) return 0;
  const volatile uint64_t* items = reinterpret_cast<const volatile uint64_t*>(*reinterpret_cast<const volatile uint64_t*>(&b.items));
  return items[rem - 1];
}

/// Thread 0: host ticket `rec` completed with `st` (detail as the completion record says it; `cause`:
/// 0, or the root cause when it failed). Its waiter list is closed before its record (kernel/deps.hpp
/// says why); every waiter whose last dependency this was becomes ready before the record is written:
/// an acquire-release atomic (a waiter's count, a hand-off) behind a store to host memory waits for that
/// store to cross the bus (on an H200, writing special_job's records last took its registration from
/// ~7 to ~6 us).
__device__ __noinline__ void complete_host(const LaunchParams& p, TaskRecord& rec, uint64_t ticket, uint32_t st,
                                           uint32_t detail, uint64_t cause) {
  const uint32_t head = deps::close_waiters(rec, ticket, cause);
  deps::for_each_waiter(p.dq, head, [&](uint32_t index, uint32_t j) {
    TaskRecord& w = p.dq[index];
    if (deps::dep_done(w, deps::inherited(w, j, cause))) hand_on(p, w);
  });
  host_record(p, ticket, st, detail);
}
/// All threads (after a barrier): hands out the sh.nready nodes in gs.ready_nodes, ready in this launch
/// and not armed. The first becomes the block's continuation when it has none; one more goes out alone
/// (hand_on); two or more go out as one ready batch on the board (the batch armed, its records not: each
/// taker runs its record as its continuation). `ticket`: the launch's.
__device__ void publish_ready(const LaunchParams& p, GraphScratch& gs, GraphExec& x, TaskRecord* recs,
                              uint64_t ticket) {
  BlockShared& sh = block_shared;
  const uint32_t n = sh.nready;
  const uint32_t k0 = n > 0 && sh.next == 0 ? 1u : 0u;
  const uint32_t m = n - k0;
  __syncthreads();  // every thread has read sh.next
  if (threadIdx.x == 0 && k0) {
    TaskRecord& r = recs[gs.ready_nodes[0]];
    r.ticket = ticket;
    sh.next = reinterpret_cast<uint64_t>(&r);
  }
  if (m == 1) {
    if (threadIdx.x == 0) {
      TaskRecord& r = recs[gs.ready_nodes[k0]];
      r.ticket = ticket;
      hand_on(p, r);
    }
  } else if (m > 1) {
    if (threadIdx.x == 0) {
      const uint64_t base = dev_ref<uint64_t>(x.run.items_used).fetch_add(m, cuda::memory_order_relaxed);
      const uint64_t b = dev_ref<uint64_t>(x.run.batches_used).fetch_add(1ull, cuda::memory_order_relaxed);
      sh.ready_items = x.shape.items + sizeof(uint64_t) * base;
      sh.ready_batch = x.shape.batches + sizeof(ReadyBatch) * b;
    }
    __syncthreads();
    uint64_t* items = reinterpret_cast<uint64_t*>(sh.ready_items);
    for (uint32_t i = threadIdx.x; i < m; i += blockDim.x) {
      TaskRecord& r = recs[gs.ready_nodes[k0 + i]];
      r.ticket = ticket;
      items[i] = reinterpret_cast<uint64_t>(&r);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      ReadyBatch& b = *reinterpret_cast<ReadyBatch*>(sh.ready_batch);
      b.items = sh.ready_items;
      // The items and every thread's tickets (ordered before this thread by the barrier) before the batch.
      cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
      dev_ref<uint64_t>(b.claim).store(make_claim(m, 0), cuda::memory_order_relaxed);
      hand_on_batch(p, b);
    }
  }
  __syncthreads();
}
/// Thread 0: the launch whose last node just completed is complete.
__device__ void launch_done(const LaunchParams& p, GraphExec& x) {
  TaskRecord& l = *reinterpret_cast<TaskRecord*>(dev_ref<uint64_t>(x.run.launch).load(cuda::memory_order_relaxed));
  const uint64_t c = dev_ref<uint64_t>(x.run.cause).load(cuda::memory_order_relaxed);
  const uint64_t t = *reinterpret_cast<const volatile uint64_t*>(&l.ticket);
  if (c == 0)
    complete_host(p, l, t, kTaskOk, blockIdx.x + 1, 0);
  else
    complete_host(p, l, t, kTaskNodeFailed | (static_cast<uint32_t>(c >> 32) << 8), static_cast<uint32_t>(c) - 1,
                  t + 1);
}

/// All threads: graph node `e` (loaded in sh) completed with `st` (or was skipped: sh.cause). Each
/// successor counts its arrival; those it completes become ready (marked to be skipped when this node
/// failed or was skipped). The last node without a successor completes the launch.
__device__ __noinline__ void node_done(const LaunchParams& p, TaskRecord& e, uint32_t st) {
  BlockShared& sh = block_shared;
  void* const smem = tile_smem;
  GraphScratch& gs = *static_cast<GraphScratch*>(smem);
  GraphExec& x = *reinterpret_cast<GraphExec*>(sh.exec);
  TaskRecord* const recs = &e - sh.node;
  const bool skipped = sh.cause != 0;
  const bool failed = !skipped && st != kTaskOk;
  const bool pass_on = skipped || failed;  // its successors do not run in this launch
  const uint32_t count = sh.succ_count;
  const uint64_t ticket = sh.ticket;
  if (threadIdx.x == 0) {
    // Cleared for the next launch, before this node's arrivals (which its successors' readiness follows).
    if (skipped) dev_ref<uint64_t>(e.cause).store(0ull, cuda::memory_order_relaxed);
    if (failed) {
      uint64_t none = 0;
      dev_ref<uint64_t>(x.run.cause).compare_exchange_strong(none, (static_cast<uint64_t>(st) << 32) | (sh.node + 1),
                                                             cuda::memory_order_relaxed);
    }
  }
  if (count == 1) {
    if (threadIdx.x == 0) {
      const uint32_t w = sh.succ_begin;
      TaskRecord& r = recs[w & kSuccNodeMask];
      if (pass_on) dev_ref<uint64_t>(r.cause).store(1ull, cuda::memory_order_relaxed);
      const uint32_t indeg = succ_indeg(x, w);
      if (indeg == 1 || deps::arrive(r.arrived, indeg)) {
        r.ticket = ticket;
        hand_on(p, r);
      }
    }
  } else if (count > 1) {
    const uint32_t* succ = reinterpret_cast<const uint32_t*>(x.shape.succ) + sh.succ_begin;
    for (uint32_t base = 0; base < count; base += kReadyRound) {
      if (threadIdx.x == 0) sh.nready = 0;
      __syncthreads();
      if (base + threadIdx.x < count) {
        const uint32_t w = succ[base + threadIdx.x];
        TaskRecord& r = recs[w & kSuccNodeMask];
        if (pass_on) dev_ref<uint64_t>(r.cause).store(1ull, cuda::memory_order_relaxed);
        const uint32_t indeg = succ_indeg(x, w);
        if (indeg == 1 || deps::arrive(r.arrived, indeg)) gs.ready_nodes[atomicAdd(&sh.nready, 1u)] = w & kSuccNodeMask;
      }
      __syncthreads();
      publish_ready(p, gs, x, recs, ticket);
    }
  } else if (threadIdx.x == 0) {
    // Every node precedes some node without a successor, so the last of those completes the launch.
    if (sink_done(x, sh.sinks)) launch_done(p, x);
  }
}

/// All threads: starts the graph launch in record `l` (loaded in sh). Its updates (node arguments, the
/// slots of aliases nodes name) are applied first, even when it does not run (a dependency failed), so
/// the instance always matches the host's view of it; then the roots become ready.
__device__ __noinline__ void graph_start(const LaunchParams& p, TaskRecord& l) {
  BlockShared& sh = block_shared;
  void* const smem = tile_smem;
  GraphScratch& gs = *static_cast<GraphScratch*>(smem);
  const GraphLaunchArgs& a = *reinterpret_cast<const GraphLaunchArgs*>(sh.payload.args);
  GraphExec& x = *reinterpret_cast<GraphExec*>(a.exec);
  const uint64_t ticket = sh.ticket;
  const uint64_t cause = cause_of(sh);
  if (threadIdx.x < sizeof(GraphShape) / 8)
    reinterpret_cast<uint64_t*>(&gs.shape)[threadIdx.x] = reinterpret_cast<const volatile uint64_t*>(&x.shape)[threadIdx.x];
  __syncthreads();
  const GraphShape& g = gs.shape;
  TaskRecord* const recs = reinterpret_cast<TaskRecord*>(g.recs);
  // Argument updates (mapped host memory: each thread reads whole deltas, six 16-byte reads in flight).
  const char* deltas = reinterpret_cast<const char*>(a.deltas);
  for (uint32_t i = threadIdx.x; i < a.ndeltas; i += blockDim.x) {
    uint4 v[sizeof(GraphDelta) / 16];
#pragma unroll
    for (uint32_t k = 0; k < sizeof(GraphDelta) / 16; ++k) v[k] = load_sys_v4(deltas + sizeof(GraphDelta) * i + 16 * k);
    const uint32_t node = v[0].x;
    if (node < g.nodes) {
      static_assert(offsetof(GraphDelta, args) == 8 && sizeof(GraphDelta) == 8 + GPUOS_MAX_ARG_BYTES);
      recs[node].payload.op = static_cast<uint16_t>(v[0].y);
      const uint64_t* src = reinterpret_cast<const uint64_t*>(v) + 1;
      uint64_t* dst = reinterpret_cast<uint64_t*>(recs[node].payload.args);
#pragma unroll
      for (uint32_t k = 0; k < GPUOS_MAX_ARG_BYTES / 8; ++k) dst[k] = src[k];
    }
  }
  if (cause != 0) {
    __syncthreads();
    if (threadIdx.x == 0) {
      cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);  // the updates
      complete_host(p, l, ticket, kTaskDepFailed, cause_detail(cause), cause);
    }
    __syncthreads();
    return;
  }
  // Placed, when the instance has a placement that fits the grid's workers and no other placed launch
  // runs (one at a time: the roles of two could hold every block between them, each waiting on the other's).
  if (threadIdx.x == 0) {
    uint32_t placed = g.roles != 0 && g.roles < gridDim.x;
    if (placed) {
      uint32_t none = 0;
      placed = dev_ref<uint32_t>(p.state->gang_busy).compare_exchange_strong(none, 1u, cuda::memory_order_acquire);
    }
    sh.valid = placed;
  }
  __syncthreads();
  if (sh.valid) {
    // Every node's scratch starts at 0 and its placed claim word holds its tiles (no tile of the instance
    // runs until the roles start, below).
    PlacedNode* const pnodes = reinterpret_cast<PlacedNode*>(g.pnodes);
    for (uint32_t v = threadIdx.x; v < g.nodes; v += blockDim.x) {
      recs[v].scratch = 0.0;
      pnodes[v].claim = make_claim(slot_tiles(*reinterpret_cast<const volatile uint32_t*>(&recs[v].payload.tiles)), ticket);
    }
    if (threadIdx.x == 0) {
      x.run.launch = reinterpret_cast<uint64_t>(&l);
      x.run.cause = 0;
      x.run.ticket = ticket;
      x.run.launches += 1;
      x.run.placed += 1;
      x.run.launcher_pos = sh.placed_pos;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      // The updates, the scratch and the launch's words (every thread's, ordered by the barrier) before
      // the gang's number, which worker blocks poll.
      DeviceState& s = *p.state;
      cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
      dev_ref<uint64_t>(s.gang_exec).store(reinterpret_cast<uint64_t>(&x), cuda::memory_order_relaxed);
      const uint64_t seq = dev_ref<uint64_t>(s.gang_seq).load(cuda::memory_order_relaxed);
      dev_ref<uint64_t>(s.gang_seq).store(seq + 1, cuda::memory_order_release);
    }
    __syncthreads();
    return;
  }
  if (threadIdx.x == 0) {
    x.run.launch = reinterpret_cast<uint64_t>(&l);
    x.run.cause = 0;
    x.run.items_used = 0;
    x.run.batches_used = 0;
    x.run.launches += 1;
  }
  __syncthreads();
  // Every thread arms roots below: each publishes what the block wrote above (ordered by the barrier).
  cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
  const uint32_t* roots = reinterpret_cast<const uint32_t*>(g.roots);
  for (uint32_t base = 0; base < g.nroots; base += kReadyRound) {
    const uint32_t n = g.nroots - base < kReadyRound ? g.nroots - base : kReadyRound;
    if (threadIdx.x == 0) sh.nready = n;
    if (threadIdx.x < n) gs.ready_nodes[threadIdx.x] = roots[base + threadIdx.x];
    __syncthreads();
    publish_ready(p, gs, x, recs, ticket);
  }
}

/// All threads, in the block that finished a task's last tile (or took one that does not run): its
/// finish function, the release of its writes, then what its completion sets off: a host ticket's record
/// and its waiters, or a graph node's successors.
__device__ void finish(const LaunchParams& p, TaskRecord& e, const TileCtx& c, const OpEntry* op, uint32_t st) {
  BlockShared& sh = block_shared;
  if (op && op->finish) {
    work_begin(sh, sh.ticket, sh.payload.op, kWorkFinish);
    op->finish(sh.payload.args, c);
    work_end(sh);
    __syncthreads();
  }
  if (threadIdx.x == 0) release_writes(op);
  if (sh.exec != 0) {
    node_done(p, e, st);
    return;
  }
  if (threadIdx.x == 0) {
    const uint64_t t = sh.ticket;
    const uint64_t cause = cause_of(sh);
    if (cause != 0)
      complete_host(p, e, t, kTaskDepFailed, cause_detail(cause), cause);
    else
      complete_host(p, e, t, st, st == kTaskOk ? blockIdx.x + 1 : sh.payload.op, st == kTaskOk ? 0ull : t + 1);
  }
}
/// Runs the record `e`: takes tiles of its task until none is left, and completes it if this block
/// finishes the last. `owned`: the block was handed `e` ready and unarmed (its continuation): nobody
/// else can take a tile of it until this block arms the claim word, which it does only for a task of
/// more than one tile, so a single tile runs with no atomic at all (`meta_loaded`: its payload and line 1
/// are in sh already). Otherwise tiles are claimed;
/// `board_slot_hint` is where the task is on the board (helpers), `may_insert` says whether this block
/// puts it there (whoever got the record rather than a board value). All threads call it.
///
/// What a block pays per task, not per tile, is what lets a large task stream at the memory's rate:
/// - The first claim is sized from the tiles left (the block that armed the task knows them; a record
///   from the ring or a chain reads the claim word, relaxed, a hint: taking more than is left is
///   harmless, the claim gets what there was; a helper from the board takes one): (tiles left) /
///   (spread x grid), at least 1, at most `max_batch` (kClaimSpread, kMaxBatch); every later one from
///   what the previous claim saw.
/// - The block that got the record puts a multi-tile task on the board before its own first claim, so
///   helpers join one claim's round trip sooner.
/// - Only the first claim needs acquire (it must see the payload the record was armed with). While this
///   block holds tiles it has not reported, the task cannot complete, so the record cannot be rearmed
///   and every later valid claim is for the same task: relaxed, no fence, no reload of the payload.
/// - With at least a grid's worth of tiles left after the first claim, one call of the operator's
///   claiming adapter (TileClaimFn) runs the block's whole share: it makes every later claim itself,
///   issuing each as the previous batch starts while a grid's worth is left (its round trip then hides
///   behind the tiles), after the batch once fewer are. With fewer tiles, a batch is one call of the
///   plain adapter (TileRangeFn) and the claim after it is the scheduler's, as for any task.
/// - `pending` is decremented once, when the block leaves the task, by every tile it ran: one release
///   fence and one atomic per block per task. The block that takes it to zero completes the task. A task
///   of one tile skips it: the block that ran the tile is the only one that can have.
///
/// Why one call per task: each call of an adapter saves and restores its registers through the stack
/// (~24 KB of traffic per block), and a claim made between batches stalls the whole block for its L2
/// round trip. With a call and a stall per batch, batches must be large (a share of the whole task), and
/// blocks, whose speeds differ by up to 1.5x on an H100, end up to ~120 us apart. On an H100 (add,
/// against the same tile function launched directly; docs/benchmarks.md, Large task): one call per batch
/// gives 0.90 at 64M and 0.93 at 256M, smaller batches with a call each 0.79 (rem / (4 x grid)), claims
/// inside one call, issued ahead, 0.94-0.96 at 64M and 0.99 at 256M.
__device__ void work_entry(const LaunchParams& p, TaskRecord& e, uint32_t board_slot_hint, bool may_insert,
                           uint64_t board_value, bool owned, bool meta_loaded = false) {
  BlockShared& sh = block_shared;
  void* const smem = tile_smem;
  DeviceState& s = *p.state;
  // Thread 0's bookkeeping (registers).
  bool inserted = false;
  uint32_t slot = board_slot_hint;
  uint32_t batch = 1;
  const uint32_t max_batch = max_batch_of(sh);
  const uint32_t spread = claim_spread_of(sh);
  const bool ahead_on = sh.claim_ahead_off == 0;
  uint32_t done = 0;  // tiles this block ran and has not reported in `pending`
  // Every thread's: the task's operator, validated once, and the tiles it runs as.
  const OpEntry* op = nullptr;
  uint32_t st = kTaskOk;
  uint32_t tiles = 0;
  bool loaded = false;
  if (owned) {
    if (!meta_loaded) {
      load_meta(sh, e);
      __syncthreads();
    }
    loaded = true;
    tiles = run_tiles(sh);
    if (threadIdx.x == 0) {
      e.pending = tiles;
      e.scratch = 0.0;
      if (tiles > 1) dev_ref<uint64_t>(e.claim).store(make_claim(tiles, sh.ticket), cuda::memory_order_release);
    }
  }
  const bool in_hand = owned && tiles == 1;  // the single tile is this block's: no claim
  if (threadIdx.x == 0 && !in_hand) {
    // The tiles left, to size the first claim and to decide the board insert: known to the block that
    // armed the word just now; read for a record from the ring or a chain (relaxed: a hint only, a stale
    // lap's word sizes the claim wrongly, nothing else); not read by a helper that found the task on the
    // board (it inserts nothing, and its first claim takes one tile: the later ones are sized from what
    // that claim saw), which saves that L2 round trip before the helper's first tile.
    const int32_t hint = owned        ? static_cast<int32_t>(tiles)
                         : may_insert ? claim_remaining(dev_ref<uint64_t>(e.claim).load(cuda::memory_order_relaxed))
                                      : 0;
    if (hint > 1 && may_insert) {
      const uint64_t v = reinterpret_cast<uint64_t>(&e);
      inserted = board_insert(p, v, slot);
      if (inserted) board_value = v;
    }
    batch = claim_batch(hint > 0 ? static_cast<uint32_t>(hint) / spread : 0u, max_batch);
  }
  for (bool first_claim = true;; first_claim = false) {
    if (threadIdx.x == 0) {
      if (in_hand) {
        sh.valid = 1;
        sh.tile = 0;
        sh.last = 1;
        sh.left = 0;
      } else {
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
    }
    __syncthreads();
    if (!sh.valid) break;
    // Volatile: read only once the claim is known valid (merged into one load with `valid`, `last` would
    // be read in every lane before thread 0 stores to it on the way out, a race for racecheck).
    const uint32_t top = *reinterpret_cast<volatile uint32_t*>(&sh.tile),
                   count = *reinterpret_cast<volatile uint32_t*>(&sh.last);
    if (first_claim) {
      if (!loaded) {
        // The payload and line 1 as armed (ordered after thread 0's acquire by the barrier; a helper's
        // board value may name an older lap of this record).
        load_meta(sh, e);
        __syncthreads();
        tiles = run_tiles(sh);
      }
      if (sh.payload.op == GPUOS_OP_GRAPH && sh.exec == 0) {
        // A graph launch (its one tile): its nodes run from here on; its ticket completes with the last.
        graph_start(p, e);
        return;
      }
      op = cause_of(sh) == 0 ? validate(sh, st) : nullptr;  // a task that does not run takes its tile only
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
        sh.claims = claims_on(&e.claim, batch, left, spread, max_batch);
    }
    __syncthreads();
    uint32_t ran = count;
    if (op) work_begin(sh, ticket, sh.payload.op, top);
    if (claims_in_call)
      ran = op->claim(sh.payload.args, sh.ctx, count, &sh.claims);
    else if (op)
      op->tile(sh.payload.args, sh.ctx, count);
    if (op) work_end(sh);
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
    if (done > 0 && tiles == 1) {
      sh.last = 1;  // its only tile
    } else if (done > 0) {
      // Release: this block's tile writes (ordered before thread 0 by the barriers) happen before the
      // decrement; acquire: the completing block sees every other block's.
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      sh.last = dev_ref<uint32_t>(e.pending).fetch_sub(done, cuda::memory_order_acq_rel) == done;
    }
  }
  __syncthreads();
  if (sh.last) finish(p, e, sh.ctx, op, st);
  __syncthreads();
}

/// All threads of a worker block: runs record `r`, ready, unarmed and the block's alone (a record one of
/// its completions handed it, or one it took from a ready batch), then the continuations that hands on,
/// while the block has nothing else to do: until none is left, the block's own ticket is published
/// (cs.have, cs.mine: `head`, read with each step's prefetch, has passed it) or its chain has waited
/// kMaxStreak continuations; the continuation left over is then offered to the board.
///
/// A chain's links run in run_links, without the scheduler's general path, which costs a chain step
/// ~8,000 cycles on an H100 (the worker loop's decision, the record's load, claim bookkeeping, a
/// device-scope fence, the successor's hand-off). Another graph node of one tile runs here and goes
/// through node_done (arrivals, batches), after the release of what the block's nodes wrote; anything
/// else (a node of many tiles, a graph launch, a host ticket, a node that fails or is skipped) goes
/// through work_entry.
__device__ void run_continuations(const LaunchParams& p, TaskRecord* r) {
  BlockShared& sh = block_shared;
  WorkerShared& cs = worker_shared;
  void* const smem = tile_smem;
  const unsigned tid = threadIdx.x;
  uint32_t run = 0;       // continuations run here after the first
  uint32_t b = 0;         // cs.rec[b]: the record being run
  bool fetched = false;   // cs.rec[b] holds r's words already (prefetched)
  if (tid == 0) cs.unreleased = GPUOS_OP_NO_WRITES;
  for (;;) {
    if (!fetched) {
      // A record handed on through the general path, which may have just written it (volatile reads).
      copy_record(cs.rec[b], *r);
      if (tid == 0) r->scratch = 0.0;
      __syncthreads();
    }
    const TaskRecord& m0 = cs.rec[b];
    if (m0.exec == 0 || m0.cause != 0 || slot_tiles(m0.payload.tiles) != 1) {
      load_meta(sh, m0);
      if (tid == 0) release_flags(cs.unreleased);  // before work_entry hands anything on
      __syncthreads();
      work_entry(p, *r, kBoardSize, true, 0, true, true);
      return;
    }
    uint32_t st = kTaskOk;
    bool ran = false;
    if (is_link(make_uint2(m0.succ_begin, m0.succ_count))) {
      if (tid == 0) {
        cs.link_r = r;
        cs.link_b = b;
        cs.link_run = run;
      }
      __syncthreads();
      run_links(p);
      r = cs.link_r;
      b = cs.link_b;
      run = cs.link_run;
      st = cs.link_st;
      ran = cs.link_ran != 0;
    }
    const TaskRecord& m = cs.rec[b];
    if (!ran) {
      // A node of one tile with other successors, or one sharing its successor: run, then node_done.
      if (tid == 0) copy_async16(&cs.head_post[b], &p.state->head);
      const OpEntry* op = validate(sh, m.payload, st);
      const TileCtx ctx{0u, 1u, m.ticket, smem, &r->scratch};
      if (op) {
        work_begin(sh, m.ticket, m.payload.op, 0u);
        op->tile(m.payload.args, ctx, 1u);
        work_end(sh);
      }
      wait_async();
      __syncthreads();  // the tile's writes, the read of head
      if (op && op->finish) {
        work_begin(sh, m.ticket, m.payload.op, kWorkFinish);
        op->finish(m.payload.args, ctx);
        work_end(sh);
        __syncthreads();
      }
      if (tid == 0) cs.unreleased = merge_writes(cs.unreleased, write_flags(op));
    }
    const bool yield = (cs.have && cs.mine < cs.head_post[b].x) || (sh.chain != 0 && run >= kMaxStreak);
    // The general path: node_done reads the node's words in sh, and this block's writes leave it.
    load_meta(sh, m);
    if (tid == 0) {
      release_flags(cs.unreleased);
      cs.unreleased = GPUOS_OP_NO_WRITES;
    }
    __syncthreads();
    node_done(p, *r, st);
    __syncthreads();
    // What node_done handed this block (a successor it completed, the first of several): on at once.
    if (tid == 0) {
      const bool on = sh.next != 0 && !yield;
      cs.handed = on ? sh.next : 0ull;
      if (yield && sh.next != 0) offer(p, *reinterpret_cast<TaskRecord*>(sh.next));
      sh.next = 0;
    }
    __syncthreads();
    if (cs.handed == 0) return;
    r = reinterpret_cast<TaskRecord*>(cs.handed);
    ++run;
    fetched = false;
  }
}

// ---- placed launches ---------------------------------------------------------------------------------
/// All threads of a worker block, once per kernel launch (after the grid barrier; `smem` free; out of
/// line: inlined into the worker, it takes the kernel's spill loads from 112 to 324 bytes on sm_90): the
/// block's place among the workers ordered by (its rank among the workers on its SM, the SM), so that
/// consecutive places are on different SMs, as far as SMs go: a placement's consecutive roles (a node's
/// chunks, the roles a list schedule fills first) then spread over the GPU whatever the order in which
/// the hardware handed blocks to SMs. Block order when the grid or an SM id exceeds the table.
__device__ __noinline__ uint32_t placed_position(const DeviceState& s) {
  void* const smem = tile_smem;
  constexpr uint32_t kSms = 256;
  uint32_t* hist = static_cast<uint32_t*>(smem);  // [kSms] workers per SM, then rank, place, bad
  const uint32_t n = gridDim.x, tid = threadIdx.x;
  if (n > kMaxBlockTable) return blockIdx.x - 1;
  for (uint32_t i = tid; i < kSms + 3; i += blockDim.x) hist[i] = 0;
  __syncthreads();
  const volatile uint16_t* sm = s.block_sm;
  const uint32_t me = sm[blockIdx.x];
  uint32_t rank = 0;
  for (uint32_t j = 1 + tid; j < n; j += blockDim.x) {
    const uint32_t v = sm[j];
    if (v >= kSms) {
      hist[kSms + 2] = 1;
      continue;
    }
    atomicAdd(&hist[v], 1u);
    rank += v == me && j < blockIdx.x;
  }
  if (rank) atomicAdd(&hist[kSms], rank);
  __syncthreads();
  rank = hist[kSms];
  for (uint32_t v = tid; v < kSms; v += blockDim.x) {
    const uint32_t c = hist[v];
    const uint32_t before = (c < rank ? c : rank) + (v < me && c > rank ? 1u : 0u);
    if (before) atomicAdd(&hist[kSms + 1], before);
  }
  __syncthreads();
  const uint32_t pos = hist[kSms + 2] || me >= kSms ? blockIdx.x - 1 : hist[kSms + 1];
  __syncthreads();
  return pos;
}

// ---- front end ---------------------------------------------------------------------------------------
inline constexpr uint64_t kStopPollEvery = 8;
/// Pacing steps (ns): up when the paced poll came back empty and the next one found the task, down when
/// the paced poll found it. Up / (up + down) is about how often the controller lets a poll miss.
inline constexpr uint32_t kPaceUp = 64;
inline constexpr uint32_t kPaceDown = 4;
inline constexpr uint32_t kLoadsPerThread = kMaxWindow * kSlotChunks / GPUOS_BLOCK_THREADS;
static_assert(kLoadsPerThread * GPUOS_BLOCK_THREADS == kMaxWindow * kSlotChunks);

/// What one poll found, for the whole front-end block (shared memory; front_end keeps three, so a poll
/// needs one barrier).
struct PollResult {
  uint32_t ready;       // index of the first slot that is not ready (~0u: all were)
  uint32_t control_at;  // index of the first control task (~0u: none)
  uint32_t stop;
  uint32_t tiles0;      // tiles of the first slot
  uint32_t w0;          // the first slot's chunk-0 word 0: op | arg_bytes << 16 | hints << 24
  uint32_t special;     // PollSpecial bits: the poll holds dependency slots / graph launches
  uint32_t taken;       // a poll with dependency slots: the slots special_job copied
};
enum PollSpecial : uint32_t { kPollDeps = 1, kPollGraph = 2, kPollDepsFirst = 4 /* slot 0 is a dependency slot */ };
__device__ __forceinline__ PollResult empty_poll() { return PollResult{~0u, ~0u, 0u, 0u, 0u, 0u, 0u}; }

/// The tiles the copy loop arms a slot with, from its chunk-0 words 0 (op | arg_bytes | hints) and 1
/// (tiles): a graph launch runs as one tile.
__device__ __forceinline__ uint32_t queue_tiles(uint32_t w0, uint32_t tiles) {
  return (w0 & 0xffffu) == GPUOS_OP_GRAPH ? 1u : slot_tiles(tiles);
}

/// Chunk 0 word 0 of a slot (op | arg_bytes << 16 | hints << 24) with the logical op replaced by its
/// alias slot.
__device__ __forceinline__ uint32_t resolve_op(uint32_t w0, const uint16_t* alias) {
  const uint32_t op = w0 & 0xffffu;
  return op < GPUOS_MAX_OPS ? (w0 & 0xffff0000u) | alias[op] : w0;
}

/// Applies the control task whose chunk 0 is `c0` and chunk 1's first word `kind` (ControlArgs::kind;
/// chunk words are op|arg_bytes|hints, tiles, args[0..3], stamp) and completes its ticket. Thread 0. A
/// control task is applied alone in its poll, so nothing can have registered on its ticket yet.
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
  host_record(p, ticket, st, st == kTaskOk ? 0u : GPUOS_OP_CONTROL);
  deps::close_unwatched(p.dq[ticket & ((1ull << p.log2_capacity) - 1)], ticket, st == kTaskOk ? 0ull : ticket + 1);
}


/// What register_task leaves to its caller: ticket x's completion status, and whether task x + 1 is
/// ready (every dependency already complete): the caller hands it on.
struct Registered {
  uint32_t status;
  bool ready;
};

/// One thread of special_job, once dependency slot `x` and its task x + 1 are copied (before `head`
/// passes them): registers the task on the tickets DepsArgs lists and completes ticket x (no task runs
/// for it; the caller writes its completion record). A malformed list (only a corrupt slot: the host
/// builds it) fails ticket x, and the task with x as the cause. The task is not armed: whoever makes it
/// ready hands it on (the caller, when nothing it waits for is still running), so the worker that holds
/// its ticket finds nothing to claim.
/// Its steps are L2 round trips in a row (an H200's flight recorder: ~6 us for one dependency with the
/// count's atomics, ~4 us with register_waits), so ticket x's list is closed with a plain store, not an
/// exchange: nobody can have registered on it, a registration on x comes in a later poll, handed on
/// after this one.
__device__ __noinline__ Registered register_task(const LaunchParams& p, uint64_t x) {
  const uint64_t mask = (1ull << p.log2_capacity) - 1;
  const uint64_t cap = mask + 1;
  const uint64_t t = x + 1;
  TaskRecord& rx = p.dq[x & mask];
  const volatile DepsArgs& da = *reinterpret_cast<const volatile DepsArgs*>(rx.payload.args);
  const uint32_t count = da.count;
  bool ok = count <= kMaxDeps && *reinterpret_cast<const volatile uint8_t*>(&rx.payload.arg_bytes) == sizeof(DepsArgs);
  uint32_t back[kMaxDeps];
  uint32_t weak = 0;
#pragma unroll
  for (uint32_t j = 0; j < kMaxDeps; ++j) {
    const uint32_t b = da.back[j];
    back[j] = b & ~kDepOrderOnly;
    if (j < count) {
      ok = ok && back[j] >= 1 && back[j] < cap;
      weak |= (b & kDepOrderOnly) ? 1u << j : 0u;
    }
  }
  const uint64_t bad = ok ? 0ull : x + 1;
  const uint32_t n = ok ? count : 0u;
  // No fence first: the block's copies (ordered before this thread by the barrier) go out with the first
  // link's compare-and-swap, a release (cumulative, as an arrival after a barrier); a task that takes
  // no link is handed on by this block, or armed with a release.
  const bool ready = deps::register_waits(p.dq, mask, t, n, [&](uint32_t j) { return t - back[j]; },
                                          ok ? da.failed_cause : bad, weak);
  deps::close_unwatched(rx, x, bad);
  return Registered{ok ? kTaskOk : kTaskBadArgs, ready};
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
/// before the completion record).
template <bool kTrace>
__device__ __noinline__ uint64_t run_lone(const LaunchParams& p, const uint16_t* alias, uint4 chunk, uint64_t head,
                                            uint64_t launch, unsigned long long t0, uint64_t* rec) {
  BlockShared& sh = block_shared;
  void* const smem = tile_smem;
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
    // The watchdog's record, before the barrier the tile waits for anyway; it goes idle after the
    // completion record. A lone task's ticket is its own, so its low bits tell two calls apart: no call
    // count (work_begin's shared-memory increment) on this path.
    if (tid == 0 && sh.work) work_busy(sh.work, head, 0u, static_cast<uint32_t>(head), w[0]);
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
  if (op && op->finish) {
    work_begin(sh, head, sh.payload.op, kWorkFinish);
    op->finish(sh.payload.args, ctx);
    __syncthreads();
  }
  if (tid == 0) {
    release_writes(op);
    host_record(p, ctx.ticket, st, st == kTaskOk ? blockIdx.x + 1 : sh.payload.op);
    if (sh.work) work_idle(sh.work, static_cast<uint32_t>(ctx.ticket));
  }
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
    // Mark the (never armed) entry for diagnostics: which ticket the front end ran itself, and close its
    // waiter list (nobody can have registered: a later ticket's registration comes after this poll).
    // After the completion record, so the record's fence does not wait for these stores. The ticket is
    // read back from ctx (in memory for the operator's call) rather than kept in a register across the
    // call: on an H100 build, each register this function keeps across it cost the front end's loop
    // spills around its call site.
    const uint64_t t = ctx.ticket;
    TaskRecord& e = p.dq[t & ((1ull << p.log2_capacity) - 1)];
    e.ticket = t;
    e.mark = 1u | static_cast<uint32_t>(launch << 1);
    deps::close_unwatched(e, t, st == kTaskOk ? 0ull : t + 1);
  }
  return steps;
}

/// Slots a poll with dependency slots takes at most: those whose chunks are every front-end thread's
/// first, which is all special_job is given of the window.
inline constexpr uint32_t kSpecialSlots = GPUOS_BLOCK_THREADS / kSlotChunks;

/// A worker block's shared memory while it runs special_job (the tiles' shared memory: no tile runs).
struct SpecialScratch {
  uint32_t deps;   // bit j: slot j is a dependency slot
  uint32_t cut;    // the slots end before this one (~0u: no cut)
  uint32_t ready;  // bit j: the task after dependency slot j is ready (every dependency complete)
};
static_assert(sizeof(SpecialScratch) <= GPUOS_TILE_SMEM_BYTES);

/// All threads of a worker block: copies the poll the front end posted (post number `post`; the front
/// end waits for it), a poll whose first slots hold dependency slots, into the device queue, arms what
/// goes out, and tells the front end how many slots that is. Its code in the front end's loop, inline or
/// called, cost the loop spilled registers in every poll (an H100 build); here it costs a poll with
/// dependency slots one hand-off to an idle worker and back.
/// - A dependency slot goes with its task (the slot after it), never last.
/// - The slots end before any ticket d + capacity, whose record the registration of a task of this poll
///   still reads as ticket d's (one of its dependencies, less than a capacity back: the host sees to it).
/// - A dependency slot and a task that waits for others stay unarmed (their claim word is a former
///   ticket's, exhausted, as every record's is once its task completed); the task is registered before
///   `head` passes it, so its worker finds it armed, or whoever completes its last dependency makes it
///   ready.
/// The alias table in DeviceState is the one this poll's tickets see: the front end applies control
/// tasks alone, in their turn, and waits here.
__device__ void special_job(const LaunchParams& p, uint64_t post) {
  void* const smem = tile_smem;
  DeviceState& s = *p.state;
  SpecialScratch& ss = *static_cast<SpecialScratch*>(smem);
  const uint64_t mask = (1ull << p.log2_capacity) - 1;
  const uint32_t cap = 1u << p.log2_capacity;
  const uint64_t hr = *reinterpret_cast<const volatile uint64_t*>(&s.special_poll);
  const uint64_t head = hr >> 8;
  const uint32_t ready = static_cast<uint32_t>(hr & 0xffu);
  const Chunk ch = const_cast<const Chunk&>(*reinterpret_cast<const volatile Chunk*>(&s.special_chunks[threadIdx.x]));
  const uint32_t j = threadIdx.x / kSlotChunks, c = threadIdx.x % kSlotChunks;
  uint32_t x[3] = {ch.w[0], ch.w[1], ch.w[2]};
  // The slot's chunk-0 words 0 and 1 (op | arg_bytes | hints, tiles), from its chunk-0 lane.
  const uint32_t w0 = __shfl_sync(0xffffffffu, x[0], (threadIdx.x & 31) & ~(kSlotChunks - 1));
  const uint32_t w1 = __shfl_sync(0xffffffffu, x[1], (threadIdx.x & 31) & ~(kSlotChunks - 1));
  if (threadIdx.x == 0) {
    ss.deps = 0;
    ss.cut = ~0u;
    ss.ready = 0;
  }
  __syncthreads();
  if (j < ready && c == 0 && (w0 & 0xffffu) == GPUOS_OP_DEPS) atomicOr(&ss.deps, 1u << j);
  __syncthreads();
  const uint32_t deps = ss.deps;
  if (j + 1 < ready && c >= 2 && ((deps >> j) & 1u)) {
#pragma unroll
    for (uint32_t i = 0; i < 3; ++i) {
      // Words 6..21 of a dependency slot are DepsArgs::back (0 past its count): task j + 1 waits for ticket
      // head + j + 1 - back, whose record ticket (that + cap) reuses.
      const uint32_t word = 3 * c + i, back = x[i] & ~kDepOrderOnly;
      if (word >= 6 && word < 6 + kMaxDeps && back >= 1 && back < cap && j + 1 + cap - back < ready)
        atomicMin(&ss.cut, j + 1 + cap - back);
    }
  }
  __syncthreads();
  uint32_t r = ready < ss.cut ? ready : ss.cut;
  if (r > 0 && ((deps >> (r - 1)) & 1u)) --r;
  const uint64_t t = head + j;
  TaskRecord& e = p.dq[t & mask];
  const bool parked = (w0 & 0xffffu) == GPUOS_OP_DEPS || ((w0 >> 24) & kHintDeps);
  if (j < r) {
    if (c == 0) x[0] = resolve_op(x[0], s.alias);
    auto* w = reinterpret_cast<uint32_t*>(&e.payload) + 3 * c;
    w[0] = x[0];
    w[1] = x[1];
    w[2] = x[2];
    if (c == 0) {
      e.ticket = t;
      e.mark = static_cast<uint32_t>(s.launches << 1);
      e.pending = queue_tiles(w0, w1);
      e.scratch = 0.0;
    }
  }
  __syncthreads();
  if (j < r && c == 0 && !parked) {
    // The block's copies (ordered before this thread by the barrier), then the claim word.
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
    dev_ref<uint64_t>(e.claim).store(make_claim(queue_tiles(w0, w1), t), cuda::memory_order_relaxed);
  }
  __syncthreads();
  uint32_t deps_st = ~0u;  // a dependency slot's completion status, written after the hand-over
  if (j < r && c == 0 && ((deps >> j) & 1u)) {
    const Registered g = register_task(p, t);
    deps_st = g.status;
    if (g.ready) atomicOr(&ss.ready, 1u << j);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
    dev_ref<uint64_t>(s.special_done).store((post << 8) | r, cuda::memory_order_relaxed);
    // Tasks ready at once: this block runs the first next (its continuation, unarmed), the others go
    // out armed (hand_on). Their tickets' own workers find nothing to claim.
    for (uint32_t m = ss.ready; m != 0; m &= m - 1) hand_on(p, p.dq[(head + __ffs(m)) & mask]);
  }
  // The dependency slots' own completion records last: a release behind a store to host memory waits
  // for it to cross the bus (the one above would, with the front end waiting).
  if (deps_st != ~0u) host_record(p, t, deps_st, deps_st == kTaskOk ? 0u : GPUOS_OP_DEPS);
  __syncthreads();  // the tiles' shared memory is free again
}

/// The front end's loop. kTrace: the flight recorder is on (DeviceState::trace); the loop without it is
/// its own copy, so the recorder's clocks and stores take no registers from the loop that serves.
template <bool kTrace>
__device__ void front_end(const LaunchParams& p) {
  BlockShared& sh = block_shared;
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
  // buffer, two polls back, have all passed the previous poll's barrier), and the others' atomics
  // into it come after this barrier.
  __shared__ PollResult polls[3];
  for (uint32_t i = tid; i < GPUOS_MAX_OPS; i += GPUOS_BLOCK_THREADS) alias[i] = s.alias[i];
  if (tid == 0) sh.local_scratch = 0.0;  // run_lone's scratch (it leaves it 0 for the next)
  if (tid < 3) polls[tid] = empty_poll();
  // Pacing state, thread 0's (in shared memory: the loop's registers are spoken for). after_lone: 1 = the
  // last poll ran a lone task and the next poll is paced; 2 = that paced poll came back empty.
  struct Pacing {
    unsigned long long lone_end;  // when the lone task's completion record went out
    uint32_t pace, after_lone, limit;
  };
  // Thread 0's alone. Volatile so that the compiler does not load it in the other lanes ahead of the
  // thread test (their loads would be unused, but race with thread 0's stores for racecheck).
  __shared__ Pacing pacing_words;
  volatile Pacing& pacing = pacing_words;
  if (tid == 0) {
    pacing.lone_end = 0ull;
    pacing.pace = 0u;
    pacing.after_lone = 0u;
    pacing.limit = s.pace_limit_ns;
  }
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
      if (ci < nchunks && v[k].w != stamp_of(head + ci / kSlotChunks, p.log2_capacity)) {
        atomicMin(&pr.ready, ci / kSlotChunks);
      } else if (ci < nchunks && ci % kSlotChunks == 0 && (v[k].x & 0xffffu) >= GPUOS_OP_GRAPH) {
        // Not an operator: a control task, a dependency slot or a graph launch.
        const uint32_t op = v[k].x & 0xffffu;
        if (op == GPUOS_OP_CONTROL)
          atomicMin(&pr.control_at, ci / kSlotChunks);
        else
          atomicOr(&pr.special, op != GPUOS_OP_DEPS ? kPollGraph : ci == 0 ? kPollDeps | kPollDepsFirst : kPollDeps);
      }
    }
    if (tid == 0) {
      pr.stop = stop_run == p.run_id || stop_run == kAbortRun;
      pr.tiles0 = v[0].y;  // chunk 0 of slot 0: op|arg_bytes|hints, tiles, args[0..3]
      pr.w0 = v[0].x;
      polls[(iter + 1) % 3] = empty_poll();  // the next poll's
      if (trace) t_return = global_ns();  // after thread 0's reads returned (its stamp was compared)
    }
    __syncthreads();
    // Every chunk of the poll is in (the recorder's word 8 of this poll's record, read back by run_lone).
    if (tid == 0 && trace) trace_record(trace, trace_pos)[8] = global_ns();
    uint32_t ready = pr.ready < window ? pr.ready : window;
    const uint32_t ctl = pr.control_at, tiles0 = pr.tiles0, special = pr.special;
    const bool more0 = (pr.w0 >> 24) & kHintMore;
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
    // A lone operator task: not a graph launch, nor a poll with dependency slots (a task that waits for
    // others always shares its poll with its dependency slot).
    const bool lone = ready == 1 && tiles0 == 1 && !control && special == 0;

    if (tid == 0 && (iter & 63) == 0) {
      store_sys_u64(&p.control->heartbeat, iter + 1);
      store_sys_u64(&p.control->fetched, head);
    }
    if (ready == 0) {
      window = 1;
      continue;
    }
    if (ready == 1 && (special & kPollDepsFirst)) {
      // A dependency slot alone: its task is the next slot (published with it, so both are there now).
      // Read both in the next poll rather than hand this one to a worker that could copy nothing.
      window = 2;
      continue;
    }

    if (control) {
      const uint32_t kind = __shfl_sync(0xffffffffu, v[0].x, 1);  // chunk 1 of slot 0 is thread 1's
      if (tid == 0) apply_control(p, alias, v[0], kind, head);
      __syncthreads();
    } else if (lone) {
      uint64_t* rec = trace ? trace_record(trace, trace_pos) : nullptr;  // this poll's record
      if (tid == 0 && rec) {
        rec[9] = global_ns();  // run_lone called
      }
      lone_steps = run_lone<kTrace>(p, alias, v[0], head, launch, trace ? t_return : 0ull, rec);
      if (tid == 0) {
        pacing.lone_end = global_ns();
        pacing.after_lone = pacing.limit != 0 && next_window(window, ready, more0) == 1 ? 1u : 0u;
      }
    } else if (special & kPollDeps) {
      // Dependency slots: an idle worker copies the poll (special_job) while this block waits.
      s.special_chunks[tid] = reinterpret_cast<const Chunk&>(v[0]);
      __syncthreads();
      if (tid == 0) {
        const uint64_t post = dev_ref<uint64_t>(s.special_post).load(cuda::memory_order_relaxed) + 1;
        dev_ref<uint64_t>(s.special_poll)
            .store((head << 8) | (ready < kSpecialSlots ? ready : kSpecialSlots), cuda::memory_order_relaxed);
        cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device);
        dev_ref<uint64_t>(s.special_post).store(post, cuda::memory_order_relaxed);
        uint64_t done;
        for (uint32_t spins = 1;
             ((done = dev_ref<uint64_t>(s.special_done).load(cuda::memory_order_relaxed)) >> 8) != post; ++spins) {
          // Every worker may be held by an operator the watchdog gave up on: the abort is seen here too.
          if ((spins & 4095u) == 0 && load_sys_u64(&p.control->stop_run) == kAbortRun) abort_kernel();
        }
        cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
        pr.taken = static_cast<uint32_t>(done & 0xffu);
      }
      __syncthreads();
      ready = pr.taken;
      if (ready == 0) {
        // The poll's ready slots ended with a dependency slot's (cut there), whose task is the next slot.
        window = 2;
        continue;
      }
    } else {
      // Copy the ready slots into the device queue, arm each entry, then publish them all.
#pragma unroll
      for (uint32_t k = 0; k < kLoadsPerThread; ++k) {
        const uint32_t ci = tid + k * GPUOS_BLOCK_THREADS;
        if (ci < ready * kSlotChunks) {
          const uint64_t t = head + ci / kSlotChunks;
          TaskRecord& e = p.dq[t & mask];
          auto* w = reinterpret_cast<uint32_t*>(&e.payload) + 3 * (ci % kSlotChunks);
          w[0] = ci % kSlotChunks == 0 ? resolve_op(v[k].x, alias) : v[k].x;
          w[1] = v[k].y;
          w[2] = v[k].z;
          if (ci % kSlotChunks == 0) {
            const uint32_t tiles = slot_tiles(v[k].y);
            e.ticket = t;
            e.mark = static_cast<uint32_t>(launch << 1);
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
    if (load_sys_u64(&p.control->stop_run) == kAbortRun) abort_kernel();
    store_sys_u64(&p.control->fetched, head);
    store_sys_u64(&p.control->stop_seen_run, p.run_id);  // diagnostics: when a stop reached the device
    s.exit_head = head;
    s.trace_pos = trace_pos;
    store_release(s.closed, 1u);
  }
}

/// Thread 0 of a worker block that sees placed launch number `gang` for the first time: its instance
/// when this block has a role in it, else 0. Out of line: it runs once per launch.
__device__ __noinline__ uint64_t gang_to_join(const DeviceState& s, uint64_t gang) {
  BlockShared& sh = block_shared;
  WorkerShared& cs = worker_shared;
  // Acquire (pairs with graph_start's release of gang_seq): the instance and the launch's words as it
  // wrote them.
  cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
  cs.gang_seen = gang;
  const uint64_t exec = dev_ref<const uint64_t>(s.gang_exec).load(cuda::memory_order_relaxed);
  const volatile GraphExec& gx = *reinterpret_cast<const volatile GraphExec*>(exec);
  return role_of(sh.placed_pos, gx.run.launcher_pos) < gx.shape.roles ? exec : 0ull;
}

// ---- workers -----------------------------------------------------------------------------------------
/// A worker block's loop. Thread 0 decides, in this order: the block's continuation (a record one of its
/// completions made ready; kMaxStreak in a row at most, then it is offered to the board), a poll the
/// front end waits on (special_job), its own ticket once `head` has passed it, its chain, then tiles or
/// records on the board; otherwise it backs off. It
/// leaves once the front end has closed, every published ticket has completed and its own ticket was
/// never published.
/// `gang0`: DeviceState::gang_seq as thread 0 read it before the launch's grid barrier (no placed launch
/// runs across a relaunch: the kernel exits once every published ticket completed, and none starts
/// before the barrier).
__device__ void worker(const LaunchParams& p, uint64_t gang0) {
  BlockShared& sh = block_shared;
  DeviceState& s = *p.state;
  const uint64_t mask = (1ull << p.log2_capacity) - 1;
  uint32_t backoff = 0;
  WorkerShared& cs = worker_shared;
  const uint32_t pos = placed_position(s);
  if (threadIdx.x == 0) {
    sh.placed_pos = pos;
    sh.next = sh.chain = 0;
    cs.mine = cs.tried_post = 0;
    cs.have = cs.streak = 0;
    cs.gang_seen = gang0;
  }
  for (;;) {
    if (threadIdx.x < 32) {
      uint32_t action = kIdle;
      uint64_t target = 0;
      uint32_t help_slot = kBoardSize;
      if (threadIdx.x == 0) {
        if (sh.next != 0 && cs.streak < kMaxStreak) {
          action = kRunNext;
        } else {
          if (sh.next != 0) {
            // A long run of continuations: offer this one to others, so the block's own ticket and
            // chain are not starved.
            offer(p, *reinterpret_cast<TaskRecord*>(sh.next));
            sh.next = 0;
          }
          cs.streak = 0;
          if (!cs.have) {
            cs.mine = dev_ref<uint64_t>(s.claim).fetch_add(1ull, cuda::memory_order_relaxed);
            cs.have = 1;
          }
          const uint64_t mine = cs.mine;
          // Relaxed polls, one acquire fence once there is something to act on: an acquire load at
          // device scope invalidates the whole L1 of the SM (CCTL.IVALL in the SASS), and idle workers
          // poll every microsecond, on every SM, the front end's included. (It keeps the SMs' L1 valid;
          // the lone task's path takes the same time with acquire polls on an H100.)
          // `head` and `special_post` in one read: one L2 request per idle poll.
          static_assert(offsetof(DeviceState, special_post) == offsetof(DeviceState, head) + 8 &&
                        offsetof(DeviceState, head) % 16 == 0);
          const ulonglong2 hp = load_relaxed_v2(&s.head);
          const uint64_t h = hp.x, post = hp.y;
          // A placed launch this block has not looked at yet (the same line: both reads in flight at once).
          static_assert(offsetof(DeviceState, gang_seq) / 128 == offsetof(DeviceState, head) / 128 &&
                        offsetof(DeviceState, gang_seq) % 16 == 0);
          // With the watchdog's abort word beside it: one 16-byte read.
          const ulonglong2 ga = load_relaxed_v2(&s.gang_seq);
          const uint64_t gang = ga.x;
          // A poll the front end waits on (special_job): first come, first served. Each block tries a
          // post once (the front end posts the next only after this one is done, so the post a block
          // missed is another's).
          uint64_t expect = post - 1;
          const bool fresh = post != cs.tried_post;
          cs.tried_post = post;
          if (ga.y == kAbortRun) {
            action = kAbort;
          } else if (fresh &&
              dev_ref<uint64_t>(s.special_taken).compare_exchange_strong(expect, post, cuda::memory_order_acq_rel)) {
            action = kSpecial;
            target = post;
          } else if (gang != cs.gang_seen && (target = gang_to_join(s, gang)) != 0) {
            action = kGang;
          } else if (mine < h) {
            action = kRunOwn;
          } else if (sh.chain != 0) {
            action = kRunChain;
          } else if (dev_ref<uint32_t>(s.closed).load(cuda::memory_order_relaxed)) {
            // The front end's last store to head happened before closed: re-read it after the fence.
            cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
            const uint64_t h2 = dev_ref<uint64_t>(s.head).load(cuda::memory_order_relaxed);
            if (mine < h2)
              action = kRunOwn;
            else if (dev_ref<uint64_t>(s.completed).load(cuda::memory_order_relaxed) >= h2)
              action = kExit;  // every published ticket completed: nothing can become ready any more
          }
          // Acquire (pairs with the front end's release of head): the entry's claim word read next is the
          // one the front end armed, not its previous lap's.
          if (action == kRunOwn) cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
        }
      }
      action = __shfl_sync(0xffffffffu, action, 0);
      if (action == kIdle) {
        // Look for a task with tiles left or a batch of ready records; start at a block-specific slot to
        // spread helpers.
        const uint32_t lane = threadIdx.x;
        const uint32_t base = blockIdx.x % kBoardSize;
        const uint32_t i0 = (base + lane) % kBoardSize, i1 = (base + lane + 32) % kBoardSize;
        const uint64_t b0 = dev_ref<uint64_t>(s.board[i0]).load(cuda::memory_order_relaxed);
        const uint64_t b1 = dev_ref<uint64_t>(s.board[i1]).load(cuda::memory_order_relaxed);
        const uint32_t m0 = __ballot_sync(0xffffffffu, b0 != 0), m1 = __ballot_sync(0xffffffffu, b1 != 0);
        if (m0 | m1) {
          const int src = m0 ? __ffs(m0) - 1 : __ffs(m1) - 1;
          target = __shfl_sync(0xffffffffu, m0 ? b0 : b1, src);
          help_slot = m0 ? (base + src) % kBoardSize : (base + src + 32) % kBoardSize;
          action = kHelp;
        }
      }
      if (threadIdx.x == 0) {
        if (action == kRunNext) {
          target = sh.next;
          sh.next = 0;
          ++cs.streak;
        } else if (action == kRunChain) {
          target = sh.chain;
          sh.chain = reinterpret_cast<const volatile TaskRecord*>(target)->next_ready;
        } else if (action == kRunOwn) {
          target = reinterpret_cast<uint64_t>(&p.dq[cs.mine & mask]);
        } else if (action == kSpecial) {
          // Acquire (pairs with the front end's release of special_post): its chunks as posted.
          cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
        } else if (action == kHelp && (target & 1ull)) {
          // A ready batch: take one record of it, unarmed, which this block then runs as its continuation.
          target = take_from_batch(p, target, help_slot);
          action = target ? kRunTaken : kIdle;
        }
        sh.action = action;
        sh.ticket = target;
        sh.board_slot = help_slot;
      }
    }
    __syncthreads();
    const uint32_t action = sh.action;
    const uint64_t target = sh.ticket;
    const uint32_t bslot = sh.board_slot;
    __syncthreads();
    if (action == kExit) return;
    if (action == kAbort) abort_kernel();
    TaskRecord& r = *reinterpret_cast<TaskRecord*>(target);
    if (action == kSpecial) {
      backoff = 0;
      special_job(p, target);
    } else if (action == kGang) {
      backoff = 0;
      run_role(p, *reinterpret_cast<GraphExec*>(target));
    } else if (action == kRunNext || action == kRunTaken) {
      backoff = 0;
      run_continuations(p, &r);
    } else if (action == kRunOwn || action == kRunChain) {
      backoff = 0;
      work_entry(p, r, kBoardSize, true, 0, false);
      if (action == kRunOwn && threadIdx.x == 0) cs.have = 0;
    } else if (action == kHelp) {
      backoff = 0;
      work_entry(p, r, bslot, false, target, false);
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
  BlockShared& sh = block_shared;
  gpuos::abi::DeviceState& s = *p.state;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    // A fresh run: every published task of the last run was finished before it exited, so claims
    // restart at head; the board may hold stale (exhausted) entries.
    s.claim = s.head;
    s.closed = 0;
    s.exited = 0;
    s.launches += 1;
    s.start_head = s.head;
    s.gang_busy = 0;
    for (uint32_t i = 0; i < gpuos::abi::kBoardSize; ++i) s.board[i] = 0;
    gpuos_heap_of_launch = static_cast<gpuos::tlsf::Control*>(p.heap);
    __threadfence();
  }
  cache_op_table(sh);
  uint64_t gang0 = 0;
  if (threadIdx.x == 0) {
    gang0 = *reinterpret_cast<const volatile uint64_t*>(&s.gang_seq);
    if (blockIdx.x < gpuos::abi::kMaxBlockTable) {
      uint32_t smid;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
      s.block_sm[blockIdx.x] = static_cast<uint16_t>(smid < 0xffffu ? smid : 0xffffu);
    }
    sh.max_batch = s.max_batch;
    sh.work = blockIdx.x < gpuos::abi::kMaxBlockTable ? &s.work[blockIdx.x] : nullptr;
    sh.work_calls = 0;
    sh.claim_spread = s.claim_spread;
    sh.claim_ahead_off = s.claim_ahead_off;
    await_reset();
  }
  cooperative_groups::this_grid().sync();
  if (blockIdx.x == 0) {
    if (threadIdx.x == 0) {
      store_sys_u64(&p.control->abi_version, GPUOS_ABI_VERSION);
      __threadfence_system();
      store_sys_u64(&p.control->started_run, p.run_id);
    }
    if (s.trace)
      front_end<true>(p);
    else
      front_end<false>(p);
  } else {
    worker(p, gang0);
  }
  // Diagnostics: the last block out says so in mapped memory, so the host can tell the kernel's own
  // drain from the driver's work after it (ResidentKernel's StopTiming, GPUOS_SWITCH_TRACE).
  if (threadIdx.x == 0 &&
      dev_ref<uint32_t>(s.exited).fetch_add(1u, cuda::memory_order_acq_rel) == gridDim.x - 1)
    store_sys_u64(&p.control->drained_run, p.run_id);
}
