/* gpuos C ABI: boot the resident kernel on a GPU, submit tasks, wait for them.
 *
 * Every call returns a gpuos_status; GPUOS_OK (0) is success. On failure, gpuos_last_error() returns a
 * message for the calling thread that names the cause (with the CUDA driver's own error name where the
 * driver failed). Handles are thread-safe unless a function says otherwise.
 *
 * Lifetime: gpuos_create boots the kernel; gpuos_destroy drains every submitted task, stops the kernel
 * and frees everything. A task is identified by its ticket (a 64-bit number, dense and increasing in
 * submission order). */
#ifndef GPUOS_GPUOS_H
#define GPUOS_GPUOS_H

#include <stddef.h>
#include <stdint.h>

#include "gpuos/builtin_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GPUOS_API
#else
#define GPUOS_API __attribute__((visibility("default")))
#endif

typedef enum gpuos_status {
  GPUOS_OK = 0,
  GPUOS_ERR_INVALID_ARG = 1,  /* a bad argument: unknown op, wrong argument size, zero tiles, ... */
  GPUOS_ERR_QUEUE_FULL = 2,   /* try_submit: no free slot; nothing was submitted */
  GPUOS_ERR_TIMEOUT = 3,      /* wait: the task has not completed in time (it is still pending) */
  GPUOS_ERR_UNAVAILABLE = 4,  /* the runtime is shutting down or suspended for that call */
  GPUOS_ERR_NO_DEVICE = 5,    /* no CUDA driver, or no device with that index */
  GPUOS_ERR_DRIVER = 6,       /* the driver is too old or a driver call failed */
  GPUOS_ERR_DEVICE_FAULT = 7, /* the GPU faulted (sticky error); every pending task fails with this */
  GPUOS_ERR_TASK_FAILED = 8,  /* the device rejected the task (see gpuos_last_error) */
  GPUOS_ERR_OUT_OF_MEMORY = 9,
  GPUOS_ERR_UNSUPPORTED = 10, /* the device cannot run the resident kernel (arch, cooperative launch) */
  GPUOS_ERR_INTERNAL = 11
} gpuos_status;

/* Name of a status, e.g. "GPUOS_ERR_QUEUE_FULL". Never NULL. */
GPUOS_API const char* gpuos_status_name(gpuos_status s);

/* Message of the last failed call on this thread ("" if none). Valid until the next call. */
GPUOS_API const char* gpuos_last_error(void);

typedef struct gpuos_runtime gpuos_runtime;

typedef struct gpuos_options {
  uint32_t struct_size;    /* sizeof(gpuos_options); set by gpuos_options_init */
  int32_t device;          /* CUDA device ordinal; default 0 */
  uint32_t sm_budget;      /* SMs the kernel may occupy; 0 = all. The rest stay free for other work. */
  uint32_t queue_capacity; /* ring slots, a power of two in [64, 2^22]; default 65536 */
  uint32_t blocks_per_sm;  /* 0 = as many as the occupancy calculator allows */
  uint32_t reserved[3];
  /* The device heap (gpuos_alloc, gpuos::dev::malloc): device memory allocated at boot that lives as long
   * as the runtime, across suspend/resume. 0 = no heap; otherwise at least 1 MiB. Default 256 MiB. */
  uint64_t heap_bytes;
  uint32_t heap_arenas; /* independently locked parts of the heap (<= 4096); 0 = automatic: 8 per SM,
                         * each at least 1 MiB. A quarter of heaps >= 16 MiB is one more, large arena. */
  uint32_t heap_flags;  /* GPUOS_HEAP_* */
} gpuos_options;

/* heap_flags: verify every free against the boundary tags of the block and its neighbours, so that
 * interior, stale and foreign pointers are refused (and counted) instead of being undefined behaviour. */
#define GPUOS_HEAP_CHECKED 1u

GPUOS_API void gpuos_options_init(gpuos_options* opts);

