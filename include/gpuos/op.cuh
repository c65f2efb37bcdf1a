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
// A large task's tiles are claimed at run time in runs, one call of the range function per run. An
// operator that streams through long runs may instead give a stream function, which is also handed the
// block's next runs and may go on with them in the same call, so that its loads stay in flight from one
// run to the next (GPUOS_OPERATOR_STREAMS):
//
//   __device__ void scale_stream(const ScaleArgs& a, const gpuos::TileCtx& c, unsigned count,
//                                gpuos::TileRuns& runs);
//   // runs tiles c.tile - count + 1 .. c.tile (count >= 1), then, for as long as it likes, the runs
//   // runs.next() hands it (each the same way: its highest tile and its length); what it leaves is
//   // handed to later calls
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

/// The runs of a task's tiles a block runs, one after another: for a stream function (GPUOS_OPERATOR_STREAMS),
/// the runs after the one it was called for. A block's tiles of a placed item are one run; a claimed
/// batch is a run, and the next claim is issued as the run before it is handed out, so that its round
/// trip overlaps the tiles (TileClaims; the claims are those a range function's calls would get).
class TileRuns {
 public:
  /// No runs after the first (a placed item's tiles, a plain task's tiles run without claims).
  TileRuns() = default;
  /// Claims on after a first run of `count` tiles: issues the claim ahead while a grid's worth of tiles
  /// is unclaimed.
  __device__ TileRuns(TileClaims* claims, unsigned int count);
  /// All threads of the block, together (it holds barriers): the next run, its highest tile in `top` and
  /// its length in `count`, which the caller must then run; false when there is none. Waits for the
  /// claim's result if it is still in flight.
  __device__ bool next(unsigned int& top, unsigned int& count);
  /// Tiles of the runs handed out so far, the first run's included.
  __device__ unsigned int ran() const { return ran_; }

 private:
  /// Issues the next claim now if claims go on and a grid's worth of tiles is unclaimed (ahead_).
  __device__ void claim_ahead();

  TileClaims* claims_ = nullptr;
  unsigned long long old_ = 0ull;  ///< thread 0's: the claim in flight, as the claim word was before it
  unsigned int take_ = 0, left_ = 0, ran_ = 0;
  bool more_ = false, ahead_ = false;
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
template <class Args, class Fn>
inline constexpr bool stream_signature_ok =
    cuda::std::is_same_v<Fn, void (*)(const Args&, const TileCtx&, unsigned int, TileRuns&)>;

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
/// context, its tile the batch's highest, its count, and the runs after it, which a stream function may
/// go on with), then each further run TileRuns hands out, until there is none. Returns the tiles run.
template <class Batch>
__device__ __forceinline__ unsigned int run_claimed(const TileCtx& c, unsigned int count, TileClaims* claims,
                                                    Batch batch) {
  TileRuns runs(claims, count);
  TileCtx t = c;
  unsigned int top = c.tile, n = count;
  do {
    t.tile = top;
    batch(t, n, runs);
  } while (runs.next(top, n));
  return runs.ran();
}

}  // namespace detail

// The claims: take_ tiles a claim (later about (tiles left) / (spread x grid), clamped to [1, max]), each
// issued as the run before it is handed out while a grid's worth of tiles is unclaimed (else when the run
// is asked for: with fewer, a tile taken ahead could have gone to a block that has none, at a task's
// end), until a claim finds no tile or takes the last ones. The claim word's high half is the task's
// remaining tile count (TileClaims::word); a claim that saw `rem` > 0 owns tiles rem - 1 down to rem - got.
__device__ __forceinline__ void TileRuns::claim_ahead() {
  ahead_ = more_ && left_ >= gridDim.x;
  if (ahead_) old_ = detail::claim_issue(claims_->word, take_);
}

__device__ __forceinline__ TileRuns::TileRuns(TileClaims* claims, unsigned int count)
    : claims_(claims), take_(claims->take), left_(claims->left), ran_(count), more_(true) {
  claim_ahead();
}

