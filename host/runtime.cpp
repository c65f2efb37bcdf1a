#include "runtime.hpp"

#include <immintrin.h>

#include <algorithm>
#include <iterator>
#include <string_view>
#include <utility>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "../kernel/tlsf.hpp"  // layout sizes and status codes only: the metadata is the device's
#include "driver.hpp"
#include "error.hpp"
#include "hotpatch.hpp"

extern "C" {
extern const unsigned char gpuos_image_cubin[];
extern const size_t gpuos_image_cubin_size;
}

namespace gpuos::detail {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMinHeap = 1ull << 20;
constexpr uint32_t kMaxHeapArenas = tlsf::kMaxArenas;
/// Heap requests in flight at once (each has its reply record in mapped host memory).
constexpr uint32_t kReplySlots = 64;
/// Automatic arena count: this many per SM (docs/allocator.md: the sweep), each at least kMinAutoArena.
constexpr uint32_t kAutoArenasPerSm = 8;
constexpr uint64_t kMinAutoArena = 1ull << 20;
/// Default DeviceState::pace_limit_ns: about one poll round trip (docs/benchmarks.md, pacing).
constexpr uint32_t kDefaultPaceLimitNs = 1200;
static_assert(GPUOS_HEAP_CHECKED == tlsf::kChecked, "heap_flags are passed to the device as they are");


/// Makes the runtime's context current on the calling thread (driver calls need it).
struct CtxScope {
  explicit CtxScope(CUcontext c) { GPUOS_CU_TRY(drv().cuCtxSetCurrent(c)); }
};

CUdevice pick_device(int ordinal) {
  int count = 0;
  GPUOS_CU_TRY(drv().cuDeviceGetCount(&count));
  if (count == 0) fail(GPUOS_ERR_NO_DEVICE, "no CUDA device is visible");
  if (ordinal < 0 || ordinal >= count)
    fail(GPUOS_ERR_NO_DEVICE,
         "device " + std::to_string(ordinal) + " does not exist (" + std::to_string(count) + " visible)");
  CUdevice d = 0;
  GPUOS_CU_TRY(drv().cuDeviceGet(&d, ordinal));
  return d;
}

int attr(CUdevice d, CUdevice_attribute a) {
  int v = 0;
  GPUOS_CU_TRY(drv().cuDeviceGetAttribute(&v, a, d));
  return v;
}

void validate_options(const gpuos_options& o) {
  if (o.struct_size != sizeof(gpuos_options))
    fail(GPUOS_ERR_INVALID_ARG, "gpuos_options.struct_size is " + std::to_string(o.struct_size) +
                                    ", expected " + std::to_string(sizeof(gpuos_options)) +
                                    " (call gpuos_options_init)");
  const uint32_t c = o.queue_capacity;
  if (c < 64 || c > (1u << 22) || (c & (c - 1)) != 0)
    fail(GPUOS_ERR_INVALID_ARG,
         "queue_capacity must be a power of two in [64, 4194304], got " + std::to_string(c));
  if (o.heap_bytes != 0 && (o.heap_bytes < kMinHeap || o.heap_bytes >= (1ull << 48)))
    fail(GPUOS_ERR_INVALID_ARG, "heap_bytes must be 0 (no heap) or in [1 MiB, 256 TiB), got " +
                                    std::to_string(o.heap_bytes));
  if (o.heap_arenas > kMaxHeapArenas)
    fail(GPUOS_ERR_INVALID_ARG, "heap_arenas must be at most " + std::to_string(kMaxHeapArenas) + ", got " +
                                    std::to_string(o.heap_arenas));
  if (o.heap_flags & ~GPUOS_HEAP_CHECKED)
    fail(GPUOS_ERR_INVALID_ARG, "heap_flags has unknown bits: " + std::to_string(o.heap_flags));
}

/// Name of an operator id for messages.
std::string op_label(uint32_t id) {
  std::string s = id < GPUOS_BUILTIN_OP_COUNT ? gpuos_builtin_op_name(id) : std::to_string(id);
  return id < GPUOS_BUILTIN_OP_COUNT ? "'" + s + "'" : s.insert(0, 1, '#');
}

/// Checks the device can run the image and fills everything but the grid.
void describe(CUdevice d, int ordinal, gpuos_device_info& info) {
  info = {};
  info.ordinal = ordinal;
  GPUOS_CU_TRY(drv().cuDeviceGetName(info.name, sizeof(info.name) - 1, d));
  info.cc_major = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.block_threads = GPUOS_BLOCK_THREADS;
  size_t mem = 0;
  GPUOS_CU_TRY(drv().cuDeviceTotalMem(&mem, d));
  info.total_mem = mem;
  info.driver_version = drv().version;
}

void check_device_supported(CUdevice d, const gpuos_device_info& info) {
  if (info.cc_major * 10 + info.cc_minor != GPUOS_CUDA_ARCH)
    fail(GPUOS_ERR_UNSUPPORTED, std::string("device '") + info.name + "' is compute capability " +
                                    std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) +
                                    "; this build of gpuos carries code for sm_" +
                                    std::to_string(GPUOS_CUDA_ARCH) + " only (rebuild with -Dgpu_arch=" +
                                    std::to_string(info.cc_major * 10 + info.cc_minor) + ")");
  if (!attr(d, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH))
    fail(GPUOS_ERR_UNSUPPORTED, std::string("device '") + info.name + "' does not support cooperative launch");
  if (!attr(d, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) || !attr(d, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING))
    fail(GPUOS_ERR_UNSUPPORTED, std::string("device '") + info.name + "' cannot map host memory");
}

/// Loads the embedded image and checks its ABI version. Needs an idle device (no resident kernel).
CUmodule load_image(CUfunction& fn) {
  CUmodule m = nullptr;
  GPUOS_CU_TRY(drv().cuModuleLoadData(&m, gpuos_image_cubin));
  CUdeviceptr v = 0;
  size_t bytes = 0;
  GPUOS_CU_TRY(drv().cuModuleGetGlobal(&v, &bytes, m, "gpuos_image_abi_version"));
  unsigned int abi = 0;
  GPUOS_CU_TRY(drv().cuMemcpyDtoH(&abi, v, sizeof(abi)));
  if (abi != GPUOS_ABI_VERSION) {
    drv().cuModuleUnload(m);
    fail(GPUOS_ERR_INTERNAL, "device image ABI version " + std::to_string(abi) + " != host ABI version " +
                                 std::to_string(GPUOS_ABI_VERSION));
  }
  GPUOS_CU_TRY(drv().cuModuleGetFunction(&fn, m, "gpuos_main"));
  return m;
}

}  // namespace

/// Gives the resident kernel just the shared memory its GPUOS_MIN_BLOCKS_PER_SM blocks need and the rest
/// of each SM's unified memory as L1. Operators are called through the jump table, and a callee saves
/// and restores the registers it uses through the stack on every call: with the driver's default
/// carve-out (an H100 chose 100 KB of shared memory), that stack traffic spilled from L1 to L2 and DRAM
/// (docs/benchmarks.md, Large task). GPUOS_CARVEOUT=default leaves the choice to the driver.
CUresult prefer_l1(CUfunction fn, int ordinal) {
  if (const char* c = std::getenv("GPUOS_CARVEOUT"); c && std::strcmp(c, "default") == 0) return CUDA_SUCCESS;
  CUdevice d = 0;
  int smem = 0, reserved = 0, per_sm_max = 0;
  CUresult r = drv().cuDeviceGet(&d, ordinal);
  if (r == CUDA_SUCCESS) r = drv().cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
  if (r == CUDA_SUCCESS)
    r = drv().cuDeviceGetAttribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, d);
  if (r == CUDA_SUCCESS)
    r = drv().cuDeviceGetAttribute(&per_sm_max, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, d);
  if (r != CUDA_SUCCESS || per_sm_max <= 0) return r;
  const long long need = static_cast<long long>(smem + reserved) * GPUOS_MIN_BLOCKS_PER_SM;
  const long long pct = std::min<long long>(100, (need * 100 + per_sm_max - 1) / per_sm_max);
  return drv().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, static_cast<int>(pct));
}

