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
#include "gpuos/limits.h"

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
  GPUOS_ERR_TIMEOUT = 3,      /* wait: the task has not completed in time (it is still pending); elsewhere: the
                                 driver or the device did not finish a step in time (the message says which) */
  GPUOS_ERR_UNAVAILABLE = 4,  /* the runtime is shutting down or suspended for that call */
  GPUOS_ERR_NO_DEVICE = 5,    /* no CUDA driver, or no device with that index */
  GPUOS_ERR_DRIVER = 6,       /* the driver is too old or a driver call failed */
  GPUOS_ERR_DEVICE_FAULT = 7, /* the GPU faulted (sticky error); every pending task fails with this */
  GPUOS_ERR_TASK_FAILED = 8,  /* the device rejected the task (see gpuos_last_error) */
  GPUOS_ERR_OUT_OF_MEMORY = 9,
  GPUOS_ERR_UNSUPPORTED = 10, /* the device cannot run the resident kernel (arch, cooperative launch) */
  GPUOS_ERR_INTERNAL = 11,
  GPUOS_ERR_HUNG = 12         /* the watchdog gave up: an operator call ran past its deadline, or a shutdown
                                 could not drain (gpuos_last_error names the task, operator, tile, block
                                 and SM); the runtime stopped serving and every pending task fails with this */
} gpuos_status;

/* Name of a status, e.g. "GPUOS_ERR_QUEUE_FULL". Never NULL. */
GPUOS_API const char* gpuos_status_name(gpuos_status s);

/* Message of the last failed call on this thread ("" if none). Valid until the next call. */
GPUOS_API const char* gpuos_last_error(void);

typedef struct gpuos_runtime gpuos_runtime;

typedef struct gpuos_options {
  uint32_t struct_size;    /* sizeof(gpuos_options); set by gpuos_options_init */
  int32_t device;          /* CUDA device ordinal; default 0 */
  uint32_t sm_budget;      /* SMs the kernel may occupy; 0 = GPUOS_SM_BUDGET's (all when unset). The rest
                            * stay free for other work. */
  uint32_t queue_capacity; /* ring slots, a power of two in [64, 2^22]; default 65536 */
  uint32_t blocks_per_sm;  /* 0 = as many as the occupancy calculator allows */
  /* Shared memory each block of the resident kernel gives operators beside GPUOS_TILE_SMEM_BYTES, for
   * data they stream through the block (gpuos::stage in gpuos/op.cuh): a multiple of 16, at most what a
   * block may have beside the kernel's own (~200 KiB on an H100); default 0. It counts in the occupancy
   * (an H100 fits 2 blocks per SM up to ~93 KiB each, 1 beyond) and is taken from L1, where the kernel's
   * stack lives (docs/design.md, "Stage memory"). */
  uint32_t stage_bytes;
  /* Sharing the GPU with other CUDA code in the process (docs/design.md, "Sharing the GPU"). A kernel
   * that never ends makes the driver calls that wait for an idle device wait for ever: a device
   * synchronization, cudaFree, a module load (a framework's lazily loaded kernels). So the resident
   * kernel never stays for good:
   * slice_us: under load it leaves the GPU after this long and is launched again at once; such a call
   *   waits about one slice (a module load two, three in the tail) plus the tasks the kernel had
   *   already taken. Each slice costs a pause of ~0.1-0.2 ms (H100). Default 5000; 0 = never (only
   *   for a process with no other CUDA user); otherwise in [100, 10000000].
   * park_us: idle (nothing in flight, nothing submitted) this long, it leaves the GPU until the next
   *   submission, which launches it again (~80 us more for that task on an H100). Default 2000;
   *   0 = never; otherwise in [100, 10000000]. */
  uint32_t slice_us;
  uint32_t park_us;
  /* The watchdog: the longest one call of an operator may run (a tile, a batch of tiles a block runs in
   * one call, a finish function), in ms. A call past it is reported (its task, operator, tile, block and
   * SM, in gpuos_last_error and gpuos_diagnose), every pending task fails with GPUOS_ERR_HUNG at once,
   * and the kernel is ended with a fault, so that nothing in the process waits for it for ever: as after
   * a device fault, the process must restart to use the GPU again (docs/design.md, "Hung operators").
   * Calls are seen every 5 ms, so one is reported 0-5 ms (plus the host's scheduling) past its deadline.
   * Default 10000; 0 = none (only the per-task and per-operator deadlines apply); otherwise >= GPUOS_MIN_DEADLINE_MS (10).
   * gpuos_task.deadline_ms overrides it for a task, gpuos_set_op_deadline for an operator. */
  uint32_t deadline_ms;
  /* The device heap (gpuos_alloc, gpuos::dev::malloc): device memory allocated at boot that lives as long
   * as the runtime, across suspend/resume. 0 = no heap; otherwise at least 1 MiB. Default 256 MiB. */
  uint64_t heap_bytes;
  uint32_t heap_arenas; /* independently locked parts of the heap (<= 4096); 0 = automatic: 8 per SM,
                         * each at least 1 MiB. A quarter of heaps >= 16 MiB is one more, large arena. */
  uint32_t heap_flags;  /* GPUOS_HEAP_* */
  /* Directories of the operator compiler; NULL = the environment's setting or the default
   * (docs/configuration.md: GPUOS_CACHE_DIR, GPUOS_INCLUDE_DIR, GPUOS_CCCL_DIR). Copied at create. */
  const char* cache_dir;   /* compile cache; "off" = memory only */
  const char* include_dir; /* holds gpuos/op.cuh */
  const char* cccl_dir;    /* CCCL (libcu++) headers */
} gpuos_options;

