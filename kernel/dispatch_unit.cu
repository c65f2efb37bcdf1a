// The dispatch unit of a generation's image, compiled on its own: the loops that call operators' tiles
// (dispatch.cu) and the built-in operators they inline. kernel/meson.build compiles it twice: as
// relocatable SASS, linked as it is (a loaded operator is called through its row), and as LTO-IR with
// GPUOS_INLINE_LOADED (GPUOS_INLINE_OPERATORS=1), re-optimized at each link with the generation's
// operators and its generated table, whose gpuos_loaded_tile calls every loaded operator's adapter by
// name, so that their tiles are inlined into the loops. The block's shared state is the scheduler unit's
// (image_lto.cu), declared extern here.
#define GPUOS_SHARED_STATE_ELSEWHERE
#include "kernel/dispatch.cu"
#include "kernel/builtin_ops.cu"