__device__ __forceinline__ bool TileRuns::next(unsigned int& top, unsigned int& count) {
  if (!more_) return false;
  if (!ahead_) old_ = detail::claim_issue(claims_->word, take_);
  if (threadIdx.x == 0) claims_->slot = old_;
  __syncthreads();  // the claim's result in shared memory for every thread
  const int rem = static_cast<int>(static_cast<unsigned int>(claims_->slot >> 32));
  if (rem <= 0) {
    more_ = false;
    return false;
  }
  count = static_cast<unsigned int>(rem) < take_ ? static_cast<unsigned int>(rem) : take_;
  top = static_cast<unsigned int>(rem) - 1u;
  left_ = static_cast<unsigned int>(rem) - count;
  more_ = left_ > 0;  // else this claim took the last tiles
  ran_ += count;
  const unsigned int share = __umulhi(static_cast<unsigned int>(rem), claims_->spread_inv);
  take_ = share < 1u ? 1u : (share > claims_->max ? claims_->max : share);
  __syncthreads();  // every thread read the slot before thread 0 writes it again
  claim_ahead();
  return true;
}

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
#define GPUOS_OP_STREAM_CHECK_(NAME, ARGS, FN)                                                          \
  GPUOS_OP_ARGS_CHECK_(NAME, ARGS)                                                                   \
  static_assert(::gpuos::detail::stream_signature_ok<ARGS, decltype(&FN)>,                            \
                "gpuos operator '" #NAME "': " #FN " must be declared as "                           \
                "__device__ void " #FN "(const " #ARGS "&, const gpuos::TileCtx&, unsigned, "      \
                "gpuos::TileRuns&)");

/// The adapters gpuos_op_NAME_tile (a TileRangeFn) and gpuos_op_NAME_claim (a TileClaimFn): on each run of
/// consecutive tiles the block runs, RANGE_BATCH (the range adapter's one run) or CLAIM_BATCH (the
/// claiming adapter's), `bc` the run's context (bc.tile its highest tile), `bn` its length and, in
/// CLAIM_BATCH, `runs` the runs after it. The range adapter is inline: the kernel's dispatch loops call
/// it by name where they can (a built-in's; a loaded one's with GPUOS_INLINE_OPERATORS=1), and its
/// jump-table row, which takes its address, keeps an out-of-line copy for calls through the row.
#define GPUOS_OP_ADAPTERS2_(NAME, RANGE_BATCH, CLAIM_BATCH)                                          \
  extern "C" __device__ __forceinline__ void gpuos_op_##NAME##_tile(const void* a,                  \
                                                                    const ::gpuos::TileCtx& bc,   \
                                                                    unsigned int bn) {            \
    (void)a;                                                                                       \
    RANGE_BATCH;                                                                                   \
  }                                                                                                \
  extern "C" __device__ unsigned int gpuos_op_##NAME##_claim(const void* a, const ::gpuos::TileCtx& c, \
                                                             unsigned int count,                   \
                                                             ::gpuos::TileClaims* claims) {        \
    (void)a;                                                                                       \
    return ::gpuos::detail::run_claimed(                                                           \
        c, count, claims, [&](const ::gpuos::TileCtx& bc, unsigned int bn, ::gpuos::TileRuns& runs) { \
          (void)runs;                                                                              \
          CLAIM_BATCH;                                                                             \
        });                                                                                        \
  }
/// The adapters for BATCH, which does not use `runs`: each run, one call.
#define GPUOS_OP_ADAPTERS_(NAME, BATCH) GPUOS_OP_ADAPTERS2_(NAME, BATCH, BATCH)
/// The adapters of an operator given a stream function: the range adapter hands it no runs after its
/// own, the claiming adapter the claimed ones.
#define GPUOS_OP_STREAM_ADAPTERS_(NAME, ARGS, STREAM_FN)                                             \
  GPUOS_OP_ADAPTERS2_(NAME, ::gpuos::TileRuns none; STREAM_FN(*static_cast<const ARGS*>(a), bc, bn, none), \
                      STREAM_FN(*static_cast<const ARGS*>(a), bc, bn, runs))

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

/// Declares operator NAME given a stream function STREAM_FN(const ARGS&, const gpuos::TileCtx& c, unsigned
/// count, gpuos::TileRuns& runs), which runs tiles c.tile - count + 1 .. c.tile (count >= 1) and then may go
/// on in the same call with each run runs.next() hands it (a large task's next claimed batch), with
/// OpEntry flags. The runs it does not take are handed to later calls, one call each.
#define GPUOS_OPERATOR_STREAMS(NAME, ARGS, STREAM_FN, FLAGS)                                        \
  GPUOS_OP_STREAM_CHECK_(NAME, ARGS, STREAM_FN)                                                    \
  GPUOS_OP_STREAM_ADAPTERS_(NAME, ARGS, STREAM_FN)                                                  \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, &gpuos_op_##NAME##_claim, nullptr, sizeof(ARGS), (FLAGS)};

/// As GPUOS_OPERATOR_STREAMS, with a finish function run once, on one block, after all tiles.
#define GPUOS_OPERATOR_STREAMS_WITH_FINISH(NAME, ARGS, STREAM_FN, FINISH_FN, FLAGS)                  \
  GPUOS_OP_STREAM_CHECK_(NAME, ARGS, STREAM_FN)                                                    \
  GPUOS_OP_STREAM_ADAPTERS_(NAME, ARGS, STREAM_FN)                                                  \
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
