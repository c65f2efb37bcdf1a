#include "host/heap_client.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

#include "common/wait.hpp"
#include "host/cu_check.hpp"
#include "host/driver.hpp"
#include "kernel/tlsf.hpp"  // layout sizes and status codes only: the metadata is the device's

namespace gpuos::detail {
namespace {

/// Automatic arena count: this many per SM (docs/allocator.md §7), each at least kMinAutoArena.
constexpr std::uint32_t kAutoArenasPerSm = 8;
constexpr std::uint64_t kMinAutoArena = 1ull << 20;
static_assert(GPUOS_HEAP_CHECKED == tlsf::kChecked, "heap_flags are passed to the device as they are");

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

HeapGeometry heap_geometry(std::uint64_t heap_bytes, std::uint32_t arenas, std::uint32_t sm_count) {
  HeapGeometry g;
  g.bytes = heap_bytes & ~15ull;
  g.large_bytes = g.bytes >= (16ull << 20) ? (g.bytes / 4) & ~(tlsf::kArenaGranule - 1) : 0;
  const std::uint64_t small = g.bytes - g.large_bytes;
  std::uint64_t n = arenas;
  if (n == 0)
    n = std::max<std::uint64_t>(1, std::min<std::uint64_t>(std::uint64_t(kAutoArenasPerSm) * sm_count,
                                                           small / kMinAutoArena));
  if (small / n < tlsf::kMinArenaBytes)
    fail(GPUOS_ERR_INVALID_ARG, "heap_arenas = " + std::to_string(n) + " leaves less than 4 KiB per arena of a " +
                                    std::to_string(g.bytes) + "-byte heap");
  g.arenas = static_cast<std::uint32_t>(n);
  return g;
}

HeapClient::HeapClient(const gpuos_options& o, const gpuos_device_info& info, CUmodule module, CUstream stream)
    : heap_bytes_(o.heap_bytes) {
  void* p = nullptr;
  GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, kReplySlots * sizeof(abi::HeapReply),
                                    CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  replies_ = static_cast<abi::HeapReply*>(p);
  std::memset(static_cast<void*>(replies_), 0, kReplySlots * sizeof(abi::HeapReply));
  for (std::uint32_t i = 0; i < kReplySlots; ++i) free_replies_.push_back(kReplySlots - 1 - i);
  if (o.heap_bytes == 0) return;

  try {
    const HeapGeometry geo = heap_geometry(o.heap_bytes, o.heap_arenas, static_cast<std::uint32_t>(info.sm_count));
    const std::uint64_t bytes = geo.bytes, large = geo.large_bytes, arenas = geo.arenas;
    GPUOS_CU_TRY(drv().cuMemAlloc(&ctl_, tlsf::control_bytes(static_cast<std::uint32_t>(arenas))));
    GPUOS_CU_TRY(drv().cuMemAlloc(&pool_, bytes));

    CUfunction layout = nullptr, init_arenas = nullptr;
    GPUOS_CU_TRY(drv().cuModuleGetFunction(&layout, module, "gpuos_heap_layout"));
    GPUOS_CU_TRY(drv().cuModuleGetFunction(&init_arenas, module, "gpuos_heap_init_arenas"));
    CUdeviceptr status_dev = 0;
    GPUOS_CU_TRY(drv().cuMemAlloc(&status_dev, sizeof(std::uint32_t)));
    struct FreeStatus {
      CUdeviceptr p;
      ~FreeStatus() { drv().cuMemFree(p); }
    } free_status{status_dev};
    unsigned long long pool_bytes = bytes, large_bytes = large;
    unsigned narenas = static_cast<unsigned>(arenas), flags = o.heap_flags & GPUOS_HEAP_CHECKED;
    void* layout_args[] = {&ctl_, &pool_, &pool_bytes, &narenas, &large_bytes, &flags, &status_dev};
    GPUOS_CU_TRY(drv().cuLaunchKernel(layout, 1, 1, 1, 1, 1, 1, 0, stream, layout_args, nullptr));
    std::uint32_t status = ~0u;
    GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(&status, status_dev, sizeof(status), stream));
    GPUOS_CU_TRY(drv().cuStreamSynchronize(stream));
    if (status != 0)
      fail(GPUOS_ERR_INTERNAL, "the device refused the heap layout (" + std::to_string(bytes) + " bytes, " +
                                   std::to_string(arenas) + " arenas): status " + std::to_string(status));
    void* init_args[] = {&ctl_};
    const unsigned blocks = static_cast<unsigned>((arenas + 1 + 127) / 128);
    GPUOS_CU_TRY(drv().cuLaunchKernel(init_arenas, blocks, 1, 1, 128, 1, 1, 0, stream, init_args, nullptr));
    GPUOS_CU_TRY(drv().cuStreamSynchronize(stream));
  } catch (...) {
    free_memory();
    drv().cuMemFreeHost(replies_);
    throw;
  }
}

HeapClient::~HeapClient() {
  if (replies_ && driver_loaded()) drv().cuMemFreeHost(replies_);
}

void HeapClient::free_memory() noexcept {
  if (!driver_loaded()) return;
  if (pool_) drv().cuMemFree(pool_);
  if (ctl_) drv().cuMemFree(ctl_);
  pool_ = ctl_ = 0;
}

abi::HeapReply HeapClient::call(Submitter& sub, ResidentKernel& k, std::uint32_t cmd, std::uint64_t a,
                                std::uint64_t b) {
  if (ctl_ == 0) fail(GPUOS_ERR_UNAVAILABLE, "the runtime has no heap (gpuos_options.heap_bytes is 0)");
  ResidentKernel::ServeGuard serving(k);
  std::uint32_t slot = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_replies_.empty(); });
    slot = free_replies_.back();
    free_replies_.pop_back();
  }
  struct Release {
    HeapClient& h;
    std::uint32_t slot;
    ~Release() {
      std::lock_guard<std::mutex> lock(h.mu_);
      h.free_replies_.push_back(slot);
      h.cv_.notify_one();
    }
  } release{*this, slot};
  abi::HeapReply* r = replies_ + slot;
  std::memset(static_cast<void*>(r), 0, sizeof(*r));
  r->status = ~0u;

  abi::HeapCtlArgs args{};
  args.cmd = cmd;
  args.a = a;
  args.b = b;
  args.reply = reinterpret_cast<std::uint64_t>(r);
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = static_cast<std::uint16_t>(GPUOS_OP_HEAP_CTL);
  p.arg_bytes = sizeof(args);
  p.tiles = 1;
  std::memcpy(p.args, &args, sizeof(args));
  const std::uint64_t ticket = sub.enqueue_one(p);
  std::string why;
  const gpuos_status s = sub.wait(ticket, common::Deadline::never(), why);
  if (s != GPUOS_OK) fail(s, "heap request: " + why);
  std::atomic_thread_fence(std::memory_order_acquire);
  abi::HeapReply out;
  std::memcpy(static_cast<void*>(&out), const_cast<const abi::HeapReply*>(r), sizeof(out));
  return out;
}

