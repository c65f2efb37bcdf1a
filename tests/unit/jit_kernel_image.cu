// The resident kernel and the built-in operators without their jump table (kernel/image.cu minus
// builtin_table.cu), as an LTO object: the JIT link tests link it with a generated table.
#include "kernel/scheduler.cu"
#include "kernel/dispatch.cu"
#include "kernel/builtin_ops.cu"
