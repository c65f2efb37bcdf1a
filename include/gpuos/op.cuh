// gpuos operator ABI: how an operator is written. Compiled by nvcc (built-ins) and NVRTC (operators
// loaded at run time) alike; includes nothing from the host standard library.
//
// An operator is a name, a trivially-copyable argument struct (at most GPUOS_MAX_ARG_BYTES) and a tile
// function. A task of the operator has `tiles` tiles; each tile runs on one block of GPUOS_BLOCK_THREADS
// threads of the resident kernel, and different tiles run concurrently on different blocks.
//
//   struct ScaleArgs { float* x; unsigned long long n; float k; };
//   __device__ void scale_tile(const ScaleArgs& a, const gpuos::TileCtx& c) {
//     for (auto i = c.first(GPUOS_ELEMS_PER_TILE) + threadIdx.x; i < c.last(GPUOS_ELEMS_PER_TILE, a.n);
//          i += blockDim.x) a.x[i] *= a.k;
//   }
//   GPUOS_OPERATOR(scale, ScaleArgs, scale_tile)
//
// An operator whose tiles stream one after another through the same block (a projection's weight rows,
// say) may instead give a range function, which runs a run of consecutive tiles in one call, so that
// it can ask for the next tile's data while it finishes the one before (GPUOS_OPERATOR_RANGES):
//
//   __device__ void scale_range(const ScaleArgs& a, const gpuos::TileCtx& c, unsigned count);
//   // runs tiles c.tile - count + 1 .. c.tile (count >= 1), in any order; c.smem free when it starts
//
// A tile function may use threadIdx/blockDim (blockDim.x == GPUOS_BLOCK_THREADS), __syncthreads() (all
// threads of the block enter the tile function together), ctx.smem, and ctx.scratch. It must not
// return before the other threads of its block when it uses __syncthreads, and must not wait on other
// tiles (tiles of one task run in any order, possibly on one block, one after another with a barrier
// between them, so ctx.smem is free again when a tile starts). An optional finish function runs
// once, on one block, after every tile of the task has finished (GPUOS_OPERATOR_WITH_FINISH).
// The signature is checked at compile time: a wrong one is an error that names the operator.
#ifndef GPUOS_OP_CUH
#define GPUOS_OP_CUH

#include "gpuos/limits.h"
#include "gpuos/op_entry.h"

#include <cuda/std/type_traits>

namespace gpuos {

/// What a tile knows about itself. Passed by const reference; lives in the block's shared memory.
struct TileCtx {
  unsigned int tile;   ///< this tile, 0..tiles-1
  unsigned int tiles;  ///< tiles of the task
  unsigned long long ticket;  ///< the task's ticket
  void* smem;                 ///< GPUOS_TILE_SMEM_BYTES of shared memory for this tile
  double* scratch;            ///< one per-task float64 word, zero when the task starts (atomics OK)
  /// First element of this tile when each tile covers `per_tile` elements.
  __device__ unsigned long long first(unsigned long long per_tile) const {
    return static_cast<unsigned long long>(tile) * per_tile;
  }
  /// One past the last element of this tile, clamped to n.
  __device__ unsigned long long last(unsigned long long per_tile, unsigned long long n) const {
    unsigned long long e = first(per_tile) + per_tile;
    return e < n ? e : n;
  }
};

/// How an operator's adapter goes on claiming tiles of a large task once the batch it was called with is
/// done (the scheduler's: it lives in the block's shared memory; operators never touch it).
struct TileClaims {
  unsigned long long* word;  ///< the task's claim word: (tiles not yet claimed, signed) << 32 | ticket
  unsigned long long slot;   ///< thread 0 hands a claim's result to the block through this
  unsigned int take;         ///< tiles the next claim asks for
  unsigned int left;         ///< tiles the block's last claim left unclaimed
  unsigned int spread_inv;   ///< later claims ask for (tiles left) / d, d = the spread x the grid, as
                             ///< __umulhi(tiles left, spread_inv), spread_inv = ceil(2^32 / d) ...
  unsigned int max;          ///< ... at most max, at least 1
};

// The jump-table signatures (gpuos/op_entry.h). TileRangeFn runs `count` tiles of the task on the calling
// block, ctx.tile, ctx.tile - 1, ..., ctx.tile - count + 1: one call of the operator's tile function per
// tile with a barrier between consecutive tiles, or one call of its range function for them all. The
// loop is compiled inside each operator's adapter (GPUOS_OPERATOR), so a block that claimed a batch of
// tiles pays one call, one save and one restore of the callee's registers, per batch (per tile, that
// stack traffic costs ~20% of a large element-wise task's bandwidth on an H100, docs/benchmarks.md, Large
// task). The scheduler calls it for a task's only tile and for a batch it claimed alone: it touches no
// stack beyond what the operator's own code needs (a nop's adapter none).
// TileClaimFn, for a large task: runs `count` (>= 1) tiles as TileRangeFn does, then claims and runs more
// of the task's tiles as `claims` says until none is left (detail::run_claimed), and returns the number
// of tiles it ran (the same in every thread). A block pays one call per task, however many claims it
// makes (one call per claimed batch costs 4-10% of a large add's bandwidth on an H100 and pushes the
// batches to be large and the blocks' ends uneven, docs/benchmarks.md, Large task).

}  // namespace gpuos