/* heap_flags: verify every free against the boundary tags of the block and its neighbours, so that
 * interior, stale and foreign pointers are refused (and counted) instead of being undefined behaviour. */
#define GPUOS_HEAP_CHECKED 1u

GPUOS_API void gpuos_options_init(gpuos_options* opts);

/* Boots the resident kernel. On success *out owns it. */
GPUOS_API gpuos_status gpuos_create(const gpuos_options* opts, gpuos_runtime** out);

/* Drains every submitted task, stops the kernel and frees the runtime. NULL is a no-op.
 * After a device fault, or once the watchdog gave up, it frees what it can and resets the device's
 * primary context. It never waits for ever: see gpuos_shutdown. */
GPUOS_API gpuos_status gpuos_destroy(gpuos_runtime* rt);

/* Graceful stop without freeing: new submits fail with GPUOS_ERR_UNAVAILABLE, every task submitted
 * before is drained, the kernel stops. Waits and stats keep working until gpuos_destroy. Idempotent.
 * The drain gives up once no task has completed for GPUOS_DRAIN_STALL ms (30 s by default) or the
 * watchdog's deadline where that is longer: the runtime is then declared hung (GPUOS_ERR_HUNG, every
 * pending task fails) and the kernel is ended as the watchdog ends it. A kernel that cannot be ended
 * (every block held by a hung operator) keeps its memory and the primary context (freeing them would
 * wait for it for ever): gpuos_destroy then returns GPUOS_ERR_HUNG and the process should exit. */
GPUOS_API gpuos_status gpuos_shutdown(gpuos_runtime* rt);

typedef struct gpuos_task {
  uint32_t op;        /* operator id (gpuos_builtin_op for built-ins) */
  uint32_t tiles;     /* 1..2^30; built-ins: gpuos_tiles_for(n) */
  const void* args;   /* argument struct, copied at submit */
  uint32_t arg_bytes; /* must equal the operator's argument size */
  uint32_t deadline_ms; /* the watchdog's deadline for each call of this task's operator (gpuos_options
                           deadline_ms); 0 = the operator's (gpuos_set_op_deadline), else the runtime's */
} gpuos_task;

/* Submits one task; blocks while the queue is full. Thread-safe. */
GPUOS_API gpuos_status gpuos_submit(gpuos_runtime* rt, const gpuos_task* task, uint64_t* ticket);