namespace {

/// A tuning environment variable: nothing when unset or empty, else its value, an integer in [lo, hi]
/// (or "off", read as 0, where `off_ok`); anything else is an error that names the variable.
std::optional<uint32_t> tuning_env(const char* name, long lo, long hi, bool off_ok = false) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  if (off_ok && std::strcmp(v, "off") == 0) return 0u;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < lo || n > hi)
    fail(GPUOS_ERR_INVALID_ARG, std::string(name) + " must be " + (off_ok ? "'off' or " : "") + "an integer in [" +
                                    std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'");
  return static_cast<uint32_t>(n);
}

/// Blocks the kernel runs with: occupancy x SMs allowed by the budget.
uint32_t grid_for(CUfunction fn, const gpuos_options& o, gpuos_device_info& info) {
  GPUOS_CU_TRY(prefer_l1(fn, o.device));
  int per_sm = 0;
  GPUOS_CU_TRY(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, GPUOS_BLOCK_THREADS, 0));
  if (o.blocks_per_sm != 0) per_sm = std::min<int>(per_sm, static_cast<int>(o.blocks_per_sm));
  const int sms = o.sm_budget == 0 ? info.sm_count : std::min<int>(info.sm_count, static_cast<int>(o.sm_budget));
  info.blocks_per_sm = per_sm;
  info.grid_blocks = per_sm * sms;
  if (info.grid_blocks < 2)
    fail(GPUOS_ERR_UNSUPPORTED, "the resident kernel needs at least 2 co-resident blocks (front end + worker); "
                                "the occupancy calculator allows " + std::to_string(info.grid_blocks));
  return static_cast<uint32_t>(info.grid_blocks);
}

inline uint64_t load_host_u64(const uint64_t& x) {
  return __atomic_load_n(&x, __ATOMIC_ACQUIRE);
}

}  // namespace


gpuos_device_info describe_device(const gpuos_options& o) {
  validate_options(o);
  load_driver();
  const CUdevice d = pick_device(o.device);
  gpuos_device_info info;
  describe(d, o.device, info);
  check_device_supported(d, info);
  CUcontext ctx = nullptr;
  GPUOS_CU_TRY(drv().cuDevicePrimaryCtxRetain(&ctx, d));
  struct Release {
    CUdevice d;
    ~Release() { drv().cuDevicePrimaryCtxRelease(d); }
  } release{d};
  CtxScope scope(ctx);
  CUfunction fn = nullptr;
  CUmodule m = load_image(fn);
  struct Unload {
    CUmodule m;
    ~Unload() { drv().cuModuleUnload(m); }
  } unload{m};
  grid_for(fn, o, info);
  return info;
}

// ---- lifetime ---------------------------------------------------------------------------------------
Runtime::Runtime(const gpuos_options& o) : opts_(o) {
  validate_options(o);
  load_driver();
  dev_ = pick_device(o.device);
  describe(dev_, o.device, info_);
  check_device_supported(dev_, info_);
  // Tuning: how the driver's own threads wait for the GPU, as the primary context's scheduling flag
  // (GPUOS_CTX_SCHED: auto, spin, yield, blocking; unset: the driver's default). A generation switch
  // waits in the driver for its module load, which finishes only after the old kernel's exit
  // (docs/benchmarks.md, sixth session: yield had the fewest slow switches, blocking a longer p50).
  if (const char* v = std::getenv("GPUOS_CTX_SCHED"); v && *v) {
    static constexpr std::pair<std::string_view, CUctx_flags> kModes[] = {
        {"auto", CU_CTX_SCHED_AUTO}, {"spin", CU_CTX_SCHED_SPIN}, {"yield", CU_CTX_SCHED_YIELD},
        {"blocking", CU_CTX_SCHED_BLOCKING_SYNC}};
    const auto* it = std::find_if(std::begin(kModes), std::end(kModes), [&](const auto& m) { return m.first == v; });
    if (it == std::end(kModes))
      fail(GPUOS_ERR_INVALID_ARG, std::string("GPUOS_CTX_SCHED must be auto, spin, yield or blocking, got '") + v + "'");
    GPUOS_CU_TRY(drv().cuDevicePrimaryCtxSetFlags(dev_, it->second));
  }
  GPUOS_CU_TRY(drv().cuDevicePrimaryCtxRetain(&ctx_, dev_));
  try {
    CtxScope scope(ctx_);
    module_ = load_image(kernel_);
    image_bytes_ = gpuos_image_cubin_size;
    accept_image_ops();
    grid_ = grid_for(kernel_, o, info_);
    GPUOS_CU_TRY(drv().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));

    const uint64_t cap = o.queue_capacity;
    uint32_t log2 = 0;
    while ((1ull << log2) < cap) ++log2;
    void* p = nullptr;
    const unsigned flags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;
    GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, cap * sizeof(abi::Slot), flags));
    ring_ = static_cast<abi::Slot*>(p);
    GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, cap * sizeof(abi::Completion), flags));
    completions_ = static_cast<abi::Completion*>(p);
    GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, sizeof(abi::HostControl), flags));
    control_ = static_cast<abi::HostControl*>(p);
    GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, sizeof(abi::DeviceState), CU_MEMHOSTALLOC_PORTABLE));
    stop_snapshot_ = static_cast<abi::DeviceState*>(p);
    std::memset(ring_, 0, cap * sizeof(abi::Slot));
    std::memset(completions_, 0, cap * sizeof(abi::Completion));
    std::memset(control_, 0, sizeof(abi::HostControl));

    GPUOS_CU_TRY(drv().cuMemAlloc(&state_, sizeof(abi::DeviceState)));
    GPUOS_CU_TRY(drv().cuMemAlloc(&dq_, cap * sizeof(abi::DqEntry)));
    GPUOS_CU_TRY(drv().cuMemsetD8Async(state_, 0, sizeof(abi::DeviceState), stream_));
    GPUOS_CU_TRY(drv().cuMemsetD8Async(dq_, 0, cap * sizeof(abi::DqEntry), stream_));
    if (const char* t = std::getenv("GPUOS_TRACE"); t && *t && *t != '0') {
      // Front-end flight recorder (diagnostics): its address goes into DeviceState::trace.
      GPUOS_CU_TRY(drv().cuMemAlloc(&trace_, abi::kTraceRecords * abi::kTraceWords * sizeof(uint64_t)));
      GPUOS_CU_TRY(drv().cuMemsetD8Async(trace_, 0, abi::kTraceRecords * abi::kTraceWords * sizeof(uint64_t), stream_));
      GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(state_ + offsetof(abi::DeviceState, trace), &trace_, sizeof(trace_), stream_));
    }
    // Tuning: most tiles a worker claims at once for a large task (DeviceState::max_batch, 1..64;
    // unset: the kernel's default).
    if (const auto mb = tuning_env("GPUOS_TILE_BATCH", 1, 64))
      GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(state_ + offsetof(abi::DeviceState, max_batch), &*mb, sizeof(*mb), stream_));
    // Tuning (DeviceState): a large task's claims take rem / (GPUOS_CLAIM_SPREAD x grid) tiles (1..64;
    // unset: the kernel's default, 64); GPUOS_CLAIM_AHEAD=0 makes the scheduler claim after each batch,
    // one operator call per batch, instead of the claiming adapter (a diagnostic).
    if (const auto cs = tuning_env("GPUOS_CLAIM_SPREAD", 1, 64))
      GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(state_ + offsetof(abi::DeviceState, claim_spread), &*cs, sizeof(*cs), stream_));
    if (const auto ca = tuning_env("GPUOS_CLAIM_AHEAD", 0, 1)) {
      const uint32_t off = *ca == 0 ? 1u : 0u;
      GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(state_ + offsetof(abi::DeviceState, claim_ahead_off), &off, sizeof(off), stream_));
    }
    // Pacing of the front end's poll after a lone task (DeviceState::pace_limit_ns): on unless
    // GPUOS_POLL_PACE says "off" or gives another limit in ns (0..4000).
    const uint32_t pace = tuning_env("GPUOS_POLL_PACE", 0, 4000, true).value_or(kDefaultPaceLimitNs);
    GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(state_ + offsetof(abi::DeviceState, pace_limit_ns), &pace, sizeof(pace), stream_));
    // Alias table: identity (every logical id runs the operator in its own slot).
    uint16_t alias[GPUOS_MAX_OPS];
    for (uint32_t i = 0; i < GPUOS_MAX_OPS; ++i) alias[i] = static_cast<uint16_t>(i);
    GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(state_ + offsetof(abi::DeviceState, alias), alias, sizeof(alias), stream_));
    GPUOS_CU_TRY(drv().cuStreamSynchronize(stream_));
    init_heap();

    queue_ = std::make_unique<SubmitQueue>(ring_, completions_, log2);
    launch();
    monitor_ = std::thread([this] { monitor_loop(); });
  } catch (...) {
    shutdown();
    throw;
  }
}

