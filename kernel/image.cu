// The device image built at build time: scheduler, dispatch loops, built-in operators and their jump table
// in one translation unit, compiled to SASS for the configured arch and embedded in libgpuos.
#include "kernel/scheduler.cu"
#include "kernel/dispatch.cu"
#include "kernel/builtin_ops.cu"
#include "kernel/builtin_table.cu"
