#include "host/runtime.hpp"

#include "common/wait.hpp"
#include "host/cu_check.hpp"
#include "host/diagnose.hpp"
#include "host/driver.hpp"
#include "host/generations.hpp"
#include "host/graphs.hpp"
#include "host/heap_client.hpp"
#include "host/image_set.hpp"
#include "host/metrics.hpp"
#include "host/monitor.hpp"
#include "host/resident.hpp"
#include "host/stream_submit.hpp"
#include "host/submitter.hpp"
#include "host/watchdog.hpp"

namespace gpuos::detail {
namespace {

/// The environment's configuration with the directories gpuos_options sets (copied: the option's
/// strings need not outlive gpuos_create).
common::Config configure(const gpuos_options& o) {
  validate_options(o);
  common::Config c = common::Config::from_env();
  auto apply = [&](const char* opt, std::string& member, const char* name) {
    if (!opt) return;
    member = opt;
    c.set_source(name, common::Source::option);
  };
  apply(o.cache_dir, c.cache_dir, "GPUOS_CACHE_DIR");
  apply(o.include_dir, c.include_dir, "GPUOS_INCLUDE_DIR");
  apply(o.cccl_dir, c.cccl_dir, "GPUOS_CCCL_DIR");
  return c;
}

gpuos_options without_strings(gpuos_options o) {
  o.cache_dir = o.include_dir = o.cccl_dir = nullptr;
  return o;
}

std::uint32_t log2_of(std::uint32_t pow2) {
  std::uint32_t l = 0;
  while ((1u << l) < pow2) ++l;
  return l;
}

}  // namespace

Runtime::Runtime(const gpuos_options& o) : opts_(without_strings(o)), cfg_(configure(o)), dev_(choose_device(o)) {
  opts_ = with_config_defaults(opts_, cfg_);
  ctx_ = retain_primary_context(dev_.dev, cfg_);
  try {
    CtxScope scope(ctx_);
    Image boot = load_boot_image();
    try {
      boot.grid = launch_geometry(boot.kernel, opts_, cfg_, dev_.info);
      boot.stage = opts_.stage_bytes;
    } catch (...) {
      drv().cuModuleUnload(boot.module);
      throw;
    }
    images_ = std::make_unique<ImageSet>(boot);
    // Submissions are validated against the operators the image really holds (the jump table the
    // device dispatches through), so a boot image with more operators than the built-ins is usable.
    for (const TableRow& r : read_jump_table(boot.module)) registry_.accept().accept(r.id, r.arg_bytes);
    kernel_ = std::make_unique<ResidentKernel>(ctx_, *images_, run_, cfg_, log2_of(opts_.queue_capacity));
    deadlines_ = std::make_unique<Deadlines>(opts_.deadline_ms, static_cast<std::uint32_t>(cfg_.deadline_scale));
    submitter_ = std::make_unique<Submitter>(kernel_->queue(), run_, registry_.accept(), *deadlines_);
    streams_ = std::make_unique<StreamSubmitter>(ctx_, *submitter_, run_,
                                                 std::chrono::microseconds(cfg_.stream_spin_us));
    heap_ = std::make_unique<HeapClient>(opts_, dev_.info, boot.module, kernel_->stream());
    kernel_->set_heap(heap_->control());
    gens_ = std::make_unique<Generations>(ctx_, opts_, dev_.info, cfg_, registry_, *kernel_, *submitter_, run_);
    graphs_ = std::make_unique<Graphs>(ctx_, cfg_, *submitter_, *kernel_, heap_.get(), registry_.accept(),
                                       [this] { return images_->current_grid(); });
    kernel_->control().launch();
    monitor_ = std::make_unique<Monitor>(ctx_, *kernel_, run_, [this] { return gens_->switches(); },
                                         std::chrono::microseconds(opts_.slice_us), std::chrono::microseconds(opts_.park_us));
    monitor_->start();
    watchdog_ = std::make_unique<Watchdog>(ctx_, *kernel_, run_, *deadlines_, [this](std::uint32_t op) {
      return gens_->try_op_name(op).value_or("");
    });
    watchdog_->start();
  } catch (...) {
    shutdown();
    throw;
  }
}

Runtime::~Runtime() { shutdown(); }

void Runtime::drain_or_give_up() {
  SubmitQueue& q = kernel_->queue();
  const auto stall = std::chrono::milliseconds(std::max<std::int64_t>(cfg_.drain_stall_ms, deadlines_->longest()));
  std::uint64_t seen = q.reap();
  auto progress_at = common::Clock::now();
  for (;;) {
    std::string why;
    const gpuos_status s = submitter_->drain(common::Deadline::after(std::chrono::milliseconds(100)), why);
    if (s != GPUOS_ERR_TIMEOUT) return;  // drained, or faulted: nothing more to wait for
    if (const std::uint64_t r = q.reap(); r != seen) {
      seen = r;
      progress_at = common::Clock::now();
    } else if (common::Clock::now() - progress_at >= stall) {
      watchdog_->give_up("shutdown: no task completed for " + std::to_string(stall.count()) + " ms, with " +
                         std::to_string(q.issued() - r) + " pending (task " + std::to_string(r) +
                         " first); the kernel was ended and the pending tasks failed. " + watchdog_->report());
      return;
    }
  }
}

void Runtime::close() {
  std::lock_guard<std::mutex> lock(close_mutex_);
  if (closed_) return;
  if (submitter_) submitter_->close();
  if (kernel_ && !run_.faulted()) {
    kernel_->relaunch_if_suspended();
    drain_or_give_up();
  }
  if (monitor_) monitor_->stop();
  if (watchdog_) watchdog_->stop();
  if (kernel_) kernel_->close();
  closed_ = true;
}

void Runtime::set_op_deadline(std::uint32_t op, std::uint32_t ms) {
  if (ms != 0 && ms < GPUOS_MIN_DEADLINE_MS)
    fail(GPUOS_ERR_INVALID_ARG, "deadline_ms must be 0 (the runtime's) or at least " +
                                    std::to_string(GPUOS_MIN_DEADLINE_MS) + ", got " + std::to_string(ms));
  bool found = false;
  for (const gpuos_op_info& r : list_ops())
    if (r.id == op && r.kind != GPUOS_OP_KIND_FAILED) {
      if (r.kind == GPUOS_OP_KIND_ALIAS)
        fail(GPUOS_ERR_INVALID_ARG, std::string("operator id ") + std::to_string(op) + " is the alias '" + r.name +
                                        "': a call is judged by the operator it runs; set that one's deadline");
      found = true;
    }
  if (!found) fail(GPUOS_ERR_INVALID_ARG, "no live operator has id " + std::to_string(op));
  deadlines_->set_op(op, ms);
}

void Runtime::shutdown() noexcept {
  try {
    close();
  } catch (...) {
    // Best effort: a kernel that cannot be stopped keeps its memory (freeing it would block).
  }
  if (monitor_) monitor_->stop();
  if (watchdog_) watchdog_->stop();
  if (!driver_loaded() || !ctx_) return;
  drv().cuCtxSetCurrent(ctx_);
  // Pinned and device memory can only be freed once no kernel runs (the frees would wait for it for
  // ever, and so would a reset of the context): a kernel that would not stop keeps everything, context
  // included. After the watchdog's abort, a kernel ends within ~0.2 s (an H100), unless every block is
  // held by an operator.
  if (kernel_ && !kernel_->stop_if_running(5.0)) {
    abandoned_ = "the resident kernel could not be ended within 5 s (every block may be held by a hung operator): "
                 "its memory and the device's primary context were left as they are; exit the process";
    if (run_.faulted()) abandoned_ += " (" + run_.fault_reason() + ")";
    (void)kernel_.release();
    (void)heap_.release();
    (void)images_.release();
    (void)graphs_.release();
    (void)watchdog_.release();
    ctx_ = nullptr;
    return;
  }
  const bool faulted = run_.faulted();
  // Device memory and modules: only with a healthy context (after a fault the reset below frees them).
  if (!faulted) {
    if (kernel_) kernel_->free_memory();
    if (heap_) heap_->free_memory();
    if (images_) images_->unload_all();
  }
  watchdog_.reset();
  streams_.reset();  // first: its doors' work launches graphs and submits
  graphs_.reset();
  gens_.reset();
  heap_.reset();
  submitter_.reset();
  kernel_.reset();
  images_.reset();
  // A sticky fault leaves the primary context unusable for everyone in the process: reset it (which
  // destroys it; the next retain creates a fresh one) so that a new runtime can start over.
  if (faulted) {
    drv().cuCtxSetCurrent(nullptr);
    drv().cuDevicePrimaryCtxReset(dev_.dev);
  }
  drv().cuDevicePrimaryCtxRelease(dev_.dev);
  ctx_ = nullptr;
}

// ---- tasks --------------------------------------------------------------------------------------------------
bool Runtime::submit(const gpuos_task* tasks, std::size_t n, bool blocking, std::uint64_t& first) {
  return submitter_->submit(tasks, n, blocking, first);
}

void Runtime::submit_on_stream(const gpuos_task* tasks, std::size_t n, CUstream stream) {
  streams_->submit(tasks, n, stream);
}

void Runtime::submit_after_on_stream(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane,
                                     CUstream stream) {
  streams_->submit_after(task, after, n, lane, stream);
}

void Runtime::graph_launch_on_stream(GraphInstance* e, CUstream stream) {
  graphs_->check_instance(e);  // one destroyed before the stream reaches it does not run (counted)
  streams_->submit([this, e](Submitter&) { return StreamSubmitter::Issued{graphs_->launch(e, nullptr, 0, nullptr), 1}; },
                   stream);
}

std::uint64_t Runtime::stream_failures() const { return streams_ ? streams_->failures() : 0; }

std::uint64_t Runtime::submit_after(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane) {
  return submitter_->submit_after(task, after, n, lane);
}

gpuos_status Runtime::wait(std::uint64_t ticket, std::int64_t timeout_ns, std::string& why) {
  return submitter_->wait(ticket, common::Deadline::from_ns(timeout_ns), why);
}

gpuos_status Runtime::drain(std::int64_t timeout_ns, std::string& why) {
  return submitter_->drain(common::Deadline::from_ns(timeout_ns), why);
}

gpuos_stats Runtime::stats() {
  SubmitQueue& q = kernel_->queue();
  gpuos_stats s{};
  s.completed = q.reap_current();  // not behind any wait that returned before this call
  s.submitted = q.issued();
  s.failed = q.failed();
  s.queue_depth = s.submitted - std::min(s.submitted, s.completed);
  s.heartbeat = kernel_->heartbeat();
  s.launches = kernel_->launches();
  return s;
}

std::string Runtime::metrics() {
  MetricsInput m;
  m.stats = stats();
  m.state = run_.faulted() ? "faulted" : kernel_->state_name();
  m.stream_not_run = stream_failures();
  m.generation = generation();
  m.switches = gens_->switches();
  m.ops = list_ops();
  if (opts_.heap_bytes != 0 && (m.state == "running" || m.state == "parked")) {
    try {
      m.heap = heap_stats();  // a round trip through the ring (it launches a parked kernel)
      m.have_heap = true;
    } catch (const Failure&) {
      // Suspended or shut down meanwhile: the heap's lines are left out.
    }
  }
  return prometheus_text(m);
}

gpuos_device_info Runtime::device_info() const {
  gpuos_device_info d = dev_.info;
  d.grid_blocks = static_cast<std::int32_t>(images_->current_grid());
  return d;
}

void Runtime::suspend() { kernel_->suspend(); }

void Runtime::resume() { kernel_->resume(); }

std::string Runtime::diagnose() {
  Snapshot s;
  if (run_.faulted()) s.fault = run_.fault_reason();
  kernel_->snapshot(s);
  std::string report = detail::diagnose(s);
  if (watchdog_) report += watchdog_->report();
  if (const std::uint64_t f = stream_failures())
    report += "stream-ordered tasks not run (their stream reached them after the runtime closed or faulted): " +
              std::to_string(f) + "\n";
  return report;
}

// ---- operators ----------------------------------------------------------------------------------------------
gpuos_generation Runtime::load_operator(const std::string& source_name, const std::string* text) {
  return gens_->load(source_name, text);
}
gpuos_generation Runtime::load_operators(const std::vector<std::string>& paths, std::vector<std::string>& errors) {
  return gens_->load_all(paths, errors);
}
gpuos_generation Runtime::remove_operator_source(const std::string& source_name) { return gens_->remove(source_name); }
std::uint32_t Runtime::op_id(const std::string& name) { return gens_->op_id(name); }
std::uint64_t Runtime::alias_set(const std::string& alias, const std::string& target) {
  return gens_->alias_set(alias, target);
}
std::uint64_t Runtime::alias_rollback(const std::string& alias) { return gens_->alias_rollback(alias); }
gpuos_generation Runtime::rollback_generation() { return gens_->rollback(); }
gpuos_generation Runtime::generation() { return gens_->current(); }
std::vector<gpuos_op_info> Runtime::list_ops() { return gens_->list(); }

// ---- the heap -----------------------------------------------------------------------------------------------
void* Runtime::heap_alloc(std::uint64_t bytes, std::uint64_t align) { return heap_->alloc(*submitter_, *kernel_, bytes, align); }
void Runtime::heap_free(void* p) { heap_->free(*submitter_, *kernel_, p); }
gpuos_heap_stats Runtime::heap_stats() { return heap_->stats(*submitter_, *kernel_); }
bool Runtime::heap_check(std::string& why) { return heap_->check(*submitter_, *kernel_, why); }

}  // namespace gpuos::detail