Runtime::~Runtime() { shutdown(); }

void Runtime::close() {
  std::lock_guard<std::mutex> lock(close_mutex_);
  if (closed_) return;
  closing_.store(true, std::memory_order_seq_cst);
  // Submitters that got past the closing check finish publishing; later ones see UNAVAILABLE.
  while (active_submitters_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  if (queue_ && !faulted_.load()) {
    {
      // Under the control lock: the monitor's idle unload of retired images stops and relaunches the
      // kernel while holding it, and the state reads Suspended in between. Read unlocked, that state
      // made a close in that window relaunch a running kernel ("not suspended"), after which the
      // destructor's frees waited for the still-running kernel for ever. The monitor starts no new
      // unload once closing_ is set.
      std::lock_guard<std::mutex> cl(control_mutex_);
      if (state_flag_.load() == State::Suspended) {
        CtxScope scope(ctx_);
        launch();
      }
    }
    std::string why;
    drain(-1, why);
  }
  monitor_stop_.store(true);
  if (monitor_.joinable()) monitor_.join();
  if (ctx_ && state_flag_.load() == State::Running) {
    CtxScope scope(ctx_);
    std::lock_guard<std::mutex> cl(control_mutex_);
    stop_kernel(30.0);
  } else if (ctx_ && faulted_.load()) {
    // A failure the host declared (not the device's) can leave the kernel running; stop it, or the
    // frees at shutdown would wait for it for ever.
    CtxScope scope(ctx_);
    std::lock_guard<std::mutex> cl(control_mutex_);
    stop_if_running(5.0);
  }
  if (state_flag_.load() != State::Faulted) state_flag_.store(State::Stopped);
  closed_ = true;
}

bool Runtime::stop_if_running(double timeout_s) {
  if (!stream_ || !control_) return true;
  CUresult r = drv().cuStreamQuery(stream_);
  if (r != CUDA_ERROR_NOT_READY) return true;  // idle, or a sticky device error: nothing runs
  __atomic_store_n(&control_->stop_run, run_id_, __ATOMIC_RELEASE);
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while ((r = drv().cuStreamQuery(stream_)) == CUDA_ERROR_NOT_READY && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  return r != CUDA_ERROR_NOT_READY;
}

void Runtime::shutdown() noexcept {
  try {
    close();
  } catch (...) {
    // Best effort: a kernel that cannot be stopped keeps its memory (freeing it would block).
  }
  monitor_stop_.store(true);
  if (monitor_.joinable()) monitor_.join();
  if (!driver_loaded() || !ctx_) return;
  drv().cuCtxSetCurrent(ctx_);
  // Pinned and device memory can only be freed once no kernel runs (the frees would wait for it for
  // ever): a kernel that would not stop keeps everything, context included.
  if (!stop_if_running(5.0)) return;
  if (state_flag_.load() == State::Running) state_flag_.store(State::Stopped);  // none runs now
  const bool faulted = faulted_.load();
  // Freeing device memory needs an idle device: only once the kernel has exited.
  if (!faulted && state_flag_.load() != State::Running) {
    if (dq_) drv().cuMemFree(dq_);
    if (state_) drv().cuMemFree(state_);
    if (trace_) drv().cuMemFree(trace_);
    if (heap_pool_) drv().cuMemFree(heap_pool_);
    if (heap_ctl_) drv().cuMemFree(heap_ctl_);
    if (module_) drv().cuModuleUnload(module_);
    if (prev_.module) drv().cuModuleUnload(prev_.module);
    for (const Image& r : retired_) drv().cuModuleUnload(r.module);
    retired_.clear();
    if (stream_) drv().cuStreamDestroy(stream_);
    if (diag_stream_) drv().cuStreamDestroy(diag_stream_);
  }
  if (ring_) drv().cuMemFreeHost(ring_);
  if (completions_) drv().cuMemFreeHost(completions_);
  if (control_) drv().cuMemFreeHost(control_);
  if (stop_snapshot_) drv().cuMemFreeHost(stop_snapshot_);
  stop_snapshot_ = nullptr;
  if (replies_) drv().cuMemFreeHost(replies_);
  replies_ = nullptr;
  ring_ = nullptr;
  completions_ = nullptr;
  control_ = nullptr;
  // A sticky fault leaves the primary context unusable for everyone in the process: reset it (which
  // destroys it; the next retain creates a fresh one) so that a new runtime can start over.
  if (faulted) {
    drv().cuCtxSetCurrent(nullptr);
    drv().cuDevicePrimaryCtxReset(dev_);
  }
  drv().cuDevicePrimaryCtxRelease(dev_);
  ctx_ = nullptr;
}

// ---- kernel launch and stop -------------------------------------------------------------------------
void Runtime::launch() {
  const uint64_t run = ++run_id_;
  abi::LaunchParams lp{};
  lp.ring = ring_;
  lp.completions = completions_;
  lp.control = control_;
  lp.state = reinterpret_cast<abi::DeviceState*>(state_);
  lp.dq = reinterpret_cast<abi::DqEntry*>(dq_);
  lp.run_id = run;
  lp.log2_capacity = queue_->log2_capacity();
  lp.abi_version = GPUOS_ABI_VERSION;
  lp.heap = reinterpret_cast<void*>(heap_ctl_);
  void* args[] = {&lp};
  GPUOS_CU_TRY(drv().cuLaunchCooperativeKernel(kernel_, grid_, 1, 1, GPUOS_BLOCK_THREADS, 1, 1, 0, stream_, args));
  ++launches_;
  // Wait until every block is resident and the front end runs (it writes started_run after grid sync).
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  const auto spin_until = Clock::now() + std::chrono::milliseconds(5);
  while (load_host_u64(control_->started_run) != run) {
    const CUresult r = drv().cuStreamQuery(stream_);
    if (r != CUDA_ERROR_NOT_READY) {
      if (r == CUDA_SUCCESS) fail(GPUOS_ERR_INTERNAL, "the resident kernel exited right after launch");
      cu_check(r, "resident kernel start", __FILE__, __LINE__);
    }
    if (Clock::now() > deadline) fail(GPUOS_ERR_INTERNAL, "the resident kernel did not start within 30 s");
    // A start takes tens of microseconds: spin briefly (a generation switch pauses serving meanwhile;
    // a yield can cost a whole scheduler time slice on a busy host).
    if (Clock::now() < spin_until)
      _mm_pause();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  state_flag_.store(State::Running);
  check_stopped_state();  // the previous stop's snapshot preceded this launch on the stream
}

void Runtime::stop_kernel(double timeout_s) {
  __atomic_store_n(&control_->stop_run, run_id_, __ATOMIC_RELEASE);
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(timeout_s);
  const auto spin_until = t0 + std::chrono::milliseconds(5);
  // Where a stop's time goes (diagnostics, GPUOS_SWITCH_TRACE): the front end saw the request, the last
  // block left, the driver said the stream is idle; and the longest single query (a driver call can
  // wait on a lock another thread holds, e.g. a module load).
  last_stop_ = StopTiming{};
  auto since = [&] { return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count()); };
  for (;;) {
    if (!last_stop_.seen_ns && __atomic_load_n(&control_->stop_seen_run, __ATOMIC_ACQUIRE) == run_id_)
      last_stop_.seen_ns = since();
    if (!last_stop_.drained_ns && __atomic_load_n(&control_->drained_run, __ATOMIC_ACQUIRE) == run_id_)
      last_stop_.drained_ns = since();
    const uint64_t q0 = since();
    const CUresult r = drv().cuStreamQuery(stream_);
    last_stop_.max_query_ns = std::max(last_stop_.max_query_ns, since() - q0);
    ++last_stop_.queries;
    if (r == CUDA_SUCCESS) {
      last_stop_.done_ns = since();
      break;
    }
    if (r != CUDA_ERROR_NOT_READY) {
      set_fault("the resident kernel failed: " + cu_error_name(r));
      cu_check(r, "resident kernel stop", __FILE__, __LINE__);
    }
    if (Clock::now() > deadline)
      fail(GPUOS_ERR_INTERNAL, "the resident kernel did not stop within " + std::to_string(timeout_s) +
                                   " s (a task may be stuck in an operator)");
    // Spin for the first milliseconds (a stop usually takes microseconds), then sleep. Not a yield:
    // measured under load (bench_hotpatch, 4 submitting threads), a yield here cost up to 2.7 ms.
    if (Clock::now() < spin_until)
      _mm_pause();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  state_flag_.store(State::Suspended);
  // Snapshot the scheduler state for the stop-time checks without waiting for it: the copy is ordered
  // after the exited kernel and before the next launch on the same stream, so it costs the serving
  // pause nothing; check_stopped_state() reads it once that launch has started (or after a sync).
  GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(stop_snapshot_, state_, sizeof(abi::DeviceState), stream_));
  snapshot_pending_ = true;
}

void Runtime::check_stopped_state() {
  // Invariants that hold after every clean stop; a violation is a scheduler bug, kept for diagnose()
  // rather than hidden. Precondition: the snapshot copy has completed (control_mutex_ held).
  if (!snapshot_pending_) return;
  snapshot_pending_ = false;
  const abi::DeviceState ds = *stop_snapshot_;
  const uint64_t issued = queue_->issued();
  std::string bad;
  auto u = [](uint64_t v) { return std::to_string(v); };
  if (ds.closed != 1) bad += " closed=" + u(ds.closed);
  if (ds.exit_head != ds.head) bad += " exit_head=" + u(ds.exit_head) + "!=head=" + u(ds.head);
  if (ds.head > issued) bad += " head=" + u(ds.head) + ">issued=" + u(issued);
  if (ds.start_head != last_exit_head_) bad += " start_head=" + u(ds.start_head) + "!=previous exit_head=" + u(last_exit_head_);
  last_exit_head_ = ds.head;
  if (!bad.empty()) {
    std::lock_guard<std::mutex> lock(diag_mutex_);
    anomalies_.push_back("run " + u(run_id_) + " (launch " + u(ds.launches) + "):" + bad);
  }
}

void Runtime::suspend() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  check_usable();
  if (closing_.load()) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is shut down");
  if (state_flag_.load() != State::Running) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is not running");
  CtxScope scope(ctx_);
  stop_kernel(30.0);
  unload_retired();  // the device is idle anyway
}

void Runtime::unload_retired() {
  for (const Image& r : retired_) GPUOS_CU_TRY(drv().cuModuleUnload(r.module));
  retired_.clear();
  retired_bytes_ = 0;
}

void Runtime::reclaim_retired_if_idle() {
  // Called by the monitor once no task has been in flight for a while: a stop, the unloads and a
  // relaunch. A task submitted meanwhile waits in the ring (delayed, never lost).
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || retired_.empty() || state_flag_.load() != State::Running || closing_.load()) return;
  if (queue_->issued() != queue_->retired()) return;
  try {
    stop_kernel(30.0);
    unload_retired();
    launch();
  } catch (const std::exception& e) {
    set_fault(std::string("unloading retired generations while idle: ") + e.what());
  }
}

