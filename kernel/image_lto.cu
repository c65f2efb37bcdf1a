// The device image as LTO-IR: the resident kernel and the built-in operators WITHOUT their jump table.
// nvJitLink links it with run-time operators and a generated table into each new generation's image
// (host/operators.cpp); the prebuilt cubin (image.cu) boots the runtime.
#include "kernel/scheduler.cu"
#include "kernel/builtin_ops.cu"
