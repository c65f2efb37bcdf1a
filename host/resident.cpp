#include "host/resident.hpp"

#include <chrono>
#include <cstring>
#include <thread>

#include "common/wait.hpp"
#include "host/cu_check.hpp"
#include "host/device.hpp"
#include "host/driver.hpp"

namespace gpuos::detail {
namespace {

using common::Clock;

inline std::uint64_t load_host_u64(const std::uint64_t& x) { return __atomic_load_n(&x, __ATOMIC_ACQUIRE); }

template <class T>
T* alloc_mapped(std::size_t count) {
  void* p = nullptr;
  GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, count * sizeof(T), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  std::memset(p, 0, count * sizeof(T));
  return static_cast<T*>(p);
}

/// Writes `v` into the DeviceState field at `offset` (before any launch).
template <class T>
void set_state_field(CUdeviceptr state, std::size_t offset, const T& v, CUstream s) {
  GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(state + offset, &v, sizeof(T), s));
}

}  // namespace

ResidentKernel::ResidentKernel(CUcontext ctx, ImageSet& images, RunState& run, const common::Config& cfg,
                               std::uint32_t log2_capacity)
    : ctx_(ctx), images_(images), run_(run), control_limit_(std::chrono::seconds(30) * cfg.deadline_scale) {
  try {
    const std::uint64_t cap = 1ull << log2_capacity;
    GPUOS_CU_TRY(drv().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING));
    ring_ = alloc_mapped<abi::Slot>(cap);
    completions_ = alloc_mapped<abi::Completion>(cap);
    control_ = alloc_mapped<abi::HostControl>(1);
    void* p = nullptr;
    GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, sizeof(abi::DeviceState), CU_MEMHOSTALLOC_PORTABLE));
    stop_snapshot_ = static_cast<abi::DeviceState*>(p);

    GPUOS_CU_TRY(drv().cuMemAlloc(&dstate_, sizeof(abi::DeviceState)));
    GPUOS_CU_TRY(drv().cuMemAlloc(&dq_, cap * sizeof(abi::TaskRecord)));
    GPUOS_CU_TRY(drv().cuMemsetD8Async(dstate_, 0, sizeof(abi::DeviceState), stream_));
    GPUOS_CU_TRY(drv().cuMemsetD8Async(dq_, 0, cap * sizeof(abi::TaskRecord), stream_));
    if (cfg.trace) {
      const std::size_t bytes = std::size_t{abi::kTraceRecords} * abi::kTraceWords * sizeof(std::uint64_t);
      GPUOS_CU_TRY(drv().cuMemAlloc(&trace_, bytes));
      GPUOS_CU_TRY(drv().cuMemsetD8Async(trace_, 0, bytes, stream_));
      set_state_field(dstate_, offsetof(abi::DeviceState, trace), trace_, stream_);
    }
    // The scheduler's tuning (DeviceState fields the kernel reads at every launch).
    set_state_field(dstate_, offsetof(abi::DeviceState, max_batch), static_cast<std::uint32_t>(cfg.tile_batch), stream_);
    set_state_field(dstate_, offsetof(abi::DeviceState, claim_spread), static_cast<std::uint32_t>(cfg.claim_spread), stream_);
    set_state_field(dstate_, offsetof(abi::DeviceState, claim_ahead_off), static_cast<std::uint32_t>(cfg.claim_ahead ? 0 : 1), stream_);
    set_state_field(dstate_, offsetof(abi::DeviceState, pace_limit_ns), static_cast<std::uint32_t>(cfg.poll_pace_ns), stream_);
    // Alias table: identity (every logical id runs the operator in its own slot).
    std::uint16_t alias[GPUOS_MAX_OPS];
    for (std::uint32_t i = 0; i < GPUOS_MAX_OPS; ++i) alias[i] = static_cast<std::uint16_t>(i);
    GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(dstate_ + offsetof(abi::DeviceState, alias), alias, sizeof(alias), stream_));
    GPUOS_CU_TRY(drv().cuStreamSynchronize(stream_));
    queue_ = std::make_unique<SubmitQueue>(ring_, completions_, log2_capacity);
  } catch (...) {
    free_memory();
    free_pinned();
    throw;
  }
}

