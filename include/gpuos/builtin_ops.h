/* gpuos built-in operators: ids and argument structs.
 *
 * C-compatible (embedders use it from C), and compiled by nvcc for the device side. Every built-in works
 * on float32 elements, split into tiles of GPUOS_ELEMS_PER_TILE elements; a task on n elements has
 * gpuos_tiles_for(n) tiles and runs on as many blocks of the resident kernel as are free.
 * Pointers are device pointers (or mapped host pointers); they need no particular alignment, but 16-byte
 * aligned buffers take the vectorized path. */
#ifndef GPUOS_BUILTIN_OPS_H
#define GPUOS_BUILTIN_OPS_H

#if defined(__CUDACC_RTC__)
#include <cuda/std/cstdint>
#else
#include <stdint.h>
#endif

#define GPUOS_ELEMS_PER_TILE 4096u

/* The built-in operators, in id order: the one list (the enum, the names, the device image's jump table
 * and the tests are generated from it). X(ID, name): */
#define GPUOS_BUILTIN_OPS(X) \
  X(GPUOS_OP_NOP, nop)   /* no arguments; dispatch cost only */ \
  X(GPUOS_OP_FILL, fill) /* out[i] = value */ \
  X(GPUOS_OP_COPY, copy) /* out[i] = in[i] */ \
  X(GPUOS_OP_ADD, add)   /* out[i] = a[i] + b[i] */ \
  X(GPUOS_OP_MUL, mul)   /* out[i] = a[i] * b[i] */ \
  X(GPUOS_OP_AXPY, axpy) /* y[i] = alpha * x[i] + y[i] */ \
  X(GPUOS_OP_SUM, sum)   /* *out = sum of x[0..n) (float64 accumulation) */

enum gpuos_builtin_op {
#define GPUOS_BUILTIN_ENUM_(ID, name) ID,
  GPUOS_BUILTIN_OPS(GPUOS_BUILTIN_ENUM_)
#undef GPUOS_BUILTIN_ENUM_
  GPUOS_BUILTIN_OP_COUNT
};

#if !defined(__CUDACC_RTC__)
/* Name of a built-in operator ("add"), or NULL for an id that is not a built-in. */
static inline const char* gpuos_builtin_op_name(uint32_t id) {
#define GPUOS_BUILTIN_NAME_(ID, name) #name,
  static const char* const names[GPUOS_BUILTIN_OP_COUNT] = {GPUOS_BUILTIN_OPS(GPUOS_BUILTIN_NAME_)};
#undef GPUOS_BUILTIN_NAME_
  return id < GPUOS_BUILTIN_OP_COUNT ? names[id] : 0;
}
#endif

typedef struct gpuos_fill_args {
  float* out;
  uint64_t n;
  float value;
  uint32_t reserved;
} gpuos_fill_args;

typedef struct gpuos_copy_args {
  float* out;
  const float* in;
  uint64_t n;
} gpuos_copy_args;

/* Used by both ADD and MUL. */
typedef struct gpuos_binary_args {
  float* out;
  const float* a;
  const float* b;
  uint64_t n;
} gpuos_binary_args;

typedef struct gpuos_axpy_args {
  float* y;
  const float* x;
  uint64_t n;
  float alpha;
  uint32_t reserved;
} gpuos_axpy_args;

typedef struct gpuos_sum_args {
  float* out;
  const float* x;
  uint64_t n;
} gpuos_sum_args;

#ifdef __cplusplus
static_assert(sizeof(gpuos_fill_args) == 24, "ABI");
static_assert(sizeof(gpuos_copy_args) == 24, "ABI");
static_assert(sizeof(gpuos_binary_args) == 32, "ABI");
static_assert(sizeof(gpuos_axpy_args) == 32, "ABI");
static_assert(sizeof(gpuos_sum_args) == 24, "ABI");
#endif

/* Tiles a built-in needs for n elements (at least one). */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
__host__ __device__
#endif
static inline uint32_t gpuos_tiles_for(uint64_t n) {
  return n == 0 ? 1u : (uint32_t)((n + GPUOS_ELEMS_PER_TILE - 1) / GPUOS_ELEMS_PER_TILE);
}

#endif /* GPUOS_BUILTIN_OPS_H */
