#include "host/generations.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <span>

#include "common/wait.hpp"
#include "gpuos/op_entry.h"
#include "host/cu_check.hpp"
#include "host/device.hpp"
#include "host/driver.hpp"
#include "jit/cache.hpp"
#include "jit/headers.hpp"
#include "jit/image.hpp"

extern "C" {
extern const unsigned char gpuos_kernel_lto[];
extern const size_t gpuos_kernel_lto_size;
extern const unsigned char gpuos_kernel_rdc[];
extern const size_t gpuos_kernel_rdc_size;
extern const unsigned char gpuos_dispatch_lto[];
extern const size_t gpuos_dispatch_lto_size;
extern const unsigned char gpuos_dispatch_rdc[];
extern const size_t gpuos_dispatch_rdc_size;
}

namespace gpuos::detail {
namespace {

using common::Clock;

/// Most seconds a switch waits for the driver's load once the kernel has stopped.
constexpr int kLoadTimeoutS = 60;
/// Most seconds a change waits for the tasks of the operators it retires.
constexpr int kRetireTimeoutS = 120;

std::uint64_t ns_since(Clock::time_point t0) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

/// The u32 at `offset` of a symbol's initial data in the image, or nullopt.
std::optional<std::uint32_t> elf_u32(const std::vector<char>& elf, const std::string& sym, std::size_t offset) {
  const auto d = jit::elf_symbol_data(elf, sym);
  if (!d || d->size() < offset + 4) return std::nullopt;
  std::uint32_t v;
  std::memcpy(&v, d->data() + offset, 4);
  return v;
}

/// Refuses new tasks of `ids` for the scope; gives them back unless kept (a change that failed).
struct Retiring {
  AcceptTable& accept;
  const Served& serving;
  std::vector<std::uint32_t> ids;
  bool keep = false;
  Retiring(AcceptTable& a, const Served& s, std::vector<std::uint32_t> i) : accept(a), serving(s), ids(std::move(i)) {
    for (std::uint32_t id : ids) accept.refuse(id);
  }
  ~Retiring() {
    if (!keep)
      for (std::uint32_t id : ids) accept.accept(id, serving.ops.at(id).arg_bytes);
  }
};

}  // namespace

/// The JIT state of a runtime: options, the compile cache.
struct Generations::Jit {
  jit::Cache cache;
  jit::CompileOptions copts;
  jit::LinkOptions lopts;
  explicit Jit(const jit::CacheConfig& cc) : cache(cc) {}
};

/// A change being built: what would serve, and what the call is about.
struct Generations::Build {
  Served next;
  std::string focus;  // the source the call is about: build errors are recorded for it
  std::uint32_t compiled = 0;
  Clock::time_point t0 = Clock::now();
};

Generations::Generations(CUcontext ctx, const gpuos_options& o, const gpuos_device_info& info, const common::Config& cfg,
                         OpRegistry& reg, ResidentKernel& kernel, Submitter& sub, RunState& run)
    : ctx_(ctx), opts_(o), info_(info), cfg_(cfg), reg_(reg), kernel_(kernel), sub_(sub), run_(run) {}

Generations::~Generations() = default;

Generations::Jit& Generations::jit() {
  if (jit_) return *jit_;
  jit::set_compile_limit(static_cast<unsigned>(cfg_.jit_max_compiles));
  auto j = std::make_unique<Jit>(jit::CacheConfig::from(cfg_));
  j->copts.arch = GPUOS_CUDA_ARCH;
  j->copts.include_dirs = jit::runtime_include_dirs(cfg_);  // throws with a clear message without CCCL
  // NVRTC's automatic precompiled header: sources that begin with the same includes (gpuos/op.cuh)
  // parse them once per process (~35 ms instead of ~450 ms a compile on the build machine).
  j->copts.extra_options = {"-pch", "-pch-messages=false"};
  // An operator that needs more stage memory than this runtime gives can refuse to compile (gpuos/op.cuh).
  j->copts.defines = {"GPUOS_STAGE_BYTES=" + std::to_string(opts_.stage_bytes) + "u"};
  j->lopts.arch = GPUOS_CUDA_ARCH;
  // Operators run inside the resident kernel: compiled within its register budget (gpuos/limits.h).
  j->lopts.extra_options = {"-maxrregcount=" + std::to_string(GPUOS_MAX_REGISTERS)};
  jit_ = std::move(j);
  return *jit_;
}

void Generations::refuse(const std::string& focus, gpuos_status s, const std::string& why) {
  if (!focus.empty()) reg_.set_error(focus, why);
  const bool serving = !focus.empty() && reg_.serving().units.contains(focus);
  fail(s, why + (serving ? "\n(the loaded version of " + focus + " keeps serving)" : std::string()));
}

// ---- the switch -----------------------------------------------------------------------------------------
void Generations::switch_image(const std::vector<char>* cubin, gpuos_generation& g) {
  ResidentKernel::Control c = kernel_.control();
  run_.check_usable();
  run_.check_open();
  ImageSet& images = c.images();
  if (!cubin && !images.has_previous()) fail(GPUOS_ERR_UNAVAILABLE, "there is no previous generation to roll back to");
  CtxScope scope(ctx_);
  const bool running = c.running();
  switches_.fetch_add(1);  // activity: the monitor waits for a quiet spell after it to unload
  // While the old generation serves: start loading the new image and give the driver's host-side work
  // the load lead before stopping the kernel.
  std::shared_ptr<PendingLoad> pending;
  if (cubin) {
    pending = PendingLoad::start(ctx_, *cubin);
    if (running) {
      const auto t = Clock::now();
      pending->wait_for(images.load_lead());
      g.overlap_ns = ns_since(t);
    }
  }
  const auto t0 = Clock::now();
  if (running) c.stop();
  g.stop_ns = ns_since(t0);
  const auto stopped = Clock::now();
  // Every task below `fetched` was taken by the old kernel and has finished; the rest wait in the ring.
  g.first_ticket = c.fetched();
  if (cubin) {
    // The device is idle now, so the load finishes in well under a millisecond. Bounded all the same: a
    // driver that never returns must not take the runtime with it. The old generation then serves again
    // and the caller gets the error; the thread's module, should it ever arrive, is left loaded
    // (unloading it would need another idle device).
    if (!pending->wait_for(std::chrono::seconds(kLoadTimeoutS))) {
      if (running) c.launch();
      fail(GPUOS_ERR_TIMEOUT, "the driver did not finish loading the new generation's image within " +
                                  std::to_string(kLoadTimeoutS) + " s of the kernel's stop; the old generation serves on");
    }
    const CUmodule m = pending->module();
    CUresult r = pending->result();
    // A load still busy on the host when the kernel stopped lengthened the pause by that much.
    if (running) images.adapt_load_lead(pending->returned() - stopped);
    Image next{m, nullptr, 0, cubin->size(), opts_.stage_bytes};
    int per_sm = 0;
    if (r == CUDA_SUCCESS) r = drv().cuModuleGetFunction(&next.kernel, m, "gpuos_main");
    if (r == CUDA_SUCCESS) r = blocks_per_sm(next.kernel, opts_, cfg_, per_sm);
    if (r != CUDA_SUCCESS) {
      if (m) drv().cuModuleUnload(m);
      if (running) c.launch();
      cu_check(r, "loading the new generation's image", __FILE__, __LINE__);
    }
    next.grid = grid_of(per_sm, opts_, info_);
    if (next.grid == 0) {
      drv().cuModuleUnload(m);
      if (running) c.launch();
      fail(GPUOS_ERR_UNSUPPORTED, "the new generation's kernel fits " + std::to_string(per_sm) +
                                      " blocks per SM; it needs at least 2 co-resident blocks (an operator uses too "
                                      "many registers or too much shared memory)");
    }
    images.install(next);
  } else {
    images.swap_previous();
  }
  g.load_ns = ns_since(stopped);
  // Bounded: past kMaxRetiredBytes the oldest go now, inside this pause (counted in unload_ns).
  const auto u0 = Clock::now();
  if (images.trim_retired()) g.unload_ns = ns_since(u0);
  g.retired = images.retired_count();
  if (running) c.launch();
  g.pause_ns = ns_since(t0);
  g.launch_ns = g.pause_ns - g.stop_ns - g.load_ns - g.unload_ns;
  if (cfg_.switch_trace && running) {
    // One line per switch: the stop's steps in us after the request, and when the load's thread
    // returned (negative: before the request).
    const StopTiming& st = c.last_stop();
    const double returned_us = pending ? std::chrono::duration<double, std::micro>(pending->returned() - t0).count() : 0.0;
    std::fprintf(stderr,
                 "gpuos switch (run %llu): lead %.0f overlap %.0f | stop: seen %.1f drained %.1f idle %.1f (queries %llu, "
                 "longest %.1f) | load returned %.1f, load %.1f launch %.1f unload %.1f pause %.1f us, retired %u (%zu bytes)\n",
                 static_cast<unsigned long long>(c.run_id()), 1e-3 * static_cast<double>(images.load_lead().count()),
                 1e-3 * static_cast<double>(g.overlap_ns), 1e-3 * static_cast<double>(st.seen_ns),
                 1e-3 * static_cast<double>(st.drained_ns), 1e-3 * static_cast<double>(st.done_ns),
                 static_cast<unsigned long long>(st.queries), 1e-3 * static_cast<double>(st.max_query_ns), returned_us,
                 1e-3 * static_cast<double>(g.load_ns), 1e-3 * static_cast<double>(g.launch_ns),
                 1e-3 * static_cast<double>(g.unload_ns), 1e-3 * static_cast<double>(g.pause_ns), g.retired,
                 images.retired_bytes());
  }
}

// ---- building a generation --------------------------------------------------------------------------------
namespace {
/// Releases a held lock for its scope (the lock is held again when the scope ends, also by an exception).
struct Unlocked {
  explicit Unlocked(std::unique_lock<std::mutex>& l) : l_(l) { l_.unlock(); }
  ~Unlocked() { l_.lock(); }
  Unlocked(const Unlocked&) = delete;
  Unlocked& operator=(const Unlocked&) = delete;
  std::unique_lock<std::mutex>& l_;
};
}  // namespace

gpuos_generation Generations::rebuild(Build& b, std::unique_lock<std::mutex>& lock) {
  Jit& j = jit();
  OpRegistry::Plan plan;
  try {
    plan = reg_.plan(std::move(b.next), b.focus);
  } catch (const Failure& f) {
    refuse(b.focus, f.status(), f.what());
  }
  // Link: the scheduler, the dispatch loops with the built-ins, every live unit, the table. The scheduler
  // is relocatable SASS (linked as it is) or, with GPUOS_KERNEL_LTO=1, LTO-IR (re-optimized with the
  // operators: same code, ~20x the link). The dispatch loops are SASS, or, with GPUOS_INLINE_OPERATORS=1,
  // LTO-IR that the table's gpuos_loaded_tile inlines the operators' tiles into (kernel/dispatch.cu).
  auto bytes = [](const unsigned char* p, std::size_t n) {
    return std::span<const char>(reinterpret_cast<const char*>(p), n);
  };
  jit::ImageSpec spec;
  spec.base.push_back({jit::InputKind::object,
                       cfg_.kernel_lto ? bytes(gpuos_kernel_lto, gpuos_kernel_lto_size)
                                       : bytes(gpuos_kernel_rdc, gpuos_kernel_rdc_size),
                       cfg_.kernel_lto ? "gpuos_kernel (LTO-IR)" : "gpuos_kernel (SASS)"});
  spec.base.push_back({jit::InputKind::object,
                       cfg_.inline_operators ? bytes(gpuos_dispatch_lto, gpuos_dispatch_lto_size)
                                             : bytes(gpuos_dispatch_rdc, gpuos_dispatch_rdc_size),
                       cfg_.inline_operators ? "gpuos_dispatch (LTO-IR)" : "gpuos_dispatch (SASS)"});
  spec.inline_operators = cfg_.inline_operators != 0;
  for (std::uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i) {
    spec.base_operators.push_back(gpuos_builtin_op_name(i));
    spec.table.push_back({i, gpuos_builtin_op_name(i)});
  }
  for (const auto& [uname, u] : plan.next.units) spec.units.push_back(u.serving.get());
  for (const auto& [id, op] : plan.next.ops) spec.table.push_back({id, op.name});
  const std::uint64_t nvrtc_before = jit::compile_stats().nvrtc_compiles;
  jit::ImageResult img;
  {
    Unlocked unlocked(lock);  // the registry cannot change meanwhile: changes wait for change_mu_
    img = jit::build_image(spec, j.lopts, j.copts, &j.cache);
  }
  b.compiled += static_cast<std::uint32_t>(jit::compile_stats().nvrtc_compiles - nvrtc_before);  // the table
  if (!img.ok)
    refuse(b.focus, GPUOS_ERR_INVALID_ARG, (b.focus.empty() ? std::string("link") : b.focus + ": link") + " error:\n" + img.error);
  if (auto v = elf_u32(img.cubin, "gpuos_image_abi_version", 0); v && *v != GPUOS_ABI_VERSION)
    refuse(b.focus, GPUOS_ERR_INTERNAL, "the linked image has ABI version " + std::to_string(*v) + ", the host " +
                                            std::to_string(GPUOS_ABI_VERSION));
  try {
    reg_.complete(
        plan,
        [&](const std::string& name) { return elf_u32(img.cubin, "gpuos_op_" + name + "_entry", offsetof(gpuos::OpEntry, arg_bytes)); },
        generations_ + 1);
  } catch (const Failure& f) {
    refuse(b.focus, f.status(), f.what());
  }
  // Retiring operators stop accepting now; the tasks already submitted finish (on the old image) first.
  Retiring retiring(reg_.accept(), reg_.serving(), plan.retiring);
  if (!retiring.ids.empty())
    sub_.wait_completed(kernel_.queue().issued(), common::Deadline::after(std::chrono::seconds(kRetireTimeoutS)),
                        "the tasks submitted before the operator was retired did not finish within " +
                            std::to_string(kRetireTimeoutS) + " s");
  gpuos_generation g{};
  g.build_ns = ns_since(b.t0);
  switch_image(&img.cubin, g);
  g.number = ++generations_;
  g.compiled = b.compiled;
  g.linked = img.from_cache ? 0 : 1;
  g.changed = 1;
  retiring.keep = true;
  reg_.commit(std::move(plan), g.number);
  if (!b.focus.empty()) reg_.clear_error(b.focus);
  prev_ = cur_;
  cur_ = g;
  return g;
}

gpuos_generation Generations::load(const std::string& source_name, const std::string* text) {
  std::lock_guard<std::mutex> change(change_mu_);
  return load_locked(source_name, text);
}

gpuos_generation Generations::load_locked(const std::string& source_name, const std::string* text) {
  if (source_name.empty()) fail(GPUOS_ERR_INVALID_ARG, "source name is empty");
  std::unique_lock<std::mutex> lock(mu_);
  run_.check_usable();
  run_.check_open();
  Jit& j = jit();
  Build b;
  b.focus = source_name;
  std::string src;
  jit::CompileResult r;
  if (text) {
    src = *text;
    Unlocked unlocked(lock);
    r = jit::compile(source_name, src, j.copts, &j.cache);
  } else {
    std::ifstream f(source_name, std::ios::binary);
    if (!f) {
      const std::string why = source_name + ": error: cannot read the file: " + std::strerror(errno);
      reg_.set_error(source_name, why);
      fail(GPUOS_ERR_INVALID_ARG, why);
    }
    src.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    const std::string dir = std::filesystem::path(source_name).parent_path().string();
    Unlocked unlocked(lock);
    r = jit::compile(source_name, src, j.copts, &j.cache, dir.empty() ? "." : dir);
  }
  const auto serving = reg_.serving().units.find(source_name);
  const bool is_serving = serving != reg_.serving().units.end();
  if (!r.ok()) {
    reg_.set_error(source_name, r.error_text());
    fail(GPUOS_ERR_INVALID_ARG, "operator source " + source_name + " does not compile (" +
                                    (is_serving ? "the loaded version keeps serving" : "nothing loaded") + "):\n" +
                                    r.error_text());
  }
  const jit::Hash128 hash = jit::hash128(src);
  if (is_serving && serving->second.hash == hash) {
    reg_.clear_error(source_name);  // an earlier broken edit was reverted: the serving version is current
    gpuos_generation g = cur_;
    g.changed = 0;
    g.build_ns = ns_since(b.t0);
    return g;
  }
  b.compiled = r.from_cache ? 0 : 1;
  b.next = reg_.serving();
  b.next.units[source_name] = Unit{std::make_shared<const jit::CompileResult>(std::move(r)), hash, 0};
  return rebuild(b, lock);
}

gpuos_generation Generations::load_all(const std::vector<std::string>& paths, std::vector<std::string>& errors) {
  errors.clear();
  if (paths.empty()) return current();
  std::lock_guard<std::mutex> change(change_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jit();
  }
  // Compile every source concurrently (jit bounds the number of NVRTC compiles at once); the results
  // are taken from the cache below.
  std::vector<std::future<void>> jobs;
  for (const std::string& p : paths)
    jobs.push_back(std::async(std::launch::async, [this, p] {
      try {
        jit::compile_file(p, jit_->copts, &jit_->cache);
      } catch (...) {
      }
    }));
  for (auto& job : jobs) job.get();
  // One generation with everything that compiles: register each source in turn, checking names, and
  // link once at the end.
  std::unique_lock<std::mutex> lock(mu_);
  run_.check_usable();
  run_.check_open();
  Jit& j = jit();
  Build b;
  b.next = reg_.serving();
  for (const std::string& p : paths) {
    jit::CompileResult r = jit::compile_file(p, j.copts, &j.cache);
    if (!r.ok()) {
      reg_.set_error(p, r.error_text());
      errors.push_back(r.error_text());
      continue;
    }
    if (const std::string why = reg_.clash(p, r.operators, b.next); !why.empty()) {
      reg_.set_error(p, p + ": error: " + why);
      errors.push_back(p + ": error: " + why);
      continue;
    }
    std::ifstream f(p, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    b.compiled += r.from_cache ? 0 : 1;
    b.next.units[p] = Unit{std::make_shared<const jit::CompileResult>(std::move(r)), jit::hash128(text), 0};
  }
  if (b.next.units.size() == reg_.serving().units.size() && errors.size() == paths.size()) return cur_;
  std::vector<std::string> added;
  for (const auto& [uname, u] : b.next.units)
    if (!reg_.serving().units.contains(uname)) added.push_back(uname);
  try {
    return rebuild(b, lock);
  } catch (const Failure&) {
    if (run_.faulted()) throw;
  }
  // The set does not link together: load one by one, so that only the culprit fails.
  gpuos_generation g = cur_;
  lock.unlock();
  for (const std::string& p : added) {
    try {
      g = load_locked(p, nullptr);
    } catch (const Failure& f) {
      errors.push_back(f.what());
    }
  }
  return g;
}

gpuos_generation Generations::remove(const std::string& source_name) {
  std::lock_guard<std::mutex> change(change_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  run_.check_usable();
  if (!reg_.serving().units.contains(source_name)) {
    if (reg_.error_of(source_name)) {  // it never loaded: forget its error
      reg_.clear_error(source_name);
      return cur_;
    }
    fail(GPUOS_ERR_INVALID_ARG, "no operator source named '" + source_name + "' is loaded");
  }
  Build b;
  b.focus = source_name;
  b.next = reg_.serving();
  b.next.units.erase(source_name);
  gpuos_generation g = rebuild(b, lock);
  reg_.clear_error(source_name);
  return g;
}

gpuos_generation Generations::rollback() {
  std::lock_guard<std::mutex> change(change_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  run_.check_usable();
  Retiring retiring(reg_.accept(), reg_.serving(), reg_.plan_rollback());
  if (!retiring.ids.empty())
    sub_.wait_completed(kernel_.queue().issued(), common::Deadline::after(std::chrono::seconds(kRetireTimeoutS)),
                        "the tasks submitted before the rollback retired their operators did not finish within " +
                            std::to_string(kRetireTimeoutS) + " s");
  gpuos_generation g = prev_;
  switch_image(nullptr, g);
  g.build_ns = 0;
  g.compiled = 0;
  g.linked = 0;
  g.changed = 1;
  retiring.keep = true;
  reg_.commit_rollback();
  prev_ = cur_;
  cur_ = g;
  return g;
}

gpuos_generation Generations::current() {
  std::lock_guard<std::mutex> lock(mu_);
  return cur_;
}

// ---- names and aliases ------------------------------------------------------------------------------------
std::uint32_t Generations::op_id(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const auto id = reg_.live_id(name)) return *id;
  fail(GPUOS_ERR_INVALID_ARG, "no live operator or alias is named '" + name + "'");
}

std::uint64_t Generations::alias_set(const std::string& alias, const std::string& target) {
  std::lock_guard<std::mutex> change(change_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  run_.check_usable();
  const OpRegistry::AliasPlan p = reg_.plan_alias(alias, target);
  const std::uint64_t ticket = sub_.enqueue_alias(p.logical, p.target);
  reg_.commit_alias(alias, p, false);  // registered only once its switch is in the queue
  return ticket;
}

std::uint64_t Generations::alias_rollback(const std::string& alias) {
  std::lock_guard<std::mutex> change(change_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  run_.check_usable();
  const OpRegistry::AliasPlan p = reg_.plan_alias_rollback(alias);
  const std::uint64_t ticket = sub_.enqueue_alias(p.logical, p.target);
  reg_.commit_alias(alias, p, true);
  return ticket;
}

std::optional<std::string> Generations::try_op_name(std::uint32_t id) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return reg_.name_of(id);
}

std::vector<gpuos_op_info> Generations::list() {
  std::lock_guard<std::mutex> lock(mu_);
  const SubmitQueue& q = kernel_.queue();
  return reg_.rows([&](std::uint32_t id, std::uint64_t& completed, std::uint64_t& failed) {
    completed = q.completed_of_op(id);
    failed = q.failed_of_op(id);
  });
}

}  // namespace gpuos::detail
