// The scheduler's unit of a generation's image (kernel/sched.cuh): the front end, the worker loop and the
// graph bookkeeping, without the dispatch loops, the built-in operators or a jump table. nvJitLink links
// it with the dispatch unit (dispatch_unit.cu), the run-time operators and a generated table into each new
// generation's image (host/generations.cpp builds the link's inputs, jit/image.cpp links them); the
// prebuilt cubin (image.cu) boots the runtime. kernel/meson.build compiles it twice: as relocatable SASS
// (the default for generations) and as LTO-IR (GPUOS_KERNEL_LTO=1).
#include "kernel/scheduler.cu"