/* As gpuos_submit, but returns GPUOS_ERR_QUEUE_FULL at once instead of blocking. */
GPUOS_API gpuos_status gpuos_try_submit(gpuos_runtime* rt, const gpuos_task* task, uint64_t* ticket);

/* Submits n tasks with consecutive tickets first, first+1, ...; blocks while the queue lacks room for
 * all n (n must not exceed the queue capacity). Either all n are submitted or none. */
GPUOS_API gpuos_status gpuos_submit_batch(gpuos_runtime* rt, const gpuos_task* tasks, size_t n,
                                          uint64_t* first_ticket);

/* ---- dependencies and lanes ----------------------------------------------------------------------
 * A task may wait for earlier tasks: it runs once each of them has completed, and the wait is resolved
 * inside the resident kernel (no host round trip between a task and the next). A task that waits for a
 * task that failed does not run: it fails too (GPUOS_ERR_TASK_FAILED), naming the task that failed first.
 * Such a task takes two tickets (the list it waits for has its own, internal one; the returned ticket is
 * the task's), and one more pair per 16 tickets waited for beyond 16. */

/* A lane: the tasks submitted to it run one after the other, each once the lane's previous one has
 * completed (successfully or not: a lane orders, it does not pass failures on). Lanes run concurrently.
 * Thread-safe: concurrent submissions to one lane are ordered as they reach it. */
/* Submits a task in a CUDA stream's order: it runs once the work put on `stream` (a CUstream or
 * cudaStream_t; NULL: the legacy default stream) before this call is done, and the stream's later work
 * waits for it. Ordered with a framework's kernels on that stream, and recorded when the stream is being
 * captured into a CUDA graph (each replay runs the task again). On the stream: memory operations that
 * ring a doorbell in mapped memory, which a thread of the runtime answers by submitting the task, and a
 * wait for its completion (docs/design.md, "Stream-ordered submission"); no ticket is returned (a
 * captured task gets one per replay). The task is validated here. Blocks while the stream holds 64 such
 * tasks not yet reached; GPUOS_ERR_QUEUE_FULL beyond 8,192 in flight or captured. A task the stream
 * reaches after the runtime closed, faulted or was destroyed does not run, and the stream goes on
 * (counted in the diagnosis while the runtime exists). Destroy the runtime only once no stream holds such
 * a task it has not reached (freeing device memory waits for that stream): synchronize the stream, or
 * gpuos_shutdown first. A round trip (submit, the stream's sync) costs ~20 us on an H200, most of it the
 * stream's wait (GPUOS_STREAM_SPIN: how long the answering thread spins). Thread-safe. */
GPUOS_API gpuos_status gpuos_submit_on_stream(gpuos_runtime* rt, const gpuos_task* task, void* stream);

typedef struct gpuos_lane gpuos_lane;
GPUOS_API gpuos_status gpuos_lane_create(gpuos_runtime* rt, gpuos_lane** out);
/* NULL is a no-op. Tasks already submitted to the lane are not affected. */
GPUOS_API gpuos_status gpuos_lane_destroy(gpuos_runtime* rt, gpuos_lane* lane);

/* Submits a task that runs after every ticket in after[0..n_after) (earlier tickets of this runtime;
 * n_after = 0 is allowed) and, when `lane` is not NULL, after the lane's previous task. Blocks while the
 * queue is full. GPUOS_ERR_INVALID_ARG: a ticket never issued, or a bad task. */
GPUOS_API gpuos_status gpuos_submit_after(gpuos_runtime* rt, const gpuos_task* task, const uint64_t* after,
                                          size_t n_after, gpuos_lane* lane, uint64_t* ticket);

/* gpuos_submit_batch and gpuos_submit_after in a CUDA stream's order, as gpuos_submit_on_stream (n >= 1):
 * one doorbell submits the tasks when the stream reaches it, and the stream's later work waits for all
 * of them. The tickets in `after` must have been issued before the call; the lane's previous task is
 * the one it has when the stream reaches the call, so the lane must not be destroyed before the stream
 * has reached it (synchronize the stream first). No ticket is returned. */
