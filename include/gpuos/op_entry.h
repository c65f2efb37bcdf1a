// gpuos operator ABI, the part the host reads too: one row of an image's jump table.
//
// An image's jump table (`gpuos_op_table`, GPUOS_MAX_OPS pointers) holds, at each operator id, the
// address of that operator's row, which GPUOS_OPERATOR (gpuos/op.cuh) emits as gpuos_op_<name>_entry.
// The host reads rows from a loaded image (which ids it holds, their argument sizes) and from a linked
// image's ELF, through this same definition. Host-safe: the tile context types are only named here
// (gpuos/op.cuh defines them for device code).
#ifndef GPUOS_OP_ENTRY_H
#define GPUOS_OP_ENTRY_H

#include "gpuos/limits.h"

namespace gpuos {

struct TileCtx;
struct TileClaims;

/// Runs `count` tiles of a task on the calling block (gpuos/op.cuh says how).
using TileRangeFn = void (*)(const void* args, const TileCtx& ctx, unsigned int count);
/// Runs `count` tiles, then claims and runs more until none is left; returns the tiles it ran.
using TileClaimFn = unsigned int (*)(const void* args, const TileCtx& ctx, unsigned int count, TileClaims* claims);
/// A finish function's adapter.
using TileFn = void (*)(const void* args, const TileCtx& ctx);

/// One row of an image's jump table.
struct OpEntry {
  TileRangeFn tile;    ///< nullptr: no operator at this id
  TileClaimFn claim;   ///< the same tiles, claiming on (a large task)
  TileFn finish;       ///< nullptr: none
  unsigned int arg_bytes;
  unsigned int flags;  ///< GPUOS_OP_* flags
};
static_assert(sizeof(OpEntry) == 32, "OpEntry layout");
#if !defined(__CUDACC_RTC__)  // NVRTC's offsetof is not a constant expression
static_assert(__builtin_offsetof(OpEntry, arg_bytes) == 24, "OpEntry layout");
#endif

}  // namespace gpuos

/// OpEntry::flags: the operator writes memory the GPU reaches over the bus (mapped pinned host memory,
/// a peer GPU's memory). Its completion record is then released at system scope, so the host sees
/// those writes once it sees the record. Without the flag the release is at device scope: enough for
/// device memory (which the host reads with copies, through the same L2), and cheaper.
#define GPUOS_OP_HOST_WRITES 1u
/// OpEntry::flags: the operator writes no memory at all (a nop, a marker task). Its completion record
/// then goes out without a release fence (~0.25 us sooner for a lone nop on an H100). An operator with
/// this flag that does write may have its writes seen after its completion: do not set it on anything
/// that stores.
#define GPUOS_OP_NO_WRITES 2u
/// OpEntry::flags: the operator waits for its task's inputs itself (gpuos::await_inputs, gpuos/op.cuh).
/// Where a task waits for other tasks' results on the device (a node of a placed graph launch), the
/// tile function is then called before they are complete: it may start what does not depend on them
/// (loading its weights, its address arithmetic), and must call await_inputs before it reads anything
/// they write.
#define GPUOS_OP_AWAITS_INPUTS 4u

#endif  // GPUOS_OP_ENTRY_H