/* Boots the resident kernel. On success *out owns it. */
GPUOS_API gpuos_status gpuos_create(const gpuos_options* opts, gpuos_runtime** out);

/* Drains every submitted task, stops the kernel and frees the runtime. NULL is a no-op.
 * After a device fault it frees what it can and resets the device's primary context. */
GPUOS_API gpuos_status gpuos_destroy(gpuos_runtime* rt);

/* Graceful stop without freeing: new submits fail with GPUOS_ERR_UNAVAILABLE, every task submitted
 * before is drained, the kernel stops. Waits and stats keep working until gpuos_destroy. Idempotent. */
GPUOS_API gpuos_status gpuos_shutdown(gpuos_runtime* rt);

typedef struct gpuos_task {
  uint32_t op;        /* operator id (gpuos_builtin_op for built-ins) */
  uint32_t tiles;     /* 1..2^30; built-ins: gpuos_tiles_for(n) */
  const void* args;   /* argument struct, copied at submit */
  uint32_t arg_bytes; /* must equal the operator's argument size */
  uint32_t reserved;
} gpuos_task;

/* Submits one task; blocks while the queue is full. Thread-safe. */
GPUOS_API gpuos_status gpuos_submit(gpuos_runtime* rt, const gpuos_task* task, uint64_t* ticket);

/* As gpuos_submit, but returns GPUOS_ERR_QUEUE_FULL at once instead of blocking. */
GPUOS_API gpuos_status gpuos_try_submit(gpuos_runtime* rt, const gpuos_task* task, uint64_t* ticket);

/* Submits n tasks with consecutive tickets first, first+1, ...; blocks while the queue lacks room for
 * all n (n must not exceed the queue capacity). Either all n are submitted or none. */
GPUOS_API gpuos_status gpuos_submit_batch(gpuos_runtime* rt, const gpuos_task* tasks, size_t n,
                                          uint64_t* first_ticket);

/* Waits until the task has completed or timeout_ns has passed (negative = forever, 0 = poll).
 * Returns GPUOS_OK if it ran, GPUOS_ERR_TIMEOUT if still pending, GPUOS_ERR_TASK_FAILED if the device
 * rejected it, GPUOS_ERR_DEVICE_FAULT if the GPU faulted before it completed. */
GPUOS_API gpuos_status gpuos_wait(gpuos_runtime* rt, uint64_t ticket, int64_t timeout_ns);

/* Waits for every task submitted before the call. */
GPUOS_API gpuos_status gpuos_drain(gpuos_runtime* rt, int64_t timeout_ns);

typedef struct gpuos_stats {
  uint64_t submitted;   /* tickets issued */
  uint64_t completed;   /* tasks completed (in ticket order: every ticket below this is done) */
  uint64_t failed;      /* tasks the device rejected */
  uint64_t queue_depth; /* submitted - completed */
  uint64_t heartbeat;   /* the kernel's front-end loop counter (moves while the kernel runs) */
  uint64_t launches;    /* kernel launches so far (1 + resumes) */
  uint64_t per_op_completed[GPUOS_BUILTIN_OP_COUNT];
} gpuos_stats;

GPUOS_API gpuos_status gpuos_get_stats(gpuos_runtime* rt, gpuos_stats* out);

/* Suspend: the kernel's blocks finish their current task and the kernel exits; tasks already taken from
 * the queue complete, the rest stay queued (submits keep being accepted). Resume relaunches the kernel,
 * which continues with the queued tasks. None is lost or run twice. */
GPUOS_API gpuos_status gpuos_suspend(gpuos_runtime* rt);
GPUOS_API gpuos_status gpuos_resume(gpuos_runtime* rt);