GPUOS_API gpuos_status gpuos_submit_batch_on_stream(gpuos_runtime* rt, const gpuos_task* tasks, size_t n,
                                                    void* stream);
GPUOS_API gpuos_status gpuos_submit_after_on_stream(gpuos_runtime* rt, const gpuos_task* task, const uint64_t* after,
                                                    size_t n_after, gpuos_lane* lane, void* stream);

/* Waits until the task has completed or timeout_ns has passed (negative = forever, 0 = poll).
 * Returns GPUOS_OK if it ran, GPUOS_ERR_TIMEOUT if still pending, GPUOS_ERR_TASK_FAILED if the device
 * rejected it (or one it waits for failed; a graph launch: one of its nodes failed), GPUOS_ERR_DEVICE_FAULT
 * if the GPU faulted before it completed. */
GPUOS_API gpuos_status gpuos_wait(gpuos_runtime* rt, uint64_t ticket, int64_t timeout_ns);

/* Waits for every task submitted before the call. */
GPUOS_API gpuos_status gpuos_drain(gpuos_runtime* rt, int64_t timeout_ns);

typedef struct gpuos_stats {
  uint64_t submitted;   /* tickets issued */
  uint64_t completed;   /* tasks completed (in ticket order: every ticket below this is done; once
                           waits for every ticket up to t have returned, completed > t) */
  uint64_t failed;      /* tasks the device rejected */
  uint64_t queue_depth; /* submitted - completed */
  uint64_t heartbeat;   /* the kernel's front-end loop counter (moves while the kernel runs) */
  uint64_t launches;    /* kernel launches so far (boot, resumes, generation switches, slices, parks) */
} gpuos_stats;
/* Per-operator counts are in gpuos_op_info (gpuos_list_ops). */

GPUOS_API gpuos_status gpuos_get_stats(gpuos_runtime* rt, gpuos_stats* out);

/* Suspend: the kernel's blocks finish their current task and the kernel exits; tasks already taken from
 * the queue complete, the rest stay queued (submits keep being accepted). Resume relaunches the kernel,
 * which continues with the queued tasks. None is lost or run twice. */
GPUOS_API gpuos_status gpuos_suspend(gpuos_runtime* rt);
GPUOS_API gpuos_status gpuos_resume(gpuos_runtime* rt);

/* The watchdog's deadline (ms, >= GPUOS_MIN_DEADLINE_MS; 0 = the runtime's gpuos_options.deadline_ms again) for every call
 * of operator `op` (a built-in or loaded operator's id; a call is judged by the operator it runs, so an
 * alias has none of its own: GPUOS_ERR_INVALID_ARG), unless a task sets its own. Applies to calls running
 * now too. */
GPUOS_API gpuos_status gpuos_set_op_deadline(gpuos_runtime* rt, uint32_t op, uint32_t deadline_ms);

/* Writes a plain-text report of the runtime's internal state into buf (at most cap bytes, always
 * NUL-terminated when cap > 0): the fault's reason (if any), host counters, the kernel's control
 * words, the device scheduler's state, what every block is running (operator, ticket, tile, for how
 * long) and, for the oldest pending task, its ring slot, device-queue entry and completion record. For hang
 * diagnosis and bug reports; safe while the kernel runs. *needed (if not NULL) receives the full length
 * + 1. */
GPUOS_API gpuos_status gpuos_diagnose(gpuos_runtime* rt, char* buf, size_t cap, size_t* needed);

/* Writes the runtime's statistics as Prometheus text (exposition format 0.0.4) into buf, as
 * gpuos_diagnose does: the kernel's state; tasks submitted, completed, failed; the queue depth; kernel
 * launches; the serving generation, switches and the last switch's pause; per-operator completions and
 * failures (label operator); and, with a heap, its use, fragmentation and counts (read through the
 * ring: a parked kernel is launched for it; left out while suspended). Names start with gpuos_. */
