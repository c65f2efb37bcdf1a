// The device image as LTO-IR: the resident kernel and the built-in operators WITHOUT their jump table.
// nvJitLink links it with run-time operators and a generated table into each new generation's image
// (host/generations.cpp builds the link's inputs, jit/image.cpp links them); the prebuilt cubin
// (image.cu) boots the runtime. kernel/meson.build compiles it twice: as LTO-IR and as relocatable SASS
// (the default for generations; GPUOS_KERNEL_LTO=1 selects the LTO-IR).
#include "kernel/scheduler.cu"
#include "kernel/builtin_ops.cu"