/* ---- the device heap ----------------------------------------------------------------------------
 * A TLSF allocator over device memory, served by the resident kernel (the host never touches its
 * metadata): each call below is one round trip through the ring. The pointers are ordinary device
 * memory: use them with CUDA copies, as operator arguments, and from operators (gpuos::dev::malloc /
 * free in gpuos/op.cuh share the same heap). Blocks survive suspend/resume. These calls fail with
 * GPUOS_ERR_UNAVAILABLE when the runtime has no heap (heap_bytes = 0), is suspended or shut down. */

/* Allocates `bytes` aligned to `align` (a power of two; 0 or <= 16 means 16). *out = NULL on failure.
 * GPUOS_ERR_OUT_OF_MEMORY: no part of the heap has a free block that large (the call returns at once,
 * it never waits for memory); GPUOS_ERR_INVALID_ARG: align is not a power of two. bytes = 0 gives a
 * unique minimal block. Thread-safe. */
GPUOS_API gpuos_status gpuos_alloc(gpuos_runtime* rt, size_t bytes, size_t align, void** out);

/* Returns a block to the heap. NULL is a no-op. GPUOS_ERR_INVALID_ARG (nothing changes, the heap
 * counts it): a double free, or a pointer the heap did not hand out (in checked mode also interior and
 * stale pointers; without it such pointers are undefined behaviour). Thread-safe. */
GPUOS_API gpuos_status gpuos_free(gpuos_runtime* rt, void* p);

typedef struct gpuos_heap_stats {
  uint64_t pool_bytes;
  uint64_t used_bytes;    /* bytes of used blocks, 16-byte headers included */
  uint64_t free_bytes;
  uint64_t largest_free;  /* biggest free block (header included) */
  uint64_t used_blocks;
  uint64_t free_blocks;
  uint64_t allocs;        /* successful allocations so far (host and device) */
  uint64_t frees;
  uint64_t failed_allocs; /* allocations that returned NULL / an error */
  uint64_t bad_align;     /* ... of which alignment not a power of two */
  uint64_t too_large;     /* ... of which larger than any part of the heap */
  uint64_t bad_free;      /* frees refused: not a block of the heap */
  uint64_t double_free;   /* frees refused: already free */
  double fragmentation;   /* 1 - sum over arenas of largest free block / free bytes; 0 = unfragmented */
  uint32_t arenas;
  uint32_t checked;       /* 1 when GPUOS_HEAP_CHECKED is on */
} gpuos_heap_stats;

/* Heap statistics (one round trip; each arena is read under its lock). */
GPUOS_API gpuos_status gpuos_heap_get_stats(gpuos_runtime* rt, gpuos_heap_stats* out);

/* Runs the invariant checker on the device heap (every block of every arena: boundary tags, links,
 * free lists, bitmaps, counters). GPUOS_OK if it holds, else GPUOS_ERR_INTERNAL with the first violation
 * in gpuos_last_error(). O(blocks): for tests and debugging. */
GPUOS_API gpuos_status gpuos_heap_check(gpuos_runtime* rt);

typedef struct gpuos_device_info {
  char name[256];
  int32_t ordinal;
  int32_t cc_major, cc_minor;
  int32_t sm_count;
  int32_t blocks_per_sm;   /* resident-kernel blocks per SM the occupancy calculator allows */
  int32_t grid_blocks;     /* blocks the kernel launches with these options */
  int32_t block_threads;
  uint64_t total_mem;
  int32_t driver_version;  /* e.g. 13000 */
  int32_t reserved;
} gpuos_device_info;

/* Describes the device and the grid gpuos would launch with these options, without booting. */
GPUOS_API gpuos_status gpuos_query_device(const gpuos_options* opts, gpuos_device_info* out);

/* Device info of a running runtime. */
GPUOS_API gpuos_status gpuos_get_device_info(gpuos_runtime* rt, gpuos_device_info* out);

/* Library version string, the CUDA toolkit it was built with and the device arch of its image. */
GPUOS_API const char* gpuos_build_info(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUOS_GPUOS_H */