void Runtime::resume() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  check_usable();
  if (closed_) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is shut down");
  if (state_flag_.load() != State::Suspended) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is not suspended");
  CtxScope scope(ctx_);
  launch();
}

// ---- faults -------------------------------------------------------------------------------------------
void Runtime::set_fault(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(fault_mutex_);
    if (faulted_.load()) return;
    fault_message_ = why;
  }
  state_flag_.store(State::Faulted);
  faulted_.store(true);
}

void Runtime::check_usable() const {
  if (faulted_.load()) {
    std::lock_guard<std::mutex> lock(fault_mutex_);
    fail(GPUOS_ERR_DEVICE_FAULT, fault_message_);
  }
}

void Runtime::monitor_loop() {
  // Reaps completions so the ring keeps room, and watches the kernel: a sticky fault (or an exit
  // nobody asked for) fails every pending task at once instead of leaving waiters hanging.
  // Also unloads retired generations (host/hotpatch.cpp) once the runtime has been idle for kIdleReclaim.
  if (drv().cuCtxSetCurrent(ctx_) != CUDA_SUCCESS) return;
  constexpr auto kIdleReclaim = std::chrono::milliseconds(20);
  auto next_query = Clock::now();
  uint64_t seen_issued = ~0ull, seen_switches = 0;
  auto quiet_since = Clock::now();
  while (!monitor_stop_.load()) {
    queue_->reap();
    const auto now = Clock::now();
    if (now >= next_query) {
      next_query = now + std::chrono::milliseconds(1);
      const uint64_t issued = queue_->issued(), switches = switches_.load();
      if (issued != seen_issued || switches != seen_switches || issued != queue_->retired()) {
        seen_issued = issued;
        seen_switches = switches;
        quiet_since = now;
      } else if (now - quiet_since >= kIdleReclaim) {
        reclaim_retired_if_idle();
        quiet_since = now;
      }
      const State s = state_flag_.load();
      if (s == State::Running) {
        std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
        if (lock.owns_lock() && state_flag_.load() == State::Running) {
          const CUresult r = drv().cuStreamQuery(stream_);
          if (r == CUDA_SUCCESS)
            set_fault("the resident kernel exited without being asked to");
          else if (r != CUDA_ERROR_NOT_READY)
            set_fault("the device faulted: " + cu_error_name(r) + "; every pending task failed");
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// ---- submit / wait ------------------------------------------------------------------------------------
bool Runtime::submit(const gpuos_task* tasks, size_t n, bool blocking, uint64_t& first) {
  if (!tasks) fail(GPUOS_ERR_INVALID_ARG, "task is NULL");
  if (n == 0) fail(GPUOS_ERR_INVALID_ARG, "empty batch");
  if (n > queue_->capacity())
    fail(GPUOS_ERR_INVALID_ARG, "batch of " + std::to_string(n) + " tasks exceeds the queue capacity " +
                                    std::to_string(queue_->capacity()));
  // Validate everything before reserving: a reserved ticket must be published.
  abi::Payload one;
  std::vector<abi::Payload> many;
  abi::Payload* payloads = &one;
  if (n > 1) {
    many.resize(n);
    payloads = many.data();
  }
  for (size_t i = 0; i < n; ++i) {
    const gpuos_task& t = tasks[i];
    auto where = [&] { return n > 1 ? "task " + std::to_string(i) + ": " : std::string(); };
    if (t.op == GPUOS_OP_HEAP_CTL)
      fail(GPUOS_ERR_INVALID_ARG, where() + "operator id " + std::to_string(t.op) +
                                      " is reserved for the runtime's heap requests (use gpuos_alloc / gpuos_free)");
    // Built-ins, loaded operators and aliases (accept_ is updated by host/hotpatch.cpp).
    const uint32_t acc = t.op < GPUOS_MAX_OPS ? accept_[t.op].load(std::memory_order_acquire) : 0u;
    if (!(acc & kAccept)) fail(GPUOS_ERR_INVALID_ARG, where() + "unknown operator id " + std::to_string(t.op));
    if (t.arg_bytes > GPUOS_MAX_ARG_BYTES)
      fail(GPUOS_ERR_INVALID_ARG, where() + "arguments of " + std::to_string(t.arg_bytes) + " bytes exceed " +
                                      std::to_string(GPUOS_MAX_ARG_BYTES));
    const uint32_t want = acc & ~kAccept;
    if (t.arg_bytes != want) {
      fail(GPUOS_ERR_INVALID_ARG, where() + "operator " + op_label(t.op) + " takes " + std::to_string(want) +
                                      " bytes of arguments, got " + std::to_string(t.arg_bytes));
    }
    if (t.arg_bytes != 0 && !t.args) fail(GPUOS_ERR_INVALID_ARG, where() + "args is NULL");
    if (t.tiles == 0 || t.tiles > GPUOS_MAX_TILES)
      fail(GPUOS_ERR_INVALID_ARG, where() + "tiles must be in [1, 2^30], got " + std::to_string(t.tiles));
    abi::Payload& p = payloads[i];
    std::memset(&p, 0, sizeof(p));
    p.op = static_cast<uint16_t>(t.op);
    p.arg_bytes = static_cast<uint8_t>(t.arg_bytes);  // <= GPUOS_MAX_ARG_BYTES, checked above
    p.tiles = t.tiles;
    if (t.arg_bytes) std::memcpy(p.args, t.args, t.arg_bytes);
  }
  return enqueue(payloads, static_cast<uint32_t>(n), blocking, first);
}

bool Runtime::enqueue(const abi::Payload* payloads, uint32_t count, bool blocking, uint64_t& first) {
  struct Active {
    std::atomic<int>& n;
    explicit Active(std::atomic<int>& c) : n(c) { n.fetch_add(1, std::memory_order_seq_cst); }
    ~Active() { n.fetch_sub(1, std::memory_order_seq_cst); }
  } active(active_submitters_);
  if (closing_.load(std::memory_order_seq_cst)) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is shut down (or shutting down)");
  check_usable();

  for (uint32_t spins = 0; !queue_->try_reserve(count, first); ++spins) {
    queue_->reap();
    if (queue_->try_reserve(count, first)) break;
    if (!blocking) return false;
    check_usable();
    if (spins < 64)
      _mm_pause();
    else if (spins < 256)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
  for (uint32_t i = 0; i < count; ++i) queue_->publish(first + i, payloads[i]);
  return true;
}

gpuos_status Runtime::wait(uint64_t ticket, int64_t timeout_ns, std::string& why) {
  if (ticket >= queue_->issued())
    fail(GPUOS_ERR_INVALID_ARG, "ticket " + std::to_string(ticket) + " was never issued");
  const auto start = Clock::now();
  SubmitQueue::Result r;
  for (uint32_t spins = 0;; ++spins) {
    if (queue_->poll(ticket, r)) break;
    if (faulted_.load()) {
      std::lock_guard<std::mutex> lock(fault_mutex_);
      why = fault_message_;
      return GPUOS_ERR_DEVICE_FAULT;
    }
    if (timeout_ns == 0) return GPUOS_ERR_TIMEOUT;
    // Spin first: completions arrive within microseconds, and a sleep costs ~50 us of latency.
    if ((spins & 255) == 0 && timeout_ns > 0 &&
        Clock::now() - start > std::chrono::nanoseconds(timeout_ns))
      return GPUOS_ERR_TIMEOUT;
    if (spins < (1u << 16))
      _mm_pause();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  if (r.status == abi::kTaskOk) return GPUOS_OK;
  why = "task " + std::to_string(ticket) + ": " +
        (r.status == abi::kTaskBadOp ? "the device has no operator with id " + std::to_string(r.detail)
                                     : "the device rejected the arguments of operator " + std::to_string(r.detail));
  return GPUOS_ERR_TASK_FAILED;
}

gpuos_status Runtime::drain(int64_t timeout_ns, std::string& why) {
  const uint64_t end = queue_->issued();
  if (end == 0) return GPUOS_OK;
  const auto start = Clock::now();
  for (uint32_t spins = 0; queue_->reap() < end; ++spins) {
    if (faulted_.load()) {
      std::lock_guard<std::mutex> lock(fault_mutex_);
      why = fault_message_;
      return GPUOS_ERR_DEVICE_FAULT;
    }
    if (timeout_ns >= 0 && Clock::now() - start > std::chrono::nanoseconds(timeout_ns)) return GPUOS_ERR_TIMEOUT;
    if (spins < 1024)
      _mm_pause();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return GPUOS_OK;
}

gpuos_stats Runtime::stats() {
  gpuos_stats s{};
  s.completed = queue_->reap();
  s.submitted = queue_->issued();
  s.failed = queue_->failed();
  s.queue_depth = s.submitted - std::min(s.submitted, s.completed);
  s.heartbeat = load_host_u64(control_->heartbeat);
  s.launches = launches_.load();
  for (uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i) s.per_op_completed[i] = queue_->completed_of_op(i);
  return s;
}

}  // namespace gpuos::detail

// ---- diagnostics ----------------------------------------------------------------------------------------
namespace gpuos::detail {

std::string Runtime::diagnose() {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  auto u = [](uint64_t v) { return std::to_string(v); };
  const char* st = "stopped";
  switch (state_flag_.load()) {
    case State::Running: st = "running"; break;
    case State::Suspended: st = "suspended"; break;
    case State::Faulted: st = "faulted"; break;
    case State::Stopped: break;
  }
  const uint64_t issued = queue_ ? queue_->issued() : 0, retired = queue_ ? queue_->retired() : 0;
  line("host: state=" + std::string(st) + " run_id=" + u(run_id_) + " launches=" + u(launches_.load()) +
       " issued=" + u(issued) + " retired=" + u(retired) + " capacity=" + u(queue_ ? queue_->capacity() : 0));
  if (state_flag_.load() == State::Suspended || state_flag_.load() == State::Stopped) {
    std::unique_lock<std::mutex> cl(control_mutex_, std::try_to_lock);
    if (cl.owns_lock() && snapshot_pending_ && !faulted_.load()) {
      CtxScope scope(ctx_);
      if (drv().cuStreamSynchronize(stream_) == CUDA_SUCCESS) check_stopped_state();
    }
  }
  if (faulted_.load()) {
    std::lock_guard<std::mutex> lock(fault_mutex_);
    line("fault: " + fault_message_);
  }
  {
    std::lock_guard<std::mutex> lock(diag_mutex_);
    for (const std::string& a : anomalies_) line("scheduler invariant violated at stop: " + a);
  }
  if (!control_) return out;
  const uint64_t beat = load_host_u64(control_->heartbeat);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const uint64_t beat2 = load_host_u64(control_->heartbeat);
  line("control: stop_run=" + u(load_host_u64(control_->stop_run)) + " started_run=" +
       u(load_host_u64(control_->started_run)) + " heartbeat=" + u(beat2) +
       (beat2 != beat ? " (moving)" : " (still)") + " fetched=" + u(load_host_u64(control_->fetched)));
  if (!queue_ || faulted_.load()) return out;
  const uint64_t mask = queue_->capacity() - 1, t = retired;
  if (t < issued) {
    const abi::Slot& slot = ring_[t & mask];
    std::string stamps;
    for (uint32_t i = 0; i < abi::kSlotChunks; ++i)
      stamps += (i ? "," : "") + u(__atomic_load_n(&slot.c[i].stamp, __ATOMIC_ACQUIRE));
    const abi::Completion& c = completions_[t & mask];
    line("oldest pending ticket " + u(t) + ": ring stamps=[" + stamps + "] expected=" +
         u(abi::stamp_of(t, queue_->log2_capacity())) + "; completion seq=" +
         u(__atomic_load_n(&c.seq, __ATOMIC_ACQUIRE)) + " (done when " + u(t + 1) + ")");
  }
  // Device memory: copied on a stream of its own, which does not wait for the resident kernel.
  std::lock_guard<std::mutex> lock(diag_mutex_);
  try {
    CtxScope scope(ctx_);
    if (!diag_stream_) GPUOS_CU_TRY(drv().cuStreamCreate(&diag_stream_, CU_STREAM_NON_BLOCKING));
    abi::DeviceState ds{};
    std::vector<abi::DqEntry> dq(queue_->capacity());
    GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(&ds, state_, sizeof(ds), diag_stream_));
    GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(dq.data(), dq_, dq.size() * sizeof(abi::DqEntry), diag_stream_));
    GPUOS_CU_TRY(drv().cuStreamSynchronize(diag_stream_));
    const abi::DqEntry& e = dq[t & mask];
    std::string board;
    for (uint32_t i = 0; i < abi::kBoardSize; ++i)
      if (ds.board[i]) board += " [" + std::to_string(i) + "]=" + u(ds.board[i] - 1);
    line("device: head=" + u(ds.head) + " claim=" + u(ds.claim) + " closed=" + u(ds.closed) +
         " launches=" + u(ds.launches) + " board:" + (board.empty() ? " empty" : board));
    if (t < issued)
      line("device queue entry of ticket " + u(t) + ": ticket=" + u(e.ticket) + " claim.remaining=" +
           std::to_string(abi::claim_remaining(e.claim)) + " claim.tag=" + u(static_cast<uint32_t>(e.claim)) +
           " pending=" + u(e.pending) + " op=" + u(e.payload.op) + " tiles=" + u(e.payload.tiles) +
           " mark=" + u(e.pad));
    // Every pending ticket without a completion record (the first few in detail).
    uint64_t missing = 0;
    for (uint64_t k = t; k < issued; ++k) {
      const abi::Completion& c = completions_[k & mask];
      const uint64_t seq = __atomic_load_n(&c.seq, __ATOMIC_ACQUIRE);
      if (seq == k + 1) continue;
      if (++missing <= 16) {
        const abi::DqEntry& d = dq[k & mask];
        line("  missing ticket " + u(k) + ": completion seq=" + u(seq) + " status=" + u(c.status) +
             " detail=" + u(c.detail) + "; entry ticket=" + u(d.ticket) + " remaining=" +
             std::to_string(abi::claim_remaining(d.claim)) + " pending=" + u(d.pending) + " mark=" + u(d.pad));
      }
    }
    if (t < issued) line("pending tickets without a completion: " + u(missing) + " of " + u(issued - t));
    if (trace_) {
      std::vector<uint64_t> tr(abi::kTraceRecords * abi::kTraceWords);
      GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(tr.data(), trace_, tr.size() * sizeof(uint64_t), diag_stream_));
      GPUOS_CU_TRY(drv().cuStreamSynchronize(diag_stream_));
      // The recorder's position is kept in a register while the kernel runs: order the records by
      // (launch, head) instead, then show discontinuities (a poll that did not start where the
      // previous one ended) and the polls around the oldest pending ticket.
      struct Rec { uint64_t head, ready, window, launch, t_issue, t_return, t_done, steps, t[7], cycles; };
      std::vector<Rec> recs;
      for (uint32_t i = 0; i < abi::kTraceRecords; ++i) {
        const uint64_t* w = &tr[abi::kTraceWords * i];
        if (w[1] != 0) recs.push_back({w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], {w[8], w[9], w[10], w[11], w[12], w[13], w[14]}, w[15]});
      }
      // Where a task's time goes inside the front end (device clock): the poll's round trip over the
      // bus, and the hand-over (a lone task: run + completion record; else: copy + publish).
      auto is_lone = [](const Rec& r) { return ((r.window >> 32) & 1u) != 0; };
      auto pct = [](std::vector<double>& v, double q) {
        std::sort(v.begin(), v.end());
        return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
      };
      for (const bool lone : {true, false}) {
        std::vector<double> rt, work, barrier, tiled, recorded, pace;
        for (const Rec& r : recs) {
          if (is_lone(r) != lone || r.t_return < r.t_issue || r.t_done < r.t_return) continue;
          rt.push_back(static_cast<double>(r.t_return - r.t_issue) * 1e-3);
          work.push_back(static_cast<double>(r.t_done - r.t_return) * 1e-3);
          pace.push_back(static_cast<double>(r.window >> 40) * 1e-3);
          if (r.steps) {
            barrier.push_back(static_cast<double>(abi::trace_step(r.steps, 0)) * 1e-3);
            tiled.push_back(static_cast<double>(abi::trace_step(r.steps, 1)) * 1e-3);
            recorded.push_back(static_cast<double>(abi::trace_step(r.steps, 2)) * 1e-3);
          }
        }
        if (rt.empty()) continue;
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "front-end timing (%s, %zu polls): poll round trip p50 %.2f us p90 %.2f us; %s p50 %.2f us "
                      "p90 %.2f us; pacing p50 %.2f us",
                      lone ? "lone tasks" : "copied tasks", rt.size(), pct(rt, 0.5), pct(rt, 0.9),
                      lone ? "run + completion record" : "copy + publish", pct(work, 0.5), pct(work, 0.9),
                      pct(pace, 0.5));
        line(buf);
        if (!tiled.empty()) {
          std::snprintf(buf, sizeof buf,
                        "front-end timing (lone tasks): after the poll, all chunks in p50 %.2f us, tile done p50 "
                        "%.2f us, completion record written p50 %.2f us",
                        pct(barrier, 0.5), pct(tiled, 0.5), pct(recorded, 0.5));
          line(buf);
        }
      }
      {
        // A lone task's steps inside the front end (words 8-14 of its record), p50 of each.
        static const char* const names[6] = {"to the call", "call entered", "staged, validated", "operator returned",
                                              "tile barrier", "record written"};
        std::vector<double> d[6], mhz;
        for (const Rec& r : recs) {
          if (!is_lone(r) || r.t[0] == 0 || r.t[6] == 0) continue;
          bool ordered = true;
          for (int k = 0; k < 6; ++k) ordered = ordered && r.t[k + 1] >= r.t[k];
          if (!ordered) continue;
          for (int k = 0; k < 6; ++k) d[k].push_back(static_cast<double>(r.t[k + 1] - r.t[k]) * 1e-3);
          if (r.t[6] > r.t[2]) mhz.push_back(static_cast<double>(r.cycles) * 1e3 / static_cast<double>(r.t[6] - r.t[2]));
        }
        if (!d[0].empty()) {
          std::string l = "front-end timing (lone tasks, steps after all chunks are in, p50 us):";
          for (int k = 0; k < 6; ++k) {
            char b[64];
            std::snprintf(b, sizeof b, " %s +%.3f", names[k], pct(d[k], 0.5));
            l += b;
          }
          if (!mhz.empty()) {
            char b[64];
            std::snprintf(b, sizeof b, "; SM clock p50 %.0f MHz", pct(mhz, 0.5));
            l += b;
          }
          line(l);
        }
      }
      {
        // Lone tasks back to back (the closed loop): from one's completion record to the next one's
        // poll issue, and whether an empty poll came between (the slow mode pacing is meant to remove).
        std::vector<Rec> by_time(recs);
        std::sort(by_time.begin(), by_time.end(), [](const Rec& a, const Rec& b) { return a.t_issue < b.t_issue; });
        std::vector<double> gap;
        size_t extra = 0;
        for (size_t i = 1; i < by_time.size(); ++i) {
          const Rec &a = by_time[i - 1], &b = by_time[i];
          if (!is_lone(a) || !is_lone(b) || b.head != a.head + 1 || b.t_issue < a.t_done) continue;
          const double g = static_cast<double>(b.t_issue - a.t_done) * 1e-3;
          gap.push_back(g);
          // An empty poll in between: the finding poll began later than the pacing alone explains.
          if (g > static_cast<double>(b.window >> 40) * 1e-3 + 0.6) ++extra;
        }
        if (!gap.empty()) {
          char buf[256];
          std::snprintf(buf, sizeof buf,
                        "front-end timing (lone after lone, %zu pairs): record -> next finding poll issued p50 %.2f us "
                        "p90 %.2f us; an empty poll between in %.1f%%",
                        gap.size(), pct(gap, 0.5), pct(gap, 0.9), 100.0 * static_cast<double>(extra) / static_cast<double>(gap.size()));
          line(buf);
        }
      }
      std::sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) {
        return a.launch != b.launch ? a.launch < b.launch : a.head < b.head;
      });
      line("front-end trace: " + u(recs.size()) + " records");
      uint64_t shown = 0;
      for (size_t i = 0; i < recs.size(); ++i) {
        const Rec& r = recs[i];
        const bool covers = t >= r.head && t < r.head + r.ready;
        const bool jump = i > 0 && r.head != recs[i - 1].head + recs[i - 1].ready;
        const bool near = r.head + r.ready + 300 > t && r.head < t + 300;
        if ((jump || covers || near) && shown++ < 50)
          line("  head=" + u(r.head) + " ready=" + u(r.ready) + " window=" + u(r.window & 0xffffffffu) +
               " lone=" + u((r.window >> 32) & 1u) + " launch=" + u(r.launch) + (jump ? " JUMP" : "") +
               (covers ? " COVERS" : ""));
      }
    }
  } catch (const Failure& f) {
    line(std::string("device state unreadable: ") + f.what());
  }
  return out;
}

// ---- the loaded image's operators ---------------------------------------------------------------------
void Runtime::accept_image_ops() {
  // The host validates submissions against the operators the image really holds (the jump table the
  // device dispatches through), so an image with more operators than the built-ins is usable as is;
  // generations and aliases update the table later (host/hotpatch.cpp).
  CUdeviceptr table = 0;
  size_t bytes = 0;
  GPUOS_CU_TRY(drv().cuModuleGetGlobal(&table, &bytes, module_, "gpuos_op_table"));
  std::vector<uint64_t> rows(GPUOS_MAX_OPS, 0);
  GPUOS_CU_TRY(drv().cuMemcpyDtoH(rows.data(), table, std::min<size_t>(bytes, rows.size() * sizeof(uint64_t))));
  for (uint32_t id = 0; id < GPUOS_MAX_OPS; ++id) {
    if (rows[id] == 0) continue;
    OpEntryRow row{};
    GPUOS_CU_TRY(drv().cuMemcpyDtoH(&row, rows[id], sizeof(row)));
    if (row.tile != 0) accept_[id].store(kAccept | row.arg_bytes);
  }
}

// ---- the heap -------------------------------------------------------------------------------------------
void Runtime::init_heap() {
  void* p = nullptr;
  GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, kReplySlots * sizeof(abi::HeapReply),
                                    CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  replies_ = static_cast<abi::HeapReply*>(p);
  std::memset(static_cast<void*>(replies_), 0, kReplySlots * sizeof(abi::HeapReply));
  for (uint32_t i = 0; i < kReplySlots; ++i) free_replies_.push_back(kReplySlots - 1 - i);
  if (opts_.heap_bytes == 0) return;

  // Geometry: a quarter of the pool is the large arena (requests too big for a small arena), the rest
  // is split into small arenas: heap_arenas, or kAutoArenasPerSm per SM but none below 1 MiB (more
  // arenas, less lock contention; smaller arenas, a lower size limit outside the large arena).
  const uint64_t bytes = opts_.heap_bytes & ~15ull;
  const uint64_t large = bytes >= (16ull << 20) ? (bytes / 4) & ~(tlsf::kArenaGranule - 1) : 0;
  uint64_t arenas = opts_.heap_arenas;
  if (arenas == 0)
    arenas = std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(kAutoArenasPerSm) * info_.sm_count,
                                                      (bytes - large) / kMinAutoArena));
  if ((bytes - large) / arenas < tlsf::kMinArenaBytes)
    fail(GPUOS_ERR_INVALID_ARG, "heap_arenas = " + std::to_string(arenas) + " leaves less than 4 KiB per arena of a " +
                                    std::to_string(bytes) + "-byte heap");
  const uint64_t ctl_bytes = tlsf::control_bytes(static_cast<uint32_t>(arenas));
  GPUOS_CU_TRY(drv().cuMemAlloc(&heap_ctl_, ctl_bytes));
  GPUOS_CU_TRY(drv().cuMemAlloc(&heap_pool_, bytes));

  CUfunction layout = nullptr, init_arenas = nullptr;
  GPUOS_CU_TRY(drv().cuModuleGetFunction(&layout, module_, "gpuos_heap_layout"));
  GPUOS_CU_TRY(drv().cuModuleGetFunction(&init_arenas, module_, "gpuos_heap_init_arenas"));
  CUdeviceptr status_dev = 0;
  GPUOS_CU_TRY(drv().cuMemAlloc(&status_dev, sizeof(uint32_t)));
  struct FreeStatus {
    CUdeviceptr p;
    ~FreeStatus() { drv().cuMemFree(p); }
  } free_status{status_dev};
  unsigned long long pool_bytes = bytes, large_bytes = large;
  unsigned narenas = static_cast<unsigned>(arenas), flags = opts_.heap_flags & GPUOS_HEAP_CHECKED;
  void* layout_args[] = {&heap_ctl_, &heap_pool_, &pool_bytes, &narenas, &large_bytes, &flags, &status_dev};
  GPUOS_CU_TRY(drv().cuLaunchKernel(layout, 1, 1, 1, 1, 1, 1, 0, stream_, layout_args, nullptr));
  uint32_t status = ~0u;
  GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(&status, status_dev, sizeof(status), stream_));
  GPUOS_CU_TRY(drv().cuStreamSynchronize(stream_));
  if (status != 0)
    fail(GPUOS_ERR_INTERNAL, "the device refused the heap layout (" + std::to_string(bytes) + " bytes, " +
                                 std::to_string(arenas) + " arenas): status " + std::to_string(status));
  void* init_args[] = {&heap_ctl_};
  const unsigned blocks = static_cast<unsigned>((arenas + 1 + 127) / 128);
  GPUOS_CU_TRY(drv().cuLaunchKernel(init_arenas, blocks, 1, 1, 128, 1, 1, 0, stream_, init_args, nullptr));
  GPUOS_CU_TRY(drv().cuStreamSynchronize(stream_));
}

