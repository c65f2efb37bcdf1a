// Operators of the allocator test image (tests/gpu/alloc_image.cu): ids and argument structs, shared by
// the device code and the host test. They exercise gpuos::dev::malloc / free from inside the resident
// kernel, exactly as any operator would.
#pragma once

#include <stdint.h>

#include "gpuos/builtin_ops.h"

enum alloc_test_op {
  ALLOC_TEST_STRESS = GPUOS_BUILTIN_OP_COUNT,  // allocate, write, verify, free, many times per thread
  ALLOC_TEST_KEEP,                             // one block per thread, filled with a pattern, kept
  ALLOC_TEST_RELEASE,                          // verify the kept blocks' pattern, then free them
  ALLOC_TEST_EXHAUST,                          // allocate until null and keep it all / free it all
};

/* counters[0] errors, [1] successful allocations, [2] null returns, [3] failed frees */
typedef struct alloc_stress_args {
  unsigned long long* counters;
  uint32_t iters;
  uint32_t max_bytes;  /* sizes 1 .. max_bytes */
  uint32_t seed;
  uint32_t align_every; /* every n-th allocation asks for an alignment of 32 .. 4096 B; 0 = never */
} alloc_stress_args;

typedef struct alloc_keep_args {
  void** slots;          /* one per thread: tile * 256 + threadIdx.x */
  unsigned long long bytes;
  uint32_t seed;
  uint32_t reserved;
} alloc_keep_args;

typedef struct alloc_release_args {
  void** slots;
  unsigned long long* counters; /* [0] pattern errors, [1] blocks checked, [2] null slots, [3] failed frees */
  unsigned long long bytes;
  uint32_t seed;
  uint32_t free_them;
} alloc_release_args;

typedef struct alloc_exhaust_args {
  unsigned long long* counters; /* [0] blocks obtained, [1] bytes obtained, [3] failed frees */
  void** heads;                 /* per thread: its chain of blocks (linked through their first word) */
  unsigned long long bytes;
  uint32_t max_per_thread;
  uint32_t release;             /* 0: allocate until null, keep the chain; 1: free the chain */
} alloc_exhaust_args;