GPUOS_API gpuos_status gpuos_metrics(gpuos_runtime* rt, char* buf, size_t cap, size_t* needed);
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
  int32_t blocks_per_sm;   /* resident-kernel blocks per SM: what the occupancy calculator allows, at most
                            * gpuos_options.blocks_per_sm when that is set */
  int32_t grid_blocks;     /* blocks the kernel launches with these options */
  int32_t block_threads;
  uint64_t total_mem;
  int32_t driver_version;  /* e.g. 13000 */
  int32_t stage_bytes;     /* gpuos_options.stage_bytes: each block's stage memory */
} gpuos_device_info;

/* Describes the device and the grid gpuos would launch with these options, without booting. */
GPUOS_API gpuos_status gpuos_query_device(const gpuos_options* opts, gpuos_device_info* out);

/* Device info of a running runtime. */
GPUOS_API gpuos_status gpuos_get_device_info(gpuos_runtime* rt, gpuos_device_info* out);

/* ---- Operators loaded at run time (hot-patching) -----------------------------------------------------
 *
 * An operator source (a .cu file using gpuos/op.cuh's GPUOS_OPERATOR) is compiled with NVRTC, linked with
 * the resident kernel, the built-ins and every other live operator into a new image (a "generation"),
 * and switched to: the kernel stops after the tasks it has taken from the queue (they finish on the old
 * code), the new image is loaded, and the kernel is relaunched on the same queue (later tasks run the new
 * code). No task is lost or run twice. The running generation keeps serving while the next one compiles;
 * the previous one stays loaded for gpuos_generation_rollback. A source that does not compile or link
 * never replaces a working version: the call fails with the diagnostics (file:line) in
 * gpuos_last_error(), and gpuos_list_ops reports them until a fixed version loads.
 *
 * Operator ids are stable per name: a new name gets the next free id >= GPUOS_BUILTIN_OP_COUNT; loading
 * a changed source keeps its operators' ids. Thread-safe; loads are serialized. Environment: the CUDA
 * toolkit's CCCL headers and a compile cache: gpuos_options' directories, docs/configuration.md. */

typedef struct gpuos_generation {
  uint64_t number;       /* 0 = the built-in image the runtime booted with */
  uint64_t first_ticket; /* the first ticket that ran on this generation (earlier ones ran on older code) */
  uint64_t pause_ns;     /* time the kernel dispatched nothing during the switch (stop .. relaunched) */
  uint64_t build_ns;     /* compile + link of this generation (0 for a rollback) */
  uint64_t stop_ns;      /* of pause_ns: stopping the old kernel (its running tasks finish) */
  uint64_t load_ns;      /* of pause_ns: what was left of loading the new image once the kernel stopped */
  uint64_t launch_ns;    /* of pause_ns: launching the new kernel until every block runs */
  uint32_t compiled;     /* sources NVRTC compiled for it (cache hits do not count) */
  uint32_t linked;       /* 1 if nvJitLink ran, 0 if the image came from the cache */
  uint32_t changed;      /* 0: the call changed nothing (same content as the serving version): no switch */
  uint32_t retired;      /* older generations' images still loaded after the switch (see below) */
  uint64_t overlap_ns;   /* before the pause: the load ran this long while the old generation served */
  uint64_t unload_ns;    /* of pause_ns: unloading retired images (only past 64 MiB of them) */
} gpuos_generation;
/* The image before the previous one is retired, not unloaded at once: an unload, like a load, needs the
 * kernel stopped. Retired images are unloaded when the kernel parks (park_us idle), once the runtime has
 * been idle (no task in flight) for 20 ms, at gpuos_suspend and at shutdown; a switch that would keep more than 64 MiB of them
 * unloads the oldest inside its pause. */

/* Compiles the operator source file `path` and switches to a generation that serves it (replacing the
 * version loaded from the same path). `out` may be NULL. */