// ---- the device heap --------------------------------------------------------------------------------
// Defined by the resident kernel's image (kernel/heap_ops.cuh), so an operator compiled later with NVRTC
// and linked into the same image with nvJitLink reaches them too. Use gpuos::dev::malloc / free.
extern "C" __device__ void* gpuos_dev_malloc(unsigned long long bytes, unsigned long long align);
extern "C" __device__ unsigned int gpuos_dev_free(void* p);

// ---- inputs awaited by the operator (GPUOS_OP_AWAITS_INPUTS) ------------------------------------------
// Defined by the resident kernel's image, as the heap's functions are.
extern "C" __device__ unsigned int gpuos_await_inputs();

namespace gpuos {

/// The block's stage memory: gpuos_options.stage_bytes of shared memory (16-byte aligned) that only
/// operators use, beside ctx.smem. It is the operator's for the whole of each call of its tile or range
/// function; what it holds when a call starts is undefined, and asynchronous copies into it must have
/// landed when the call returns. For data an operator streams through the block, such as weights copied
/// in (cp.async) several rounds before they are used: the copies of a range function's first rounds may
/// start before it awaits its inputs. A runtime compiles its operators with GPUOS_STAGE_BYTES defined to
/// its stage_bytes, so that an operator that needs more can refuse to compile (a static_assert) and the
/// version before keeps serving.
struct Stage {
  void* base;
  unsigned int bytes;  ///< 0 when the runtime was booted without stage memory
};
__device__ inline Stage stage() {
  extern __shared__ __align__(16) unsigned char gpuos_stage_memory[];
  unsigned int bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return Stage{gpuos_stage_memory, bytes};
}

/// For an operator declared with GPUOS_OP_AWAITS_INPUTS: returns once the task's inputs are complete
/// (the results of the tasks it depends on are visible to the whole block), true when the task is to
/// run, false when one of those tasks failed or did not run: the tile must then return without writing
/// anything. Every thread of the block calls it, once per tile, before reading anything another task
/// writes; what it may do before (load constant data such as weights, compute addresses) overlaps the
/// wait. Where nothing is left to wait for (a plain task, whose dependencies were resolved before it
/// was dispatched), it returns true at once.
__device__ inline bool await_inputs() { return gpuos_await_inputs() != 0u; }

}  // namespace gpuos

namespace gpuos::dev {

/// Allocates `bytes` from the runtime's heap (gpuos_options.heap_bytes), aligned to `align` (a power of
/// two; up to 16 costs nothing extra). Returns nullptr when the heap cannot serve it, when `align` is not
/// a power of two (both counted in the heap's stats) and when the runtime has no heap; it never waits
/// for memory. Any thread of any tile may call it; calls of one warp are served together (one lock
/// acquisition for the warp's requests of alignment <= 16). bytes == 0 returns a unique block.
/// The block outlives the task: free it from any later task (or from the host with gpuos_free).
__device__ inline void* malloc(unsigned long long bytes, unsigned long long align = 16) {
  return gpuos_dev_malloc(bytes, align);
}

/// Returns a block to the heap; nullptr is a no-op. A pointer the heap did not hand out, or one already
/// freed, changes nothing and is counted (bad_free / double_free); in checked mode
/// (GPUOS_HEAP_CHECKED) this holds for interior and stale pointers as well. Returns 0 on success, else
/// the refusal's code (5 foreign pointer, 6 double free, 7 no heap).
__device__ inline unsigned int free(void* p) { return gpuos_dev_free(p); }

}  // namespace gpuos::dev