ResidentKernel::~ResidentKernel() { free_pinned(); }

void ResidentKernel::free_pinned() noexcept {
  if (!driver_loaded()) return;
  for (void* p : {static_cast<void*>(ring_), static_cast<void*>(completions_), static_cast<void*>(control_),
                  static_cast<void*>(stop_snapshot_)})
    if (p) drv().cuMemFreeHost(p);
  ring_ = nullptr;
  completions_ = nullptr;
  control_ = nullptr;
  stop_snapshot_ = nullptr;
}

void ResidentKernel::free_memory() noexcept {
  if (!driver_loaded()) return;
  for (CUdeviceptr* p : {&dq_, &dstate_, &trace_})
    if (*p) {
      drv().cuMemFree(*p);
      *p = 0;
    }
  if (stream_) drv().cuStreamDestroy(stream_);
  if (diag_stream_) drv().cuStreamDestroy(diag_stream_);
  stream_ = diag_stream_ = nullptr;
}

std::uint64_t ResidentKernel::heartbeat() const { return control_ ? load_host_u64(control_->heartbeat) : 0; }

std::optional<ResidentKernel::Control> ResidentKernel::try_control() {
  std::unique_lock<std::mutex> lock(control_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return Control(this, std::move(lock));
}

std::uint64_t ResidentKernel::Control::fetched() const {
  return __atomic_load_n(&k_->control_->fetched, __ATOMIC_ACQUIRE);
}

// ---- launch and stop ------------------------------------------------------------------------------------
void ResidentKernel::launch_locked() {
  const Image& img = images_.current();
  const std::uint64_t run = ++run_id_;
  abi::LaunchParams lp{};
  lp.ring = ring_;
  lp.completions = completions_;
  lp.control = control_;
  lp.state = reinterpret_cast<abi::DeviceState*>(dstate_);
  lp.dq = reinterpret_cast<abi::TaskRecord*>(dq_);
  lp.run_id = run;
  lp.log2_capacity = queue_->log2_capacity();
  lp.abi_version = GPUOS_ABI_VERSION;
  lp.heap = heap_;
  void* args[] = {&lp};
  GPUOS_CU_TRY(drv().cuLaunchCooperativeKernel(img.kernel, img.grid, 1, 1, GPUOS_BLOCK_THREADS, 1, 1, img.stage, stream_, args));
  ++launches_;
  // Every block is resident and the front end runs once it writes started_run (after its grid sync).
  // A start takes tens of microseconds: the wait spins first (a generation switch pauses serving
  // meanwhile, and a yield can cost a whole scheduler time slice on a busy host).
  const bool started = common::wait_until(
      [&] {
        if (load_host_u64(control_->started_run) == run) return true;
        const CUresult r = drv().cuStreamQuery(stream_);
        if (r == CUDA_SUCCESS) fail(GPUOS_ERR_INTERNAL, "the resident kernel exited right after launch");
        if (r != CUDA_ERROR_NOT_READY) cu_check(r, "resident kernel start", __FILE__, __LINE__);
        return false;
      },
      common::Deadline::after(control_limit_), common::kControlBackoff);
  if (!started)
    fail(GPUOS_ERR_INTERNAL, "the resident kernel did not start within " + std::to_string(control_limit_.count()) + " s");
  state_.store(KernelState::running);
  queue_->set_parked(false);
  check_stopped_state();  // the previous stop's snapshot preceded this launch on the stream
}

void ResidentKernel::request_stop() noexcept {
  std::uint64_t cur = __atomic_load_n(&control_->stop_run, __ATOMIC_ACQUIRE);
  while (cur != abi::kAbortRun &&
         !__atomic_compare_exchange_n(&control_->stop_run, &cur, run_id_, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
  }
}

void ResidentKernel::abort() noexcept {
  if (!control_ || !dstate_) return;
  __atomic_store_n(&control_->stop_run, abi::kAbortRun, __ATOMIC_RELEASE);
  // Device memory, by a copy on a stream of its own (a copy engine's work: it does not wait for the
  // kernel's blocks, busy or not); a faulted context fails it, and then nothing runs anyway.
  static const std::uint64_t abort_word = abi::kAbortRun;
  try {
    CtxScope scope(ctx_);
    CUstream s = nullptr;
    if (drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return;
    drv().cuMemcpyHtoDAsync(dstate_ + offsetof(abi::DeviceState, abort), &abort_word, sizeof(abort_word), s);
    drv().cuStreamSynchronize(s);
    drv().cuStreamDestroy(s);
  } catch (const std::exception&) {
    // No context on this thread: the front end still sees stop_run.
  }
}

void ResidentKernel::stop_locked() {
  request_stop();
  const auto t0 = Clock::now();
  // Where a stop's time goes (GPUOS_SWITCH_TRACE): the front end saw the request, the last block left,
  // the driver said the stream is idle; and the longest single query (a driver call can wait on a lock
  // another thread holds, e.g. a module load).
  last_stop_ = StopTiming{};
  auto since = [&] {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  };
  // Spins for the first milliseconds (a stop usually takes microseconds), then sleeps. Not a yield:
  // with 4 threads submitting, a yield here can cost up to 2.7 ms (on an H100's host).
  const bool stopped = common::wait_until(
      [&] {
        if (!last_stop_.seen_ns && load_host_u64(control_->stop_seen_run) == run_id_) last_stop_.seen_ns = since();
        if (!last_stop_.drained_ns && load_host_u64(control_->drained_run) == run_id_) last_stop_.drained_ns = since();
        const std::uint64_t q0 = since();
        const CUresult r = drv().cuStreamQuery(stream_);
        last_stop_.max_query_ns = std::max(last_stop_.max_query_ns, since() - q0);
        ++last_stop_.queries;
        if (r == CUDA_SUCCESS) {
          last_stop_.done_ns = since();
          return true;
        }
        if (r != CUDA_ERROR_NOT_READY) {
          run_.set_fault("the resident kernel failed: " + cu_error_name(r));
          cu_check(r, "resident kernel stop", __FILE__, __LINE__);
        }
        return false;
      },
      common::Deadline::after(control_limit_), common::kControlBackoff);
  if (!stopped)
    fail(GPUOS_ERR_INTERNAL, "the resident kernel did not stop within " + std::to_string(control_limit_.count()) +
                                 " s (a task may be stuck in an operator)");
  state_.store(KernelState::suspended);
  // Snapshot the scheduler state for the stop-time checks without waiting for it: the copy is ordered
  // after the exited kernel and before the next launch on the same stream, so it costs the serving
  // pause nothing; check_stopped_state() reads it once that launch has started (or after a sync).
  GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(stop_snapshot_, dstate_, sizeof(abi::DeviceState), stream_));
  snapshot_pending_ = true;
}

void ResidentKernel::check_stopped_state() {
  // Invariants that hold after every clean stop; a violation is a scheduler bug, kept for diagnose()
  // rather than hidden. Precondition: the snapshot copy has completed (control lock held).
  if (!snapshot_pending_) return;
  snapshot_pending_ = false;
  const abi::DeviceState ds = *stop_snapshot_;
  const std::uint64_t issued = queue_->issued();
  std::string bad;
  auto u = [](std::uint64_t v) { return std::to_string(v); };
  if (ds.closed != 1) bad += " closed=" + u(ds.closed);
  if (ds.exit_head != ds.head) bad += " exit_head=" + u(ds.exit_head) + "!=head=" + u(ds.head);
  if (ds.head > issued) bad += " head=" + u(ds.head) + ">issued=" + u(issued);
  if (ds.completed != ds.head) bad += " completed=" + u(ds.completed) + "!=head=" + u(ds.head);
  // special_done is (the last post finished << 8) | the slots it copied.
  if (ds.special_post != ds.special_done >> 8)
    bad += " special_post=" + u(ds.special_post) + "!=special_done>>8=" + u(ds.special_done >> 8);
  if (ds.start_head != last_exit_head_)
    bad += " start_head=" + u(ds.start_head) + "!=previous exit_head=" + u(last_exit_head_);
  last_exit_head_ = ds.head;
  if (!bad.empty()) {
    std::lock_guard<std::mutex> lock(diag_mutex_);
    anomalies_.push_back("run " + u(run_id_) + " (launch " + u(ds.launches) + "):" + bad);
  }
}

bool ResidentKernel::stop_if_running(double timeout_s) noexcept {
  if (!stream_ || !control_) return true;
  CUresult r = drv().cuStreamQuery(stream_);
  if (r != CUDA_ERROR_NOT_READY) return true;  // idle, or a sticky device error: nothing runs
  request_stop();
  common::wait_until([&] { return (r = drv().cuStreamQuery(stream_)) != CUDA_ERROR_NOT_READY; },
                     common::Deadline::after(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::duration<double>(timeout_s))),
                     common::kControlBackoff);
  if (r == CUDA_ERROR_NOT_READY) return false;
  if (state_.load() == KernelState::running) state_.store(KernelState::stopped);
  return true;
}

// ---- suspend / resume / watch ---------------------------------------------------------------------------
ResidentKernel::ServeGuard::ServeGuard(ResidentKernel& k) : k_(k) {
  k_.serving_.fetch_add(1, std::memory_order_seq_cst);
  if (k_.user_suspended_.load(std::memory_order_seq_cst)) {
    k_.serving_.fetch_sub(1, std::memory_order_seq_cst);
    fail(GPUOS_ERR_UNAVAILABLE, "the runtime is suspended: this request is served by the resident kernel; resume first");
  }
}

void ResidentKernel::suspend() {
  Control c = control();
  run_.check_usable();
  run_.check_open();
  if (!c.running() && queue_->parked()) {
    // Parked while idle: already off the GPU. Suspended now, it stays off until resume().
    user_suspended_.store(true, std::memory_order_seq_cst);
    queue_->set_parked(false);
    return;
  }
  if (!c.running()) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is not running");
  // New requests are refused from here on; those in flight are served first (the kernel runs).
  user_suspended_.store(true, std::memory_order_seq_cst);
  if (!common::wait_until([&] { return serving_.load(std::memory_order_seq_cst) == 0 || run_.faulted(); },
                          common::Deadline::after(control_limit_), common::kCompletionBackoff)) {
    user_suspended_.store(false);
    fail(GPUOS_ERR_TIMEOUT, "suspend: the heap requests in flight were not served within " +
                                std::to_string(control_limit_.count()) + " s (a task may be stuck in an operator)");
  }
  CtxScope scope(ctx_);
  try {
    c.stop();
  } catch (...) {
    user_suspended_.store(false);
    throw;
  }
  images_.unload_retired();  // the device is idle anyway
}

void ResidentKernel::resume() {
  Control c = control();
  run_.check_usable();
  run_.check_open();
  if (!user_suspended_.load()) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is not suspended");
  CtxScope scope(ctx_);
  c.launch();
  user_suspended_.store(false);
}

void ResidentKernel::relaunch_if_suspended() {
  // Only the user's suspend leaves the kernel off with tasks to drain: the monitor relaunches after its
  // own stops (a slice, an idle unload) and unparks for pending work. Not taking the lock otherwise
  // matters: a slice's stop holds it while it waits for a kernel that a hung operator keeps from
  // stopping, and the drain after this call is what gives up on it (Runtime::close).
  if (!user_suspended_.load(std::memory_order_seq_cst)) return;
  // Under the control lock: the monitor's idle unload of retired images stops and relaunches the kernel
  // while holding it, and the state reads suspended in between. Read unlocked, a close in that window
  // would try to relaunch a kernel the monitor is about to relaunch, fail, and leave it running under
  // the frees at shutdown, which would wait for ever (tests/switch/test_online_switch.cpp sweeps a
  // shutdown across that window).
  Control c = control();
  if (state_.load() == KernelState::suspended) {
    CtxScope scope(ctx_);
    c.launch();
  }
  user_suspended_.store(false);
}

void ResidentKernel::close() {
  Control c = control();
  CtxScope scope(ctx_);
  if (c.running() && !run_.faulted())
    c.stop();
  else if (run_.faulted())
    stop_if_running(5.0);  // a failure the host declared (not the device's) can leave the kernel running
  if (state_.load() != KernelState::running) state_.store(KernelState::stopped);
}

void ResidentKernel::watch() {
  if (state_.load() != KernelState::running) return;
  std::optional<Control> c = try_control();
  if (!c || !c->running()) return;
  const CUresult r = drv().cuStreamQuery(stream_);
  if (r == CUDA_SUCCESS)
    run_.set_fault("the resident kernel exited without being asked to");
  else if (r != CUDA_ERROR_NOT_READY)
    run_.set_fault("the device faulted: " + cu_error_name(r) + "; every pending task failed");
}

// ---- diagnosis ------------------------------------------------------------------------------------------
const char* ResidentKernel::state_name() const {
  switch (state_.load()) {
    case KernelState::running: return "running";
    case KernelState::suspended: return queue_->parked() ? "parked" : "suspended";
    case KernelState::stopped: break;
  }
  return "stopped";
}

void ResidentKernel::snapshot(Snapshot& s) {
  s.state = state_name();
  s.launches = launches_.load();
  s.issued = queue_->issued();
  s.retired = queue_->retired();
  s.capacity = queue_->capacity();
  s.log2_capacity = queue_->log2_capacity();
  if (state_.load() != KernelState::running) {
    // A stopped kernel's snapshot may not have been checked yet: check it now (a sync of the idle stream).
    if (std::optional<Control> c = try_control()) {
      s.run_id = run_id_;
      if (snapshot_pending_ && !run_.faulted() && drv().cuCtxSetCurrent(ctx_) == CUDA_SUCCESS &&
          drv().cuStreamSynchronize(stream_) == CUDA_SUCCESS)
        check_stopped_state();
    }
  } else {
    s.run_id = __atomic_load_n(&run_id_, __ATOMIC_RELAXED);
  }
  {
    std::lock_guard<std::mutex> lock(diag_mutex_);
    s.anomalies = anomalies_;
  }
  if (!control_) return;
  s.have_control = true;
  s.heartbeat = load_host_u64(control_->heartbeat);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  s.heartbeat_later = load_host_u64(control_->heartbeat);
  s.stop_run = load_host_u64(control_->stop_run);
  s.started_run = load_host_u64(control_->started_run);
  s.fetched = load_host_u64(control_->fetched);
  const std::uint64_t mask = s.capacity - 1;
  for (std::uint64_t t = s.retired; t < s.issued; ++t) {
    abi::Completion c;
    std::memcpy(&c, const_cast<const abi::Completion*>(&completions_[t & mask]), sizeof(c));
    c.seq = __atomic_load_n(&completions_[t & mask].seq, __ATOMIC_ACQUIRE);
    s.pending_records.push_back(c);
  }
  if (s.retired < s.issued) {
    const abi::Slot& slot = ring_[s.retired & mask];
    for (std::uint32_t i = 0; i < abi::kSlotChunks; ++i)
      s.oldest_stamps.push_back(__atomic_load_n(&slot.c[i].stamp, __ATOMIC_ACQUIRE));
    s.oldest_seq = s.pending_records.front().seq;
  }
  if (run_.faulted()) return;
  // Device memory: copied on a stream of its own, which does not wait for the resident kernel.
  std::lock_guard<std::mutex> lock(diag_mutex_);
  try {
    CtxScope scope(ctx_);
    if (!diag_stream_) GPUOS_CU_TRY(drv().cuStreamCreate(&diag_stream_, CU_STREAM_NON_BLOCKING));
    s.dq.resize(s.capacity);
    GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(&s.device, dstate_, sizeof(s.device), diag_stream_));
    GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(s.dq.data(), dq_, s.dq.size() * sizeof(abi::TaskRecord), diag_stream_));
    if (trace_) {
      s.trace.resize(std::size_t{abi::kTraceRecords} * abi::kTraceWords);
      GPUOS_CU_TRY(drv().cuMemcpyDtoHAsync(s.trace.data(), trace_, s.trace.size() * sizeof(std::uint64_t), diag_stream_));
    }
    GPUOS_CU_TRY(drv().cuStreamSynchronize(diag_stream_));
    s.have_device = true;
  } catch (const Failure& f) {
    s.device_error = f.what();
  }
}

}  // namespace gpuos::detail
