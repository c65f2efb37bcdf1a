// The dispatch unit of a generation's image, compiled on its own as LTO-IR: the loops that call
// operators' tiles (dispatch.cu) and the built-in operators they inline. nvJitLink re-optimizes it with
// the generation's operators and its generated table, whose gpuos_loaded_tile names every loaded
// operator's adapter, so those tiles are inlined into the loops. The block's shared state is the
// scheduler unit's (image_lto.cu), declared extern here.
#define GPUOS_SHARED_STATE_ELSEWHERE
#include "kernel/dispatch.cu"
#include "kernel/builtin_ops.cu"