GPUOS_API gpuos_status gpuos_load_operator_file(gpuos_runtime* rt, const char* path, gpuos_generation* out);

/* Compiles the operator source files `paths[0..n)` (concurrently) and switches to ONE generation that serves
 * every one of them that compiles and links with the others. A source that does not is left out and
 * reported: *failed (may be NULL) receives the number left out, and gpuos_list_ops shows each one's
 * error (GPUOS_OP_KIND_FAILED rows). GPUOS_OK when the call did that (even if some were left out). */
GPUOS_API gpuos_status gpuos_load_operator_files(gpuos_runtime* rt, const char* const* paths, size_t n,
                                                 gpuos_generation* out, size_t* failed);

/* As gpuos_load_operator_file, from a string; `source_name` identifies it (for replacing it later and in
 * diagnostics). Quoted includes are searched in the working directory. */
GPUOS_API gpuos_status gpuos_load_operator_source(gpuos_runtime* rt, const char* source_name, const char* source,
                                                  size_t size, gpuos_generation* out);

/* Retires the operators of a loaded source: new submits of them fail at once, the tasks already
 * submitted finish, then a generation without them is switched to. An operator an alias points to
 * cannot be removed (GPUOS_ERR_INVALID_ARG). */
GPUOS_API gpuos_status gpuos_remove_operator_source(gpuos_runtime* rt, const char* source_name,
                                                    gpuos_generation* out);

/* Operator id of a built-in, loaded operator or alias, by name. GPUOS_ERR_INVALID_ARG if none is live. */
GPUOS_API gpuos_status gpuos_op_id(gpuos_runtime* rt, const char* name, uint32_t* id);

/* Points the logical operator `alias` at the operator `target` (creating the alias, with a new id, on
 * first use). Ordered with the tasks, no pause: tasks submitted before it run the old target, tasks
 * submitted after it the new one. All targets of an alias take the same argument struct size.
 * *ticket (may be NULL) is the switch's own place in the queue. */
GPUOS_API gpuos_status gpuos_alias_set(gpuos_runtime* rt, const char* alias, const char* target, uint64_t* ticket);

/* Points `alias` back at its previous target (ordered like gpuos_alias_set). */
GPUOS_API gpuos_status gpuos_alias_rollback(gpuos_runtime* rt, const char* alias, uint64_t* ticket);

/* Switches back to the previous generation (kept loaded: no compile, no load). Once per switch. */
GPUOS_API gpuos_status gpuos_generation_rollback(gpuos_runtime* rt, gpuos_generation* out);

/* The generation running now. */
GPUOS_API gpuos_status gpuos_get_generation(gpuos_runtime* rt, gpuos_generation* out);

typedef enum gpuos_op_kind {
  GPUOS_OP_KIND_BUILTIN = 0,
  GPUOS_OP_KIND_LOADED = 1, /* from an operator source */
  GPUOS_OP_KIND_ALIAS = 2,  /* a logical operator: runs `target` */
  GPUOS_OP_KIND_FAILED = 3  /* a source none of whose versions compiled: no operator (id is UINT32_MAX) */
} gpuos_op_kind;

typedef struct gpuos_op_info {
  char name[64];
  uint32_t id;         /* operator id for gpuos_task.op */
  uint32_t kind;       /* gpuos_op_kind */
  uint32_t arg_bytes;  /* size of its argument struct */
  uint32_t target;     /* alias: the operator id it runs now; else == id */
  uint64_t generation; /* generation its serving version came with (0: built in) */
  char source[256];    /* source name (path) of a loaded operator, "" otherwise */
  char error[1024];    /* "" when the latest version of its source serves; else why it did not (file:line) */
  uint64_t completed;  /* tasks submitted under this id that completed (ran or were rejected) */
  uint64_t failed;     /* ... of which the device rejected */
} gpuos_op_info;

/* Writes up to `capacity` rows (built-ins, loaded operators, aliases, failed sources) to `out` and the
 * number of rows there are to *count (call with capacity 0 to size). */