abi::HeapReply Runtime::heap_call(uint32_t cmd, uint64_t a, uint64_t b) {
  if (heap_ctl_ == 0) fail(GPUOS_ERR_UNAVAILABLE, "the runtime has no heap (gpuos_options.heap_bytes is 0)");
  check_usable();
  if (state_flag_.load() == State::Suspended)
    fail(GPUOS_ERR_UNAVAILABLE, "the runtime is suspended: heap requests are served by the resident kernel; resume first");
  uint32_t slot = 0;
  {
    std::unique_lock<std::mutex> lock(reply_mutex_);
    reply_cv_.wait(lock, [&] { return !free_replies_.empty(); });
    slot = free_replies_.back();
    free_replies_.pop_back();
  }
  struct Release {
    Runtime& rt;
    uint32_t slot;
    ~Release() {
      std::lock_guard<std::mutex> lock(rt.reply_mutex_);
      rt.free_replies_.push_back(slot);
      rt.reply_cv_.notify_one();
    }
  } release{*this, slot};
  abi::HeapReply* r = replies_ + slot;
  std::memset(static_cast<void*>(r), 0, sizeof(*r));
  r->status = ~0u;

  abi::HeapCtlArgs args{};
  args.cmd = cmd;
  args.a = a;
  args.b = b;
  args.reply = reinterpret_cast<uint64_t>(r);
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = static_cast<uint16_t>(GPUOS_OP_HEAP_CTL);
  p.arg_bytes = sizeof(args);
  p.tiles = 1;
  std::memcpy(p.args, &args, sizeof(args));
  uint64_t ticket = 0;
  enqueue(&p, 1, true, ticket);
  std::string why;
  const gpuos_status s = wait(ticket, -1, why);
  if (s != GPUOS_OK) fail(s, "heap request: " + why);
  std::atomic_thread_fence(std::memory_order_acquire);
  abi::HeapReply out;
  std::memcpy(static_cast<void*>(&out), const_cast<const abi::HeapReply*>(r), sizeof(out));
  return out;
}