namespace gpuos {
namespace detail {
template <class Args, class Fn>
inline constexpr bool tile_signature_ok =
    cuda::std::is_same_v<Fn, void (*)(const Args&, const TileCtx&)>;
template <class Args, class Fn>
inline constexpr bool range_signature_ok =
    cuda::std::is_same_v<Fn, void (*)(const Args&, const TileCtx&, unsigned int)>;

/// `count` tiles from c.tile down, one call of `run` per tile, with a barrier between consecutive tiles:
/// the batch of an operator given a tile function.
template <class Run>
__device__ __forceinline__ void run_tiles(const TileCtx& c, unsigned int count, Run run) {
  TileCtx t = c;
#pragma unroll 1
  for (unsigned int i = 0; i < count; ++i) {
    if (i != 0) __syncthreads();
    t.tile = c.tile - i;
    run(t);
  }
}

/// A block's next claim of tiles: thread 0 subtracts `take` tiles from the claim word (relaxed: the block
/// holds tiles it has not reported, so the task cannot complete and the word stays this task's) and gets
/// the old word back. Issued as a batch starts, its result first read after the batch, the claim's
/// round trip (1-4 us under full memory load) overlaps the tiles' traffic instead of stalling the
/// block. The global-space atomic keeps the compiler from a generic-address fallback.
__device__ __forceinline__ unsigned long long claim_issue(unsigned long long* word, unsigned int take) {
  unsigned long long old = 0ull;
  if (threadIdx.x == 0)
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;"
                 : "=l"(old)
                 : "l"(word), "l"(0ull - (static_cast<unsigned long long>(take) << 32))
                 : "memory");
  return old;
}

/// The claiming adapter's loop: `count` tiles from ctx.tile down (one call of `batch` with the batch's
/// context, its tile the batch's highest, and its count); then claims of claims->take tiles (later about
/// (tiles left) / (spread x grid), clamped to [1, claims->max]), each issued as the previous batch starts
/// while a grid's worth of tiles is unclaimed (after it, once fewer are), until a claim finds no tile or
/// takes the last ones. The claim word's high half is the task's remaining tile count (TileClaims::word);
/// a claim that saw `rem` > 0 owns tiles rem - 1 down to rem - got. The claim's result register is first
/// read after the batch: the tiles run while it is in flight.
template <class Batch>
__device__ __forceinline__ unsigned int run_claimed(const TileCtx& c, unsigned int count, TileClaims* claims,
                                                    Batch batch) {
  TileCtx t = c;
  unsigned long long* const word = claims->word;
  unsigned int top = c.tile, n = count, take = claims->take, left = claims->left, ran = 0;
  bool claim_more = true;
  for (;;) {
    // Ahead only while at least a grid's worth of tiles is unclaimed: with fewer, a tile taken ahead
    // could have gone to a block that has none (a task of few tiles, the end of a large one).
    const bool ahead = claim_more && left >= gridDim.x;
    unsigned long long old = ahead ? claim_issue(word, take) : 0ull;
    t.tile = top;
    batch(t, n);
    ran += n;
    if (!claim_more) return ran;
    if (!ahead) old = claim_issue(word, take);
    if (threadIdx.x == 0) claims->slot = old;
    __syncthreads();  // the batch's end for every thread, and the claim's result in shared memory
    const int rem = static_cast<int>(static_cast<unsigned int>(claims->slot >> 32));
    if (rem <= 0) return ran;
    n = static_cast<unsigned int>(rem) < take ? static_cast<unsigned int>(rem) : take;
    top = static_cast<unsigned int>(rem) - 1u;
    left = static_cast<unsigned int>(rem) - n;
    claim_more = left > 0;  // else this claim took the last tiles
    const unsigned int share = __umulhi(static_cast<unsigned int>(rem), claims->spread_inv);
    take = share < 1u ? 1u : (share > claims->max ? claims->max : share);
    __syncthreads();  // every thread read the slot before thread 0 writes it again
  }
}

}  // namespace detail

}  // namespace gpuos

