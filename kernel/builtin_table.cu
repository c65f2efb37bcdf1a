// Jump table of the image built at build time: the built-in operators at their fixed ids. Device code in
// the same image takes each operator's address, so every pointer is valid in the image that calls it.
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

// In id order (gpuos/builtin_ops.h); the remaining slots are empty.
static_assert(GPUOS_OP_NOP == 0 && GPUOS_OP_FILL == 1 && GPUOS_OP_COPY == 2 && GPUOS_OP_ADD == 3 &&
                  GPUOS_OP_MUL == 4 && GPUOS_OP_AXPY == 5 && GPUOS_OP_SUM == 6 && GPUOS_BUILTIN_OP_COUNT == 7,
              "the table below lists the built-ins in id order");
extern "C" __device__ const gpuos::OpEntry* const gpuos_op_table[GPUOS_MAX_OPS] = {
    &gpuos_op_nop_entry, &gpuos_op_fill_entry, &gpuos_op_copy_entry, &gpuos_op_add_entry,
    &gpuos_op_mul_entry, &gpuos_op_axpy_entry, &gpuos_op_sum_entry,
};