namespace {
std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

void* Runtime::heap_alloc(uint64_t bytes, uint64_t align) {
  if (align == 0) align = 16;
  const abi::HeapReply r = heap_call(abi::kHeapAlloc, bytes, align);
  switch (r.status) {
    case tlsf::kOk:
      return reinterpret_cast<void*>(r.ptr);
    case tlsf::kBadAlign:
      fail(GPUOS_ERR_INVALID_ARG, "alignment " + std::to_string(align) + " is not a power of two");
    case tlsf::kTooLarge:
      fail(GPUOS_ERR_OUT_OF_MEMORY, "a block of " + std::to_string(bytes) + " bytes (alignment " + std::to_string(align) +
                                        ") is larger than any arena of the " + std::to_string(opts_.heap_bytes) +
                                        "-byte heap");
    case tlsf::kOutOfMemory:
      fail(GPUOS_ERR_OUT_OF_MEMORY, "the heap has no free block for " + std::to_string(bytes) + " bytes (alignment " +
                                        std::to_string(align) + "); see gpuos_heap_get_stats");
    default:
      fail(GPUOS_ERR_INTERNAL, "heap allocation failed with device status " + std::to_string(r.status));
  }
}

void Runtime::heap_free(void* p) {
  if (p == nullptr) return;
  const abi::HeapReply r = heap_call(abi::kHeapFree, reinterpret_cast<uint64_t>(p), 0);
  switch (r.status) {
    case tlsf::kOk:
      return;
    case tlsf::kForeign:
      fail(GPUOS_ERR_INVALID_ARG, "free of " + hex(reinterpret_cast<uint64_t>(p)) +
                                      ": not a block of the gpuos heap (refused, nothing changed)");
    case tlsf::kDoubleFree:
      fail(GPUOS_ERR_INVALID_ARG, "double free of " + hex(reinterpret_cast<uint64_t>(p)) + " (refused, nothing changed)");
    default:
      fail(GPUOS_ERR_INTERNAL, "heap free failed with device status " + std::to_string(r.status));
  }
}

gpuos_heap_stats Runtime::heap_stats() {
  const abi::HeapReply r = heap_call(abi::kHeapStats, 0, 0);
  if (r.status != tlsf::kOk) fail(GPUOS_ERR_INTERNAL, "heap stats failed with device status " + std::to_string(r.status));
  const abi::HeapStats& d = r.stats;
  gpuos_heap_stats s{};
  s.pool_bytes = d.pool_bytes;
  s.used_bytes = d.used_bytes;
  s.free_bytes = d.free_bytes;
  s.largest_free = d.largest_free;
  s.used_blocks = d.used_blocks;
  s.free_blocks = d.free_blocks;
  s.allocs = d.allocs;
  s.frees = d.frees;
  s.failed_allocs = d.failed_allocs;
  s.bad_align = d.bad_align;
  s.too_large = d.too_large;
  s.bad_free = d.bad_free;
  s.double_free = d.double_free;
  s.fragmentation = d.fragmentation;
  s.arenas = d.arenas;
  s.checked = d.checked;
  return s;
}

bool Runtime::heap_check(std::string& why) {
  const abi::HeapReply r = heap_call(abi::kHeapCheck, 0, 0);
  if (r.check_ok) return true;
  why.assign(r.message, strnlen(r.message, sizeof(r.message)));
  return false;
}

}  // namespace gpuos::detail