#define GPUOS_OP_ARGS_CHECK_(NAME, ARGS)                                                               \
  static_assert(cuda::std::is_trivially_copyable_v<ARGS>,                                            \
                "gpuos operator '" #NAME "': argument struct " #ARGS " must be trivially copyable"); \
  static_assert(sizeof(ARGS) <= GPUOS_MAX_ARG_BYTES,                                                 \
                "gpuos operator '" #NAME "': argument struct " #ARGS " exceeds GPUOS_MAX_ARG_BYTES");
#define GPUOS_OP_CHECK_(NAME, ARGS, FN)                                                                 \
  GPUOS_OP_ARGS_CHECK_(NAME, ARGS)                                                                   \
  static_assert(::gpuos::detail::tile_signature_ok<ARGS, decltype(&FN)>,                              \
                "gpuos operator '" #NAME "': " #FN " must be declared as "                           \
                "__device__ void " #FN "(const " #ARGS "&, const gpuos::TileCtx&)");
#define GPUOS_OP_RANGE_CHECK_(NAME, ARGS, FN)                                                           \
  GPUOS_OP_ARGS_CHECK_(NAME, ARGS)                                                                   \
  static_assert(::gpuos::detail::range_signature_ok<ARGS, decltype(&FN)>,                             \
                "gpuos operator '" #NAME "': " #FN " must be declared as "                           \
                "__device__ void " #FN "(const " #ARGS "&, const gpuos::TileCtx&, unsigned)");

/// The adapters gpuos_op_NAME_tile (a TileRangeFn) and gpuos_op_NAME_claim (a TileClaimFn): BATCH on each
/// run of consecutive tiles the block runs, `bc` the run's context (bc.tile its highest tile) and `bn` its
/// length. The range adapter is inline: the kernel's dispatch loops call it by name where they can (a
/// built-in's; a loaded one's with GPUOS_INLINE_OPERATORS=1), and its jump-table row, which takes its
/// address, keeps an out-of-line copy for calls through the row.
#define GPUOS_OP_ADAPTERS_(NAME, BATCH)                                                              \
  extern "C" __device__ __forceinline__ void gpuos_op_##NAME##_tile(const void* a,                  \
                                                                    const ::gpuos::TileCtx& bc,   \
                                                                    unsigned int bn) {            \
    (void)a;                                                                                       \
    BATCH;                                                                                         \
  }                                                                                                \
  extern "C" __device__ unsigned int gpuos_op_##NAME##_claim(const void* a, const ::gpuos::TileCtx& c, \
                                                             unsigned int count,                   \
                                                             ::gpuos::TileClaims* claims) {        \
    (void)a;                                                                                       \
    return ::gpuos::detail::run_claimed(c, count, claims,                                          \
                                        [&](const ::gpuos::TileCtx& bc, unsigned int bn) { BATCH; }); \
  }

/// The adapters of an operator given a tile function: CALL on each tile, with its context `t`.
#define GPUOS_OP_TILES_(NAME, CALL) \
  GPUOS_OP_ADAPTERS_(NAME, ::gpuos::detail::run_tiles(bc, bn, [&](const ::gpuos::TileCtx& t) { CALL; }))

/// An operator's finish function, gpuos_op_NAME_finish.
#define GPUOS_OP_FINISH_(NAME, ARGS, FINISH_FN)                                                    \
  static_assert(::gpuos::detail::tile_signature_ok<ARGS, decltype(&FINISH_FN)>,                     \
                "gpuos operator '" #NAME "': finish function " #FINISH_FN " must be declared as "  \
                "__device__ void " #FINISH_FN "(const " #ARGS "&, const gpuos::TileCtx&)");        \
  extern "C" __device__ void gpuos_op_##NAME##_finish(const void* a, const ::gpuos::TileCtx& c) {  \
    FINISH_FN(*static_cast<const ARGS*>(a), c);                                                    \
  }

/// Declares operator NAME: emits the adapters gpuos_op_NAME_tile and gpuos_op_NAME_claim and the jump-table row
/// gpuos_op_NAME_entry (an image's table holds the rows' addresses).
#define GPUOS_OPERATOR(NAME, ARGS, TILE_FN) GPUOS_OPERATOR_FLAGS(NAME, ARGS, TILE_FN, 0u)

/// As GPUOS_OPERATOR, with OpEntry flags (GPUOS_OP_HOST_WRITES, GPUOS_OP_NO_WRITES).
#define GPUOS_OPERATOR_FLAGS(NAME, ARGS, TILE_FN, FLAGS)                                           \
  GPUOS_OP_CHECK_(NAME, ARGS, TILE_FN)                                                             \
  GPUOS_OP_TILES_(NAME, TILE_FN(*static_cast<const ARGS*>(a), t))                                  \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, &gpuos_op_##NAME##_claim, nullptr, sizeof(ARGS), (FLAGS)};

/// As GPUOS_OPERATOR, with a finish function run once, on one block, after all tiles.
#define GPUOS_OPERATOR_WITH_FINISH(NAME, ARGS, TILE_FN, FINISH_FN)                                 \
  GPUOS_OPERATOR_WITH_FINISH_FLAGS(NAME, ARGS, TILE_FN, FINISH_FN, 0u)

/// As GPUOS_OPERATOR_WITH_FINISH, with OpEntry flags (they cover the tiles' and the finish's writes).
#define GPUOS_OPERATOR_WITH_FINISH_FLAGS(NAME, ARGS, TILE_FN, FINISH_FN, FLAGS)                    \
  GPUOS_OP_CHECK_(NAME, ARGS, TILE_FN)                                                             \
  GPUOS_OP_TILES_(NAME, TILE_FN(*static_cast<const ARGS*>(a), t))                                  \
  GPUOS_OP_FINISH_(NAME, ARGS, FINISH_FN)                                                          \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, &gpuos_op_##NAME##_claim, &gpuos_op_##NAME##_finish, sizeof(ARGS), (FLAGS)};

/// Declares operator NAME given a range function RANGE_FN(const ARGS&, const gpuos::TileCtx& c, unsigned
/// count), which runs tiles c.tile - count + 1 .. c.tile (count >= 1) in one call, with OpEntry flags. A
/// block that runs several tiles of a task in a row (a placed node's item, a claimed batch) makes one
/// call for them, so the operator can keep its loads in flight from one tile to the next.
#define GPUOS_OPERATOR_RANGES(NAME, ARGS, RANGE_FN, FLAGS)                                          \
  GPUOS_OP_RANGE_CHECK_(NAME, ARGS, RANGE_FN)                                                      \
  GPUOS_OP_ADAPTERS_(NAME, RANGE_FN(*static_cast<const ARGS*>(a), bc, bn))                         \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, &gpuos_op_##NAME##_claim, nullptr, sizeof(ARGS), (FLAGS)};

/// As GPUOS_OPERATOR_RANGES, with a finish function run once, on one block, after all tiles.
#define GPUOS_OPERATOR_RANGES_WITH_FINISH(NAME, ARGS, RANGE_FN, FINISH_FN, FLAGS)                    \
  GPUOS_OP_RANGE_CHECK_(NAME, ARGS, RANGE_FN)                                                      \
  GPUOS_OP_ADAPTERS_(NAME, RANGE_FN(*static_cast<const ARGS*>(a), bc, bn))                         \
  GPUOS_OP_FINISH_(NAME, ARGS, FINISH_FN)                                                          \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, &gpuos_op_##NAME##_claim, &gpuos_op_##NAME##_finish, sizeof(ARGS), (FLAGS)};

/// Operator with no arguments.
#define GPUOS_OPERATOR_NOARGS(NAME, TILE_FN) GPUOS_OPERATOR_NOARGS_FLAGS(NAME, TILE_FN, 0u)

/// As GPUOS_OPERATOR_NOARGS, with OpEntry flags.
#define GPUOS_OPERATOR_NOARGS_FLAGS(NAME, TILE_FN, FLAGS)                                          \
  static_assert(cuda::std::is_same_v<decltype(&TILE_FN), void (*)(const ::gpuos::TileCtx&)>,        \
                "gpuos operator '" #NAME "': " #TILE_FN " must be declared as "                    \
                "__device__ void " #TILE_FN "(const gpuos::TileCtx&)");                            \
  GPUOS_OP_TILES_(NAME, TILE_FN(t))                                                                \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, &gpuos_op_##NAME##_claim, nullptr, 0u, (FLAGS)};

#endif  // GPUOS_OP_CUH
