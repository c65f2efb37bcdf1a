/* gpuos limits: the numbers an operator, an embedder and the resident kernel share.
 *
 * C-compatible, and compiled by nvcc and NVRTC alike (it includes nothing). */
#ifndef GPUOS_LIMITS_H
#define GPUOS_LIMITS_H

/* Threads per block of the resident kernel; every operator tile runs on exactly this many threads. */
#define GPUOS_BLOCK_THREADS 256u
/* Blocks of the resident kernel per SM its register budget is sized for (__launch_bounds__), and the
 * registers per thread that allows: every function the kernel can call (built-ins and operators linked
 * into a generation) is compiled within it. On an H100, 2 blocks x 128 registers beat 4 x 64 in every
 * benchmark measured (docs/benchmarks.md, Register budget): half as many blocks poll for a wide node's
 * predecessors, and an operator's loads in flight need not spill. */
#define GPUOS_MIN_BLOCKS_PER_SM 2u
#define GPUOS_MAX_REGISTERS 128u
/* Dynamic shared memory every tile may use (TileCtx::smem). */
#define GPUOS_TILE_SMEM_BYTES 8192u
/* Largest argument struct an operator may take (carried inline in the task). */
#define GPUOS_MAX_ARG_BYTES 88u
/* Operator ids are below this bound (the size of the jump table). */
#define GPUOS_MAX_OPS 256u
/* Largest tile count of one task; bigger problems loop inside the tile function. */
#define GPUOS_MAX_TILES (1u << 30)
/* Shortest watchdog deadline (ms) a runtime, an operator or a task may set; 0 means none of its own. The
 * watchdog sees calls every 5 ms, so a shorter one could not be kept. */
#define GPUOS_MIN_DEADLINE_MS 10u

#endif /* GPUOS_LIMITS_H */
