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
// A tile function may use threadIdx/blockDim (blockDim.x == GPUOS_BLOCK_THREADS), __syncthreads() (all
// threads of the block enter the tile function together), ctx.smem, and ctx.scratch. It must not
// return before the other threads of its block when it uses __syncthreads, and must not wait on other
// tiles (tiles of one task run in any order, possibly on one block, one after another with a barrier
// between them, so ctx.smem is free again when a tile starts). An optional finish function runs
// once, on one block, after every tile of the task has finished (GPUOS_OPERATOR_WITH_FINISH).
// The signature is checked at compile time: a wrong one is an error that names the operator.
#ifndef GPUOS_OP_CUH
#define GPUOS_OP_CUH

#include "gpuos/abi.h"

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

/// The jump-table signature of an operator's tiles: runs `count` tiles of the task on the calling block,
/// ctx.tile, ctx.tile - 1, ..., ctx.tile - count + 1, with a barrier between consecutive tiles. The loop
/// is compiled inside each operator's adapter (GPUOS_OPERATOR), so a block that claimed a batch of tiles
/// pays one call, one save and one restore of the callee's registers, per batch (docs/benchmarks.md,
/// Large task: per tile, that stack traffic cost ~20% of a large element-wise task's bandwidth).
using TileRangeFn = void (*)(const void* args, const TileCtx& ctx, unsigned int count);
/// The signature of a finish function's adapter.
using TileFn = void (*)(const void* args, const TileCtx& ctx);

/// One row of an image's jump table.
struct OpEntry {
  TileRangeFn tile;    ///< nullptr: no operator at this id
  TileFn finish;       ///< nullptr: none
  unsigned int arg_bytes;
  unsigned int flags;  ///< GPUOS_OP_* flags
};

}  // namespace gpuos

/// OpEntry::flags: the operator writes memory the GPU reaches over the bus (mapped pinned host memory,
/// a peer GPU's memory). Its completion record is then released at system scope, so the host sees
/// those writes once it sees the record. Without the flag the release is at device scope: enough for
/// device memory (which the host reads with copies, through the same L2), and cheaper.
#define GPUOS_OP_HOST_WRITES 1u
/// OpEntry::flags: the operator writes no memory at all (a nop, a marker task). Its completion record
/// then goes out without a release fence (measured on an H100: the record of a lone nop is written
/// ~0.25 us sooner). An operator with this flag that does write may have its writes seen after its
/// completion: do not set it on anything that stores.
#define GPUOS_OP_NO_WRITES 2u

// ---- the device heap --------------------------------------------------------------------------------
// Defined by the resident kernel's image (kernel/heap_ops.cuh), so an operator compiled later with NVRTC
// and linked into the same image with nvJitLink reaches them too. Use gpuos::dev::malloc / free.
extern "C" __device__ void* gpuos_dev_malloc(unsigned long long bytes, unsigned long long align);
extern "C" __device__ unsigned int gpuos_dev_free(void* p);

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
}  // namespace detail

}  // namespace gpuos

#define GPUOS_OP_CHECK_(NAME, ARGS, FN)                                                                 \
  static_assert(cuda::std::is_trivially_copyable_v<ARGS>,                                            \
                "gpuos operator '" #NAME "': argument struct " #ARGS " must be trivially copyable"); \
  static_assert(sizeof(ARGS) <= GPUOS_MAX_ARG_BYTES,                                                 \
                "gpuos operator '" #NAME "': argument struct " #ARGS " exceeds GPUOS_MAX_ARG_BYTES"); \
  static_assert(::gpuos::detail::tile_signature_ok<ARGS, decltype(&FN)>,                              \
                "gpuos operator '" #NAME "': " #FN " must be declared as "                           \
                "__device__ void " #FN "(const " #ARGS "&, const gpuos::TileCtx&)");

/// The adapter gpuos_op_NAME_tile (a TileRangeFn): `count` tiles, CALL on each with its context `t`.
#define GPUOS_OP_TILES_(NAME, CALL)                                                                \
  extern "C" __device__ void gpuos_op_##NAME##_tile(const void* a, const ::gpuos::TileCtx& c,       \
                                                    unsigned int count) {                          \
    (void)a;                                                                                       \
    ::gpuos::TileCtx t = c;                                                                        \
    for (unsigned int i = 0; i < count; ++i) {                                                     \
      if (i != 0) __syncthreads();                                                                 \
      t.tile = c.tile - i;                                                                         \
      CALL;                                                                                        \
    }                                                                                              \
  }

/// Declares operator NAME: emits the adapter gpuos_op_NAME_tile and the jump-table row
/// gpuos_op_NAME_entry (an image's table holds the rows' addresses).
#define GPUOS_OPERATOR(NAME, ARGS, TILE_FN) GPUOS_OPERATOR_FLAGS(NAME, ARGS, TILE_FN, 0u)

/// As GPUOS_OPERATOR, with OpEntry flags (GPUOS_OP_HOST_WRITES, GPUOS_OP_NO_WRITES).
#define GPUOS_OPERATOR_FLAGS(NAME, ARGS, TILE_FN, FLAGS)                                           \
  GPUOS_OP_CHECK_(NAME, ARGS, TILE_FN)                                                             \
  GPUOS_OP_TILES_(NAME, TILE_FN(*static_cast<const ARGS*>(a), t))                                  \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, nullptr, sizeof(ARGS), (FLAGS)};

/// As GPUOS_OPERATOR, with a finish function run once, on one block, after all tiles.
#define GPUOS_OPERATOR_WITH_FINISH(NAME, ARGS, TILE_FN, FINISH_FN)                                 \
  GPUOS_OP_CHECK_(NAME, ARGS, TILE_FN)                                                             \
  static_assert(::gpuos::detail::tile_signature_ok<ARGS, decltype(&FINISH_FN)>,                     \
                "gpuos operator '" #NAME "': finish function " #FINISH_FN " must be declared as "  \
                "__device__ void " #FINISH_FN "(const " #ARGS "&, const gpuos::TileCtx&)");        \
  GPUOS_OP_TILES_(NAME, TILE_FN(*static_cast<const ARGS*>(a), t))                                  \
  extern "C" __device__ void gpuos_op_##NAME##_finish(const void* a, const ::gpuos::TileCtx& c) {  \
    FINISH_FN(*static_cast<const ARGS*>(a), c);                                                    \
  }                                                                                                \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, &gpuos_op_##NAME##_finish, sizeof(ARGS), 0u};

/// Operator with no arguments.
#define GPUOS_OPERATOR_NOARGS(NAME, TILE_FN) GPUOS_OPERATOR_NOARGS_FLAGS(NAME, TILE_FN, 0u)

/// As GPUOS_OPERATOR_NOARGS, with OpEntry flags.
#define GPUOS_OPERATOR_NOARGS_FLAGS(NAME, TILE_FN, FLAGS)                                          \
  static_assert(cuda::std::is_same_v<decltype(&TILE_FN), void (*)(const ::gpuos::TileCtx&)>,        \
                "gpuos operator '" #NAME "': " #TILE_FN " must be declared as "                    \
                "__device__ void " #TILE_FN "(const gpuos::TileCtx&)");                            \
  GPUOS_OP_TILES_(NAME, TILE_FN(t))                                                                \
  extern "C" __device__ const ::gpuos::OpEntry gpuos_op_##NAME##_entry = {                         \
      &gpuos_op_##NAME##_tile, nullptr, 0u, (FLAGS)};

#endif  // GPUOS_OP_CUH