void* HeapClient::alloc(Submitter& sub, ResidentKernel& k, std::uint64_t bytes, std::uint64_t align) {
  if (align == 0) align = 16;
  const abi::HeapReply r = call(sub, k, abi::kHeapAlloc, bytes, align);
  switch (r.status) {
    case tlsf::kOk:
      return reinterpret_cast<void*>(r.ptr);
    case tlsf::kBadAlign:
      fail(GPUOS_ERR_INVALID_ARG, "alignment " + std::to_string(align) + " is not a power of two");
    case tlsf::kTooLarge:
      fail(GPUOS_ERR_OUT_OF_MEMORY, "a block of " + std::to_string(bytes) + " bytes (alignment " + std::to_string(align) +
                                        ") is larger than any arena of the " + std::to_string(heap_bytes_) +
                                        "-byte heap");
    case tlsf::kOutOfMemory:
      fail(GPUOS_ERR_OUT_OF_MEMORY, "the heap has no free block for " + std::to_string(bytes) + " bytes (alignment " +
                                        std::to_string(align) + "); see gpuos_heap_get_stats");
    default:
      fail(GPUOS_ERR_INTERNAL, "heap allocation failed with device status " + std::to_string(r.status));
  }
}

void HeapClient::free(Submitter& sub, ResidentKernel& k, void* p) {
  if (p == nullptr) return;
  const abi::HeapReply r = call(sub, k, abi::kHeapFree, reinterpret_cast<std::uint64_t>(p), 0);
  switch (r.status) {
    case tlsf::kOk:
      return;
    case tlsf::kForeign:
      fail(GPUOS_ERR_INVALID_ARG, "free of " + hex(reinterpret_cast<std::uint64_t>(p)) +
                                      ": not a block of the gpuos heap (refused, nothing changed)");
    case tlsf::kDoubleFree:
      fail(GPUOS_ERR_INVALID_ARG, "double free of " + hex(reinterpret_cast<std::uint64_t>(p)) + " (refused, nothing changed)");
    default:
      fail(GPUOS_ERR_INTERNAL, "heap free failed with device status " + std::to_string(r.status));
  }
}

gpuos_heap_stats HeapClient::stats(Submitter& sub, ResidentKernel& k) {
  const abi::HeapReply r = call(sub, k, abi::kHeapStats, 0, 0);
  if (r.status != tlsf::kOk) fail(GPUOS_ERR_INTERNAL, "heap stats failed with device status " + std::to_string(r.status));
  return r.stats;
}

bool HeapClient::check(Submitter& sub, ResidentKernel& k, std::string& why) {
  const abi::HeapReply r = call(sub, k, abi::kHeapCheck, 0, 0);
  if (r.check_ok) return true;
  why.assign(r.message, strnlen(r.message, sizeof(r.message)));
  return false;
}

}  // namespace gpuos::detail
