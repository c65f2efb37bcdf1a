// The host's side of the device heap: its memory (control block and pool, allocated and initialised at
// boot, before the first launch) and the requests gpuos_alloc / gpuos_free / stats / check make. The heap's
// metadata is the device's alone: every request is a task of the reserved operator GPUOS_OP_HEAP_CTL,
// served by the resident kernel, whose reply lands in mapped host memory (one record per request in
// flight, kReplySlots of them).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

#include "gpuos/gpuos.h"
#include "host/resident.hpp"
#include "host/submitter.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

/// How the runtime lays out a heap (also what the benchmarks measure gpuos's allocator at).
struct HeapGeometry {
  std::uint64_t bytes = 0;        ///< the pool, a multiple of 16
  std::uint64_t large_bytes = 0;  ///< the large arena at its end (0: none)
  std::uint32_t arenas = 0;       ///< small arenas
};
/// A quarter of a heap of 16 MiB or more is the large arena; the rest is `arenas` small arenas or, when
/// 0, 8 per SM but none below 1 MiB (docs/allocator.md). Throws Failure(GPUOS_ERR_INVALID_ARG) when a
/// small arena would get less than 4 KiB.
HeapGeometry heap_geometry(std::uint64_t heap_bytes, std::uint32_t arenas, std::uint32_t sm_count);

class HeapClient {
 public:
  static constexpr std::uint32_t kReplySlots = 64;

  /// Allocates the reply records and, when o.heap_bytes > 0, the heap, initialised by the boot image's
  /// kernels (`module`) on `stream`, laid out by heap_geometry().
  HeapClient(const gpuos_options& o, const gpuos_device_info& info, CUmodule module, CUstream stream);
  /// Frees the reply records (pinned memory); the device memory only through free_memory().
  ~HeapClient();
  HeapClient(const HeapClient&) = delete;
  HeapClient& operator=(const HeapClient&) = delete;

  /// The control block every launch passes to the kernel; nullptr without a heap.
  void* control() const { return reinterpret_cast<void*>(ctl_); }
  /// Frees the heap's device memory. Only once no kernel runs and the context is healthy.
  void free_memory() noexcept;

  void* alloc(Submitter& sub, ResidentKernel& k, std::uint64_t bytes, std::uint64_t align);
  void free(Submitter& sub, ResidentKernel& k, void* p);
  gpuos_heap_stats stats(Submitter& sub, ResidentKernel& k);
  /// Runs the device-side invariant checker; false with the first violation in `why`.
  bool check(Submitter& sub, ResidentKernel& k, std::string& why);

 private:
  /// One request through the ring; returns the device's reply.
  abi::HeapReply call(Submitter& sub, ResidentKernel& k, std::uint32_t cmd, std::uint64_t a, std::uint64_t b);

  std::uint64_t heap_bytes_ = 0;
  CUdeviceptr ctl_ = 0;
  CUdeviceptr pool_ = 0;
  abi::HeapReply* replies_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::uint32_t> free_replies_;
};

}  // namespace gpuos::detail
