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
