// The built-in operators' jump-table rows (defined in builtin_ops.cu), for the tables of images built
// with nvcc: kernel/builtin_table.cu and test images that add operators after the built-ins. Both lists
// come from GPUOS_BUILTIN_OPS (gpuos/builtin_ops.h).
#pragma once

#include "gpuos/builtin_ops.h"
#include "gpuos/op.cuh"

#define GPUOS_BUILTIN_DECL_(ID, name) extern "C" __device__ const gpuos::OpEntry gpuos_op_##name##_entry;
GPUOS_BUILTIN_OPS(GPUOS_BUILTIN_DECL_)
#undef GPUOS_BUILTIN_DECL_

/// The first GPUOS_BUILTIN_OP_COUNT rows of a jump table, in id order, each followed by a comma.
#define GPUOS_BUILTIN_ROW_(ID, name) &gpuos_op_##name##_entry,
#define GPUOS_BUILTIN_TABLE_ROWS GPUOS_BUILTIN_OPS(GPUOS_BUILTIN_ROW_)

/// gpuos_loaded_tile (kernel/dispatch.cu) of an image built with nvcc, which has no operator loaded at
/// run time: every operator that is not a built-in is called through its row.
#define GPUOS_NO_LOADED_OPERATORS                                                                        \
  extern "C" __device__ __forceinline__ void gpuos_loaded_tile(gpuos::TileRangeFn tile, const void* args, \
                                                               const gpuos::TileCtx& c, unsigned int count) { \
    tile(args, c, count);                                                                                \
  }