GPUOS_API gpuos_status gpuos_list_ops(gpuos_runtime* rt, gpuos_op_info* out, size_t capacity, size_t* count);

/* ---- operator directories ------------------------------------------------------------------------
 * gpuos_ops_dir_open loads every *.cu file of `dir` (compiled concurrently, one generation for all that
 * compile), then a thread of the runtime watches the directory: a file saved there (closed after
 * writing, or renamed into it) loads as a new generation once it has been quiet for `debounce_ms`; a
 * removed one retires its operators. Editor temporaries are ignored, and a save that changes nothing
 * loads nothing. A file that does not compile is refused: the version before keeps serving, and
 * gpuos_list_ops shows the error. `callback` (may be NULL) hears every load, refusal and removal, on the
 * watching thread; it must not call gpuos_ops_dir_close. The directory is the runtime's: gpuos_shutdown
 * and gpuos_destroy stop watching it; close it earlier with gpuos_ops_dir_close. */
typedef struct gpuos_ops_dir gpuos_ops_dir;
typedef enum gpuos_ops_dir_event_kind {
  GPUOS_OPS_DIR_LOADED = 0,  /* `path` serves (generation: the switch that made it live) */
  GPUOS_OPS_DIR_FAILED = 1,  /* `path` was refused (message: why, file:line); its last version serves */
  GPUOS_OPS_DIR_REMOVED = 2  /* `path` left the directory: its operators are retired */
} gpuos_ops_dir_event_kind;
typedef struct gpuos_ops_dir_event {
  uint32_t kind;               /* gpuos_ops_dir_event_kind */
  const char* path;            /* the source file */
  gpuos_generation generation; /* LOADED, REMOVED */
  const char* message;         /* FAILED: the compiler's or loader's diagnostics */
  double ms;                   /* the load or removal, from the event to the switch */
} gpuos_ops_dir_event;
typedef void (*gpuos_ops_dir_callback)(void* user, const gpuos_ops_dir_event* ev);
typedef struct gpuos_ops_dir_stats {
  uint64_t loads;      /* files loaded, at open and since */
  uint64_t failures;   /* loads refused */
  uint64_t removals;   /* files removed */
  uint64_t generation; /* the generation of the last load or removal */
  uint32_t failing;    /* sources of the runtime whose latest version does not serve now */
  uint32_t watching;   /* 1 while the directory is watched */
} gpuos_ops_dir_stats;

GPUOS_API gpuos_status gpuos_ops_dir_open(gpuos_runtime* rt, const char* dir, uint32_t debounce_ms,
                                          gpuos_ops_dir_callback callback, void* user, gpuos_ops_dir** out);
GPUOS_API gpuos_status gpuos_ops_dir_get_stats(gpuos_runtime* rt, gpuos_ops_dir* d, gpuos_ops_dir_stats* out);
/* Stops watching (a load in progress finishes first); the operators stay loaded. */
GPUOS_API gpuos_status gpuos_ops_dir_close(gpuos_runtime* rt, gpuos_ops_dir* d);

/* ---- task graphs ---------------------------------------------------------------------------------
 * Build a graph once (nodes: tasks; edges: "to runs after from"), instantiate it on a runtime, launch the
 * instance many times. A launch is one ticket: the resident kernel runs the nodes as their predecessors
 * complete (a node of many tiles spreads over the GPU as any task does) and the launch completes with its
 * last node; it can wait for tickets and be waited for like a task. Arguments of an instance's nodes can
 * change between launches (gpuos_graph_exec_set_args); a generation switch or an alias switch between
 * launches changes the code the next launch runs, as for tasks. A node that fails (its operator gone, its
 * arguments rejected) fails the launch (GPUOS_ERR_TASK_FAILED, naming the node); the nodes after it do
 * not run. Instances live in the device heap (gpuos_options.heap_bytes). */
typedef struct gpuos_graph gpuos_graph;
typedef struct gpuos_graph_exec gpuos_graph_exec;

