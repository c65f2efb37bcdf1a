// The real built-in add adapter, as gpuos compiles it.
#include "gpuos/op.cuh"
#include "kernel/builtin_ops.cuh"
GPUOS_OPERATOR(add2, gpuos_binary_args, gpuos::builtin::add_tile)
typedef void (*TileFn2)(const void*, const gpuos::TileCtx&, unsigned);
__device__ TileFn2 op_table2[2] = {nullptr, gpuos_op_add2_tile};
