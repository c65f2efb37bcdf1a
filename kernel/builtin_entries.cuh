// The built-in operators' jump-table rows (defined in builtin_ops.cu), for the tables of images built
// with nvcc: kernel/builtin_table.cu and test images that add operators after the built-ins.
#pragma once

#include "gpuos/builtin_ops.h"
#include "gpuos/op.cuh"

#define GPUOS_BUILTIN(name) extern "C" __device__ const gpuos::OpEntry gpuos_op_##name##_entry;
GPUOS_BUILTIN(nop)
GPUOS_BUILTIN(fill)
GPUOS_BUILTIN(copy)
GPUOS_BUILTIN(add)
GPUOS_BUILTIN(mul)
GPUOS_BUILTIN(axpy)
GPUOS_BUILTIN(sum)
#undef GPUOS_BUILTIN

static_assert(GPUOS_OP_NOP == 0 && GPUOS_OP_FILL == 1 && GPUOS_OP_COPY == 2 && GPUOS_OP_ADD == 3 &&
                  GPUOS_OP_MUL == 4 && GPUOS_OP_AXPY == 5 && GPUOS_OP_SUM == 6 && GPUOS_BUILTIN_OP_COUNT == 7,
              "GPUOS_BUILTIN_TABLE_ROWS lists the built-ins in id order");
/// The first GPUOS_BUILTIN_OP_COUNT rows of a jump table, in id order.
#define GPUOS_BUILTIN_TABLE_ROWS                                                                       \
  &gpuos_op_nop_entry, &gpuos_op_fill_entry, &gpuos_op_copy_entry, &gpuos_op_add_entry, &gpuos_op_mul_entry, \
      &gpuos_op_axpy_entry, &gpuos_op_sum_entry