GPUOS_API gpuos_status gpuos_graph_create(gpuos_graph** out);
/* NULL is a no-op. Instances made from the graph are not affected. */
GPUOS_API gpuos_status gpuos_graph_destroy(gpuos_graph* g);
/* Adds a node running `task` (its arguments are copied); *node receives its id (0, 1, ...). At most
 * 2^20 nodes. Operators are checked at instantiation. */
GPUOS_API gpuos_status gpuos_graph_add_node(gpuos_graph* g, const gpuos_task* task, uint32_t* node);
/* Node `to` runs after node `from` has completed. A cycle is refused at instantiation, naming its nodes. */
GPUOS_API gpuos_status gpuos_graph_add_edge(gpuos_graph* g, uint32_t from, uint32_t to);

/* Checks the graph (operators live with their argument sizes, no cycle) and uploads an instance of it.
 * GPUOS_ERR_OUT_OF_MEMORY: the device heap cannot hold it; GPUOS_ERR_UNAVAILABLE: no heap. */
GPUOS_API gpuos_status gpuos_graph_instantiate(gpuos_runtime* rt, const gpuos_graph* g, gpuos_graph_exec** out);
/* Sets node `node`'s arguments for the launches submitted after this call (same size as the node's). */
GPUOS_API gpuos_status gpuos_graph_exec_set_args(gpuos_runtime* rt, gpuos_graph_exec* e, uint32_t node,
                                                 const void* args, uint32_t arg_bytes);
/* Launches the instance after every ticket in after[0..n_after) and, with a lane, after the lane's
 * previous task; launches of one instance run one after the other. *ticket receives the launch's ticket.
 * A launch's argument updates wait in the staging ring (GPUOS_GRAPH_STAGING) until it runs: the call
 * blocks while the ring is full. */
GPUOS_API gpuos_status gpuos_graph_launch(gpuos_runtime* rt, gpuos_graph_exec* e, const uint64_t* after,
                                          size_t n_after, gpuos_lane* lane, uint64_t* ticket);
/* Launches the instance in a CUDA stream's order, as gpuos_submit_on_stream submits a task: after the
 * stream's earlier work, before its later work, and once per replay when the stream is captured. An
 * instance destroyed before the stream reaches the launch does not run (counted in the diagnosis). */
GPUOS_API gpuos_status gpuos_graph_launch_on_stream(gpuos_runtime* rt, gpuos_graph_exec* e, void* stream);
/* Waits for the instance's launches, then destroys it. Its memory returns to the device heap once the
 * kernel has been relaunched (a suspend, a generation switch, an idle unload; or at once when an
 * instantiation needs it). NULL is a no-op. Instances are freed by gpuos_destroy too. The wait is bounded
 * by GPUOS_DRAIN_STALL: GPUOS_ERR_TIMEOUT when the last launch has not completed by then (a node that
 * never returns, with no watchdog deadline), and the instance stays as it was. */
GPUOS_API gpuos_status gpuos_graph_exec_destroy(gpuos_runtime* rt, gpuos_graph_exec* e);

/* Library version string, the CUDA toolkit it was built with and the device arch of its image. */
GPUOS_API const char* gpuos_build_info(void);

#ifdef __cplusplus
}
/* The ABI's structs on LP64 (Linux x86-64 and aarch64): a layout change is an ABI change. */
static_assert(sizeof(gpuos_options) == 80, "ABI");
static_assert(sizeof(gpuos_task) == 24, "ABI");
static_assert(sizeof(gpuos_stats) == 48, "ABI");
static_assert(sizeof(gpuos_heap_stats) == 120, "ABI");
static_assert(sizeof(gpuos_device_info) == 304, "ABI");
static_assert(sizeof(gpuos_generation) == 88, "ABI");
static_assert(sizeof(gpuos_op_info) == 1384, "ABI");
static_assert(sizeof(gpuos_ops_dir_event) == 120, "ABI");
static_assert(sizeof(gpuos_ops_dir_stats) == 40, "ABI");
#endif

#endif /* GPUOS_GPUOS_H */
