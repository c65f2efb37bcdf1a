// Registration of the built-in operators under the operator ABI (gpuos/op.cuh). Their ids are fixed by
// gpuos/builtin_ops.h; the jump table (builtin_table.cu) puts each at its id.
#include "kernel/builtin_ops.cuh"

using namespace gpuos::builtin;

GPUOS_OPERATOR_NOARGS_FLAGS(nop, nop_tile, GPUOS_OP_NO_WRITES)
GPUOS_OPERATOR(fill, gpuos_fill_args, fill_tile)
GPUOS_OPERATOR(copy, gpuos_copy_args, copy_tile)
GPUOS_OPERATOR(add, gpuos_binary_args, add_tile)
GPUOS_OPERATOR(mul, gpuos_binary_args, mul_tile)
GPUOS_OPERATOR(axpy, gpuos_axpy_args, axpy_tile)
GPUOS_OPERATOR_WITH_FINISH(sum, gpuos_sum_args, sum_tile, sum_finish)
