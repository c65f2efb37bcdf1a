// Jump table of the image built at build time: the built-in operators at their fixed ids. Device code in
// the same image takes each operator's address, so every pointer is valid in the image that calls it.
#include "kernel/builtin_entries.cuh"

// The remaining slots are empty.
extern "C" __device__ const gpuos::OpEntry* const gpuos_op_table[GPUOS_MAX_OPS] = {GPUOS_BUILTIN_TABLE_ROWS};
