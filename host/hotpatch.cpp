// Hot-patching: operators compiled at run time, linked into new generations of the device image, and an
// alias table ordered with the tasks.
//
// A generation is one cubin: the resident kernel and the built-ins (the LTO object embedded at build
// time), every live operator source (NVRTC LTO-IR) and a generated jump table, linked by nvJitLink
// (jit/image.hpp). Building it happens while the running generation serves. The switch is the suspend
// path: the front end stops taking tasks from the ring, the tasks it took finish on the old code, the
// kernel exits, the new module is loaded (a module cannot be loaded while the kernel runs, gpu-facts.md
// §1) and the kernel is relaunched with the same LaunchParams: the tasks still in the ring run the new
// code. The previous module stays loaded, so a rollback is a quiesce and a relaunch.
//
// Aliases need no quiesce: an alias switch is a control task in the ring, applied by the front end in
// ticket order, which resolves every task's op through the alias table as it copies it to the device.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <future>
#include <iterator>
#include <thread>

#include <immintrin.h>

#include "driver.hpp"
#include "error.hpp"
#include "hotpatch.hpp"
#include "jit/headers.hpp"
#include "jit/image.hpp"

extern "C" {
extern const unsigned char gpuos_kernel_lto[];
extern const size_t gpuos_kernel_lto_size;
extern const unsigned char gpuos_kernel_rdc[];
extern const size_t gpuos_kernel_rdc_size;
}

namespace gpuos::detail {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t ns_since(Clock::time_point t0) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

template <size_t N>
void copy_str(char (&dst)[N], const std::string& s) {
  const size_t n = std::min(N - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

struct CtxScope {
  explicit CtxScope(CUcontext c) { GPUOS_CU_TRY(drv().cuCtxSetCurrent(c)); }
};

/// The u32 at `offset` of a symbol's initial data in the image, or nullopt.
std::optional<uint32_t> elf_u32(const std::vector<char>& elf, const std::string& sym, size_t offset) {
  const auto d = jit::elf_symbol_data(elf, sym);
  if (!d || d->size() < offset + 4) return std::nullopt;
  uint32_t v;
  std::memcpy(&v, d->data() + offset, 4);
  return v;
}

}  // namespace

Runtime::Hotpatch::Hotpatch() : cache(jit::CacheConfig::from_env()) {
  copts.arch = GPUOS_CUDA_ARCH;
  copts.include_dirs = jit::runtime_include_dirs();  // throws with a clear message without CCCL
  // NVRTC's automatic precompiled header: sources that begin with the same includes (gpuos/op.cuh)
  // parse them once per process (~35 ms instead of ~450 ms a compile on the build machine).
  copts.extra_options = {"-pch", "-pch-messages=false"};
  lopts.arch = GPUOS_CUDA_ARCH;
  // Operators run inside the resident kernel: compiled within its register budget (gpuos/abi.h).
  lopts.extra_options = {"-maxrregcount=" + std::to_string(GPUOS_MAX_REGISTERS)};
  for (uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i) ids[gpuos_builtin_op_name(i)] = i;
}

// ---- the kernel side of a switch ----------------------------------------------------------------------
namespace {

/// A cuModuleLoadData on a thread of its own. The driver does the load's host-side work first and then
/// waits for an idle device (measured with bench_module on an H200: a load of the kernel's image started
/// 2 ms before a spinning kernel's exit returned ~40 us after it; on an idle device the whole load takes
/// 190-360 us). So a switch starts the load while the old generation still serves and stops the kernel
/// once the host-side work is likely done. What stays in the pause is the driver's device-side work
/// (~125 us on an H100 after the resident kernel's exit, during which other driver calls wait); with
/// lazy module loading (a process that chose it: host/driver.cpp asks for eager loading) the load of the
/// kernel's code by cuModuleGetFunction adds ~150 us. Shared with the thread: if the switch gives up (a
/// kernel that does not stop), the thread finishes on its own whenever the driver returns.
/// Most seconds a switch waits for the driver's load once the kernel has stopped.
constexpr int kLoadTimeoutS = 60;

/// GPUOS_SWITCH_TRACE=1: every switch under a running kernel prints where its pause went (stderr).
bool switch_trace() {
  static const bool on = [] {
    const char* v = std::getenv("GPUOS_SWITCH_TRACE");
    return v && *v && *v != '0';
  }();
  return on;
}

struct PendingLoad {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  CUresult r = CUDA_SUCCESS;
  CUmodule module = nullptr;
  Clock::time_point returned;

  std::vector<char> image;  // a copy: the thread may outlive the switch that started it

  static std::shared_ptr<PendingLoad> start(CUcontext ctx, const std::vector<char>& image) {
    auto p = std::make_shared<PendingLoad>();
    p->image = image;
    std::thread([p, ctx] {
      CUresult r = drv().cuCtxSetCurrent(ctx);
      CUmodule m = nullptr;
      if (r == CUDA_SUCCESS) r = drv().cuModuleLoadData(&m, p->image.data());
      std::lock_guard<std::mutex> lock(p->m);
      p->r = r;
      p->module = m;
      p->returned = Clock::now();
      p->done = true;
      p->cv.notify_all();
    }).detach();
    return p;
  }
  /// Waits up to `d` (or for ever with a negative d); true once the load returned.
  bool wait_for(std::chrono::nanoseconds d) {
    std::unique_lock<std::mutex> lock(m);
    if (d.count() < 0) {
      cv.wait(lock, [&] { return done; });
      return true;
    }
    return cv.wait_for(lock, d, [&] { return done; });
  }
};

}  // namespace

void Runtime::switch_image(const std::vector<char>* cubin, gpuos_generation& g) {
  uint64_t& first_ticket = g.first_ticket;
  std::lock_guard<std::mutex> lock(control_mutex_);
  check_usable();
  if (closing_.load()) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is shut down");
  if (!cubin && !prev_.module) fail(GPUOS_ERR_UNAVAILABLE, "there is no previous generation to roll back to");
  CtxScope scope(ctx_);
  const bool running = state_flag_.load() == State::Running;
  switches_.fetch_add(1);  // activity: the monitor waits for a quiet spell after it to unload
  // While the old generation serves: start loading the new image and give the driver's host-side work
  // `load_lead_` before stopping the kernel.
  std::shared_ptr<PendingLoad> pending;
  if (cubin) {
    pending = PendingLoad::start(ctx_, *cubin);
    if (running) {
      const auto t = Clock::now();
      pending->wait_for(load_lead_);
      g.overlap_ns = ns_since(t);
    }
  }
  const auto t0 = Clock::now();
  if (running) stop_kernel(30.0);
  g.stop_ns = ns_since(t0);
  const auto stopped = Clock::now();
  // Every task below `fetched` was taken by the old kernel and has finished; the rest wait in the ring.
  first_ticket = __atomic_load_n(&control_->fetched, __ATOMIC_ACQUIRE);
  Image next;
  if (cubin) {
    // The device is idle now, so the load finishes in well under a millisecond (bench_module). Bounded
    // all the same: a driver that never returns must not take the runtime with it. The old generation
    // then serves again and the caller gets the error; the thread's module, should it ever arrive, is
    // left loaded (unloading it would need another idle device).
    if (!pending->wait_for(std::chrono::seconds(kLoadTimeoutS))) {
      if (running) launch();
      fail(GPUOS_ERR_TIMEOUT, "the driver did not finish loading the new generation's image within " +
                                  std::to_string(kLoadTimeoutS) + " s of the kernel's stop; the old generation serves on");
    }
    CUmodule m = pending->module;
    CUresult r = pending->r;
    if (running) {
      // Adapt the lead: a load that was still busy on the host when the kernel stopped lengthened the
      // pause by that much; double the lead next time (bounded: it delays the switch, not serving).
      const auto tail = pending->returned - stopped;
      if (tail > std::chrono::microseconds(150)) load_lead_ = std::min<std::chrono::nanoseconds>(2 * load_lead_, std::chrono::milliseconds(16));
    }
    // (Measured with lazy loading: asking for the kernel and its occupancy on the loading thread instead
    // made the pause longer, ~570 vs ~250 us after the exit.)
    CUfunction fn = nullptr;
    if (r == CUDA_SUCCESS) r = drv().cuModuleGetFunction(&fn, m, "gpuos_main");
    if (r == CUDA_SUCCESS) r = prefer_l1(fn, opts_.device);
    int per_sm = 0;
    if (r == CUDA_SUCCESS)
      r = drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, GPUOS_BLOCK_THREADS, 0);
    if (r != CUDA_SUCCESS) {
      if (m) drv().cuModuleUnload(m);
      if (running) launch();
      cu_check(r, "loading the new generation's image", __FILE__, __LINE__);
    }
    if (opts_.blocks_per_sm != 0) per_sm = std::min<int>(per_sm, static_cast<int>(opts_.blocks_per_sm));
    const int sms = opts_.sm_budget == 0 ? info_.sm_count : std::min<int>(info_.sm_count, static_cast<int>(opts_.sm_budget));
    if (per_sm * sms < 2) {
      drv().cuModuleUnload(m);
      if (running) launch();
      fail(GPUOS_ERR_UNSUPPORTED, "the new generation's kernel fits " + std::to_string(per_sm * sms) +
                                      " co-resident blocks; it needs at least 2 (an operator uses too many registers "
                                      "or too much shared memory)");
    }
    next = Image{m, fn, static_cast<uint32_t>(per_sm * sms), cubin->size()};
    // The generation before the previous one is retired, not unloaded: an unload also needs an idle
    // device and does all its work after the kernel has exited (~200-400 us for the kernel's image,
    // bench_module), so it is left to a moment without tasks (monitor_loop) or a suspend.
    if (prev_.module) {
      retired_.push_back(prev_);
      retired_bytes_ += prev_.bytes;
    }
    prev_ = Image{module_, kernel_, grid_, image_bytes_};
  } else {
    next = prev_;
    prev_ = Image{module_, kernel_, grid_, image_bytes_};
  }
  module_ = next.module;
  image_bytes_ = next.bytes;
  kernel_ = next.kernel;
  grid_ = next.grid;
  info_.grid_blocks = static_cast<int32_t>(grid_);
  g.load_ns = ns_since(stopped);
  // Bounded: past kMaxRetiredBytes the oldest go now, inside this pause (counted in unload_ns).
  if (retired_bytes_ > kMaxRetiredBytes) {
    const auto u0 = Clock::now();
    while (retired_bytes_ > kMaxRetiredBytes && !retired_.empty()) {
      drv().cuModuleUnload(retired_.front().module);
      retired_bytes_ -= retired_.front().bytes;
      retired_.erase(retired_.begin());
    }
    g.unload_ns = ns_since(u0);
  }
  g.retired = static_cast<uint32_t>(retired_.size());
  if (running) launch();
  g.pause_ns = ns_since(t0);
  g.launch_ns = g.pause_ns - g.stop_ns - g.load_ns - g.unload_ns;
  if (switch_trace() && running) {
    // One line per switch (diagnostics): the stop's steps in us after the request, and when the load's
    // thread returned (negative: before the request).
    const double returned_us = pending ? std::chrono::duration<double, std::micro>(pending->returned - t0).count() : 0.0;
    std::fprintf(stderr,
                 "gpuos switch (run %llu): lead %.0f overlap %.0f | stop: seen %.1f drained %.1f idle %.1f (queries %llu, "
                 "longest %.1f) | load returned %.1f, load %.1f launch %.1f unload %.1f pause %.1f us, retired %u (%zu bytes)\n",
                 static_cast<unsigned long long>(run_id_), 1e-3 * static_cast<double>(load_lead_.count()),
                 1e-3 * static_cast<double>(g.overlap_ns), 1e-3 * static_cast<double>(last_stop_.seen_ns),
                 1e-3 * static_cast<double>(last_stop_.drained_ns), 1e-3 * static_cast<double>(last_stop_.done_ns),
                 static_cast<unsigned long long>(last_stop_.queries), 1e-3 * static_cast<double>(last_stop_.max_query_ns),
                 returned_us, 1e-3 * static_cast<double>(g.load_ns), 1e-3 * static_cast<double>(g.launch_ns),
                 1e-3 * static_cast<double>(g.unload_ns), 1e-3 * static_cast<double>(g.pause_ns), g.retired,
                 retired_bytes_);
  }
}

void Runtime::submit_control(const abi::ControlArgs& c, uint64_t& ticket) {
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = GPUOS_OP_CONTROL;
  p.arg_bytes = sizeof(abi::ControlArgs);
  p.tiles = 1;
  std::memcpy(p.args, &c, sizeof(c));
  struct Active {
    std::atomic<int>& n;
    explicit Active(std::atomic<int>& a) : n(a) { n.fetch_add(1, std::memory_order_seq_cst); }
    ~Active() { n.fetch_sub(1, std::memory_order_seq_cst); }
  } active(active_submitters_);
  if (closing_.load(std::memory_order_seq_cst)) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is shut down");
  check_usable();
  for (uint32_t spins = 0; !queue_->try_reserve(1, ticket); ++spins) {
    queue_->reap();
    check_usable();
    if (spins < 256)
      _mm_pause();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
  queue_->publish(ticket, p);
}

void Runtime::wait_retired(uint64_t end) {
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  for (uint32_t spins = 0; queue_->reap() < end; ++spins) {
    check_usable();
    if (Clock::now() > deadline)
      fail(GPUOS_ERR_TIMEOUT, "the tasks submitted before the operator was retired did not finish within 120 s");
    if (spins < 1024)
      _mm_pause();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// ---- generations --------------------------------------------------------------------------------------
struct Runtime::HotpatchBuild {
  Hotpatch::Registry next;
  std::string focus;  // the source the call is about: build errors are recorded for it
  uint32_t compiled = 0;
  Clock::time_point t0;
};
using Build = Runtime::HotpatchBuild;

Runtime::Hotpatch& Runtime::hotpatch() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (!hp_) hp_ = std::make_unique<Hotpatch>();
  return *hp_;
}

gpuos_generation Runtime::load_operator(const std::string& source_name, const std::string* text) {
  if (source_name.empty()) fail(GPUOS_ERR_INVALID_ARG, "source name is empty");
  Hotpatch& h = hotpatch();
  std::lock_guard<std::mutex> lock(h.mu);
  check_usable();
  if (closing_.load()) fail(GPUOS_ERR_UNAVAILABLE, "the runtime is shut down");
  Build b;
  b.t0 = Clock::now();
  b.focus = source_name;

  std::string src;
  jit::CompileResult r;
  if (text) {
    src = *text;
    r = jit::compile(source_name, src, h.copts, &h.cache);
  } else {
    std::ifstream f(source_name, std::ios::binary);
    if (!f) {
      h.errors[source_name] = source_name + ": error: cannot read the file: " + std::strerror(errno);
      fail(GPUOS_ERR_INVALID_ARG, h.errors[source_name]);
    }
    src.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    std::string dir = std::filesystem::path(source_name).parent_path().string();
    r = jit::compile(source_name, src, h.copts, &h.cache, dir.empty() ? "." : dir);
  }
  const bool serving = h.reg.units.contains(source_name);
  if (!r.ok()) {
    h.errors[source_name] = r.error_text();
    fail(GPUOS_ERR_INVALID_ARG, "operator source " + source_name + " does not compile (" +
                                    (serving ? "the loaded version keeps serving" : "nothing loaded") + "):\n" +
                                    h.errors[source_name]);
  }
  const jit::Hash128 hash = jit::hash128(src);
  if (serving && h.reg.units.at(source_name).hash == hash) {
    h.errors.erase(source_name);  // an earlier broken edit was reverted: the serving version is current
    gpuos_generation g = h.cur;
    g.changed = 0;
    g.build_ns = ns_since(b.t0);
    return g;
  }
  b.compiled = r.from_cache ? 0 : 1;
  b.next = h.reg;
  b.next.units[source_name] = Hotpatch::Unit{std::make_shared<const jit::CompileResult>(std::move(r)), hash, 0};
  return rebuild(h, b);
}

gpuos_generation Runtime::load_operators(const std::vector<std::string>& paths, std::vector<std::string>& errors) {
  errors.clear();
  if (paths.empty()) return generation();
  Hotpatch& h = hotpatch();
  // Compile every source concurrently (jit bounds the number of NVRTC compiles), then load them one
  // by one from the cache: each load is then a cache hit plus one link, and a bad file only fails itself.
  std::vector<std::future<void>> jobs;
  for (const std::string& p : paths)
    jobs.push_back(std::async(std::launch::async, [&h, p] {
      try {
        jit::compile_file(p, h.copts, &h.cache);  // warms the cache; the result is taken below
      } catch (...) {
      }
    }));
  for (auto& j : jobs) j.get();
  // One generation with everything that compiles: register each source in turn, checking names, and
  // link once at the end.
  std::unique_lock<std::mutex> lock(h.mu);
  check_usable();
  Build b;
  b.t0 = Clock::now();
  b.next = h.reg;
  for (const std::string& p : paths) {
    jit::CompileResult r = jit::compile_file(p, h.copts, &h.cache);
    if (!r.ok()) {
      h.errors[p] = r.error_text();
      errors.push_back(h.errors[p]);
      continue;
    }
    std::string clash;
    for (const std::string& op : r.operators) {
      auto it = h.ids.find(op);
      if (it != h.ids.end() && it->second < GPUOS_BUILTIN_OP_COUNT) clash = "operator '" + op + "' is a built-in";
      if (it != h.ids.end() && h.aliases.contains(it->second)) clash = "operator '" + op + "' is an alias name";
      for (const auto& [uname, u] : b.next.units)
        if (uname != p)
          for (const std::string& o : u.serving->operators)
            if (o == op) clash = "operator '" + op + "' is already declared by " + uname;
    }
    if (!clash.empty()) {
      h.errors[p] = p + ": error: " + clash;
      errors.push_back(h.errors[p]);
      continue;
    }
    std::ifstream f(p, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    b.compiled += r.from_cache ? 0 : 1;
    b.next.units[p] = Hotpatch::Unit{std::make_shared<const jit::CompileResult>(std::move(r)), jit::hash128(text), 0};
  }
  if (b.next.units.size() == h.reg.units.size() && errors.size() == paths.size()) return h.cur;
  try {
    return rebuild(h, b);
  } catch (const Failure&) {
    if (faulted_.load()) throw;
  }
  // The set does not link together: load one by one, so that only the culprit fails.
  std::vector<std::string> ok_paths;
  for (const auto& [uname, u] : b.next.units)
    if (!h.reg.units.contains(uname)) ok_paths.push_back(uname);
  gpuos_generation g = h.cur;
  lock.unlock();
  for (const std::string& p : ok_paths) {
    try {
      g = load_operator(p, nullptr);
    } catch (const Failure& f) {
      errors.push_back(f.what());
    }
  }
  return g;
}

gpuos_generation Runtime::remove_operator_source(const std::string& source_name) {
  if (!hp_) fail(GPUOS_ERR_INVALID_ARG, "no operator source named '" + source_name + "' is loaded");
  Hotpatch& h = *hp_;
  std::lock_guard<std::mutex> lock(h.mu);
  check_usable();
  if (!h.reg.units.contains(source_name)) {
    if (h.errors.erase(source_name)) return h.cur;  // it never loaded: forget its error
    fail(GPUOS_ERR_INVALID_ARG, "no operator source named '" + source_name + "' is loaded");
  }
  Build b;
  b.t0 = Clock::now();
  b.focus = source_name;
  b.next = h.reg;
  b.next.units.erase(source_name);
  gpuos_generation g = rebuild(h, b);
  h.errors.erase(source_name);
  return g;
}

gpuos_generation Runtime::rebuild(Hotpatch& h, Build& b) {
  auto set_accept = [this](uint32_t id, int64_t bytes) {
    accept_[id].store(bytes < 0 ? 0u : kAccept | static_cast<uint32_t>(bytes), std::memory_order_release);
  };
  auto error = [&](gpuos_status s, const std::string& why) -> gpuos_generation {
    if (!b.focus.empty()) h.errors[b.focus] = why;
    fail(s, why + (b.focus.empty() || !h.reg.units.contains(b.focus)
                       ? std::string()
                       : "\n(the loaded version of " + b.focus + " keeps serving)"));
  };
  // Names: unique over the units, not a built-in, not an alias; ids stable per name.
  std::map<std::string, std::string> declared;
  for (const auto& [uname, u] : b.next.units)
    for (const std::string& op : u.serving->operators) {
      auto it = h.ids.find(op);
      if (it != h.ids.end() && it->second < GPUOS_BUILTIN_OP_COUNT)
        return error(GPUOS_ERR_INVALID_ARG, uname + ": error: operator '" + op + "' is the name of a built-in operator");
      if (it != h.ids.end() && h.aliases.contains(it->second))
        return error(GPUOS_ERR_INVALID_ARG, uname + ": error: operator '" + op + "' is the name of an alias");
      auto [d, fresh] = declared.emplace(op, uname);
      if (!fresh) {
        const std::string other = d->second == b.focus ? uname : d->second;
        return error(GPUOS_ERR_INVALID_ARG,
                     b.focus + ": error: operator '" + op + "' is already declared by " + other);
      }
    }
  std::map<std::string, uint32_t> new_ids;
  uint32_t next_id = h.next_id;
  b.next.ops.clear();
  for (const auto& [op, uname] : declared) {
    uint32_t id;
    if (auto it = h.ids.find(op); it != h.ids.end()) {
      id = it->second;
    } else {
      if (next_id >= GPUOS_OP_HEAP_CTL)
        return error(GPUOS_ERR_INVALID_ARG, "no free operator id for '" + op + "' (GPUOS_MAX_OPS is " +
                                                std::to_string(GPUOS_MAX_OPS) + ")");
      id = next_id++;
      new_ids[op] = id;
    }
    b.next.ops[id] = Runtime::Hotpatch::Op{op, uname, 0, 0};
  }

  // Link: kernel + built-ins, every live unit, the table.
  jit::ImageSpec spec;
  // The kernel: relocatable SASS (linked as is), or with GPUOS_KERNEL_LTO=1 LTO-IR (re-optimized with the
  // operators each generation: same code paths, ~20x the link time).
  const char* lto_env = std::getenv("GPUOS_KERNEL_LTO");
  const bool kernel_lto = lto_env && std::string(lto_env) == "1";
  spec.base.push_back({jit::InputKind::object,
                       kernel_lto ? std::span<const char>(reinterpret_cast<const char*>(gpuos_kernel_lto), gpuos_kernel_lto_size)
                                  : std::span<const char>(reinterpret_cast<const char*>(gpuos_kernel_rdc), gpuos_kernel_rdc_size),
                       kernel_lto ? "gpuos_kernel (LTO-IR)" : "gpuos_kernel (SASS)"});
  for (uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i) {
    spec.base_operators.push_back(gpuos_builtin_op_name(i));
    spec.table.push_back({i, gpuos_builtin_op_name(i)});
  }
  for (const auto& [uname, u] : b.next.units) spec.units.push_back(u.serving.get());
  for (const auto& [id, op] : b.next.ops) spec.table.push_back({id, op.name});
  const uint64_t nvrtc_before = jit::compile_stats().nvrtc_compiles;
  const jit::ImageResult img = jit::build_image(spec, h.lopts, h.copts, &h.cache);
  b.compiled += static_cast<uint32_t>(jit::compile_stats().nvrtc_compiles - nvrtc_before);  // the table
  if (!img.ok) return error(GPUOS_ERR_INVALID_ARG, (b.focus.empty() ? std::string("link") : b.focus + ": link") +
                                                       " error:\n" + img.error);
  if (auto v = elf_u32(img.cubin, "gpuos_image_abi_version", 0); v && *v != GPUOS_ABI_VERSION)
    return error(GPUOS_ERR_INTERNAL, "the linked image has ABI version " + std::to_string(*v) + ", the host " +
                                         std::to_string(GPUOS_ABI_VERSION));
  for (auto& [id, op] : b.next.ops) {
    const auto bytes = elf_u32(img.cubin, "gpuos_op_" + op.name + "_entry", offsetof(OpEntryRow, arg_bytes));
    if (!bytes || *bytes > GPUOS_MAX_ARG_BYTES)
      return error(GPUOS_ERR_INTERNAL, "cannot read the argument size of operator '" + op.name + "' from the image");
    op.arg_bytes = *bytes;
    auto old = h.reg.ops.find(id);
    const bool same = old != h.reg.ops.end() && old->second.unit == op.unit &&
                      h.reg.units.at(op.unit).hash == b.next.units.at(op.unit).hash;
    op.generation = same ? old->second.generation : h.generations + 1;
  }
  // An alias's targets all take the same argument size.
  for (const auto& [logical, a] : h.aliases) {
    const uint32_t t = a.targets.back();
    if (auto it = b.next.ops.find(t); t >= GPUOS_BUILTIN_OP_COUNT && it == b.next.ops.end())
      return error(GPUOS_ERR_INVALID_ARG, "operator id " + std::to_string(t) +
                                              " is the current target of an alias: it cannot be removed");
    else if (it != b.next.ops.end() && it->second.arg_bytes != a.arg_bytes)
      return error(GPUOS_ERR_INVALID_ARG, "operator '" + it->second.name + "' is the target of an alias of " +
                                              std::to_string(a.arg_bytes) + "-byte arguments; the new version takes " +
                                              std::to_string(it->second.arg_bytes));
  }

  // Retire: operators that go away, or whose argument size changes, stop accepting tasks; the ones
  // already submitted finish (on the old image) before the switch.
  std::vector<uint32_t> retired;
  for (const auto& [id, op] : h.reg.ops) {
    auto it = b.next.ops.find(id);
    if (it == b.next.ops.end() || it->second.arg_bytes != op.arg_bytes) retired.push_back(id);
  }
  for (uint32_t id : retired) set_accept(id, -1);
  try {
    if (!retired.empty()) wait_retired(queue_->issued());
    gpuos_generation g{};
    g.build_ns = ns_since(b.t0);
    switch_image(&img.cubin, g);
    g.number = ++h.generations;
    g.compiled = b.compiled;
    g.linked = img.from_cache ? 0 : 1;
    g.changed = 1;
    for (auto& [uname, u] : b.next.units)
      if (!h.reg.units.contains(uname) || h.reg.units.at(uname).hash != u.hash) u.generation = g.number;
    for (const auto& [op, id] : new_ids) h.ids[op] = id;
    h.next_id = next_id;
    for (const auto& [id, op] : b.next.ops) set_accept(id, op.arg_bytes);
    if (!b.focus.empty()) h.errors.erase(b.focus);
    for (const auto& [uname, u] : b.next.units) h.errors.erase(uname);
    h.prev_reg = std::move(h.reg);
    h.reg = std::move(b.next);
    h.prev_gen = h.cur;
    h.cur = g;
    h.have_prev = true;
    return g;
  } catch (...) {
    for (uint32_t id : retired) set_accept(id, h.reg.ops.at(id).arg_bytes);
    throw;
  }
}

gpuos_generation Runtime::rollback_generation() {
  if (!hp_ || !hp_->have_prev) fail(GPUOS_ERR_UNAVAILABLE, "there is no previous generation to roll back to");
  Hotpatch& h = *hp_;
  std::lock_guard<std::mutex> lock(h.mu);
  check_usable();
  for (const auto& [logical, a] : h.aliases) {
    const uint32_t t = a.targets.back();
    if (t >= GPUOS_BUILTIN_OP_COUNT && !h.prev_reg.ops.contains(t))
      fail(GPUOS_ERR_INVALID_ARG, "the previous generation lacks operator id " + std::to_string(t) +
                                      ", the current target of an alias: point the alias elsewhere first");
  }
  std::vector<uint32_t> retired;
  for (const auto& [id, op] : h.reg.ops) {
    auto it = h.prev_reg.ops.find(id);
    if (it == h.prev_reg.ops.end() || it->second.arg_bytes != op.arg_bytes) retired.push_back(id);
  }
  for (uint32_t id : retired) accept_[id].store(0);
  gpuos_generation g = h.prev_gen;
  try {
    if (!retired.empty()) wait_retired(queue_->issued());
    switch_image(nullptr, g);
  } catch (...) {
    for (uint32_t id : retired) accept_[id].store(kAccept | h.reg.ops.at(id).arg_bytes);
    throw;
  }
  g.build_ns = 0;
  g.compiled = 0;
  g.linked = 0;
  g.changed = 1;
  for (const auto& [id, op] : h.prev_reg.ops) accept_[id].store(kAccept | op.arg_bytes);
  std::swap(h.reg, h.prev_reg);
  h.prev_gen = h.cur;
  h.cur = g;
  return g;
}

gpuos_generation Runtime::generation() {
  if (!hp_) return gpuos_generation{};
  std::lock_guard<std::mutex> lock(hp_->mu);
  return hp_->cur;
}

// ---- names and aliases --------------------------------------------------------------------------------
uint32_t Runtime::op_id(const std::string& name) {
  for (uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i)
    if (name == gpuos_builtin_op_name(i)) return i;
  if (hp_) {
    std::lock_guard<std::mutex> lock(hp_->mu);
    auto it = hp_->ids.find(name);
    if (it != hp_->ids.end() && (accept_[it->second].load() & kAccept)) return it->second;
  }
  fail(GPUOS_ERR_INVALID_ARG, "no live operator or alias is named '" + name + "'");
}

uint64_t Runtime::alias_set(const std::string& alias, const std::string& target) {
  Hotpatch& h = hotpatch();
  std::lock_guard<std::mutex> lock(h.mu);
  check_usable();
  auto t = h.ids.find(target);
  if (t == h.ids.end() || !(accept_[t->second].load() & kAccept))
    fail(GPUOS_ERR_INVALID_ARG, "alias target '" + target + "' is not a live operator");
  if (h.aliases.contains(t->second))
    fail(GPUOS_ERR_INVALID_ARG, "alias target '" + target + "' is an alias itself (point at an operator)");
  const uint32_t target_id = t->second;
  const uint32_t bytes = accept_[target_id].load() & ~kAccept;
  uint32_t logical;
  bool fresh = false;
  if (auto a = h.ids.find(alias); a != h.ids.end()) {
    logical = a->second;
    auto it = h.aliases.find(logical);
    if (it == h.aliases.end())
      fail(GPUOS_ERR_INVALID_ARG, "'" + alias + "' is an operator, not an alias");
    if (it->second.arg_bytes != bytes)
      fail(GPUOS_ERR_INVALID_ARG, "alias '" + alias + "' takes " + std::to_string(it->second.arg_bytes) +
                                      "-byte arguments; '" + target + "' takes " + std::to_string(bytes));
  } else {
    if (alias.empty()) fail(GPUOS_ERR_INVALID_ARG, "alias name is empty");
    if (h.next_id >= GPUOS_OP_HEAP_CTL) fail(GPUOS_ERR_INVALID_ARG, "no free operator id for alias '" + alias + "'");
    logical = h.next_id;
    fresh = true;
  }
  uint64_t ticket = 0;
  submit_control(abi::ControlArgs{static_cast<uint16_t>(logical), static_cast<uint16_t>(target_id), abi::kControlAlias},
                 ticket);
  if (fresh) {  // registered only once its first switch is in the queue
    ++h.next_id;
    h.ids[alias] = logical;
    h.aliases[logical].arg_bytes = bytes;
  }
  h.aliases[logical].targets.push_back(target_id);
  accept_[logical].store(kAccept | bytes, std::memory_order_release);
  return ticket;
}

uint64_t Runtime::alias_rollback(const std::string& alias) {
  if (!hp_) fail(GPUOS_ERR_INVALID_ARG, "no alias is named '" + alias + "'");
  Hotpatch& h = *hp_;
  std::lock_guard<std::mutex> lock(h.mu);
  check_usable();
  auto a = h.ids.find(alias);
  if (a == h.ids.end() || !h.aliases.contains(a->second)) fail(GPUOS_ERR_INVALID_ARG, "no alias is named '" + alias + "'");
  Hotpatch::Alias& al = h.aliases[a->second];
  if (al.targets.size() < 2) fail(GPUOS_ERR_INVALID_ARG, "alias '" + alias + "' has no previous target");
  const uint32_t back = al.targets[al.targets.size() - 2];
  if (!(accept_[back].load() & kAccept))
    fail(GPUOS_ERR_INVALID_ARG, "the previous target of alias '" + alias + "' (id " + std::to_string(back) +
                                    ") is no longer loaded");
  uint64_t ticket = 0;
  submit_control(abi::ControlArgs{static_cast<uint16_t>(a->second), static_cast<uint16_t>(back), abi::kControlAlias},
                 ticket);
  al.targets.pop_back();
  return ticket;
}

std::vector<gpuos_op_info> Runtime::list_ops() {
  std::vector<gpuos_op_info> rows;
  auto row = [&](const std::string& name, uint32_t id, gpuos_op_kind kind, uint32_t bytes, uint32_t target,
                 uint64_t gen, const std::string& source, const std::string& error) {
    gpuos_op_info r{};
    copy_str(r.name, name);
    r.id = id;
    r.kind = kind;
    r.arg_bytes = bytes;
    r.target = target;
    r.generation = gen;
    copy_str(r.source, source);
    copy_str(r.error, error);
    rows.push_back(r);
  };
  for (uint32_t i = 0; i < GPUOS_BUILTIN_OP_COUNT; ++i)
    row(gpuos_builtin_op_name(i), i, GPUOS_OP_KIND_BUILTIN, accept_[i].load() & ~kAccept, i, 0, "", "");
  if (!hp_) return rows;
  Hotpatch& h = *hp_;
  std::lock_guard<std::mutex> lock(h.mu);
  for (const auto& [id, op] : h.reg.ops) {
    auto e = h.errors.find(op.unit);
    row(op.name, id, GPUOS_OP_KIND_LOADED, op.arg_bytes, id, op.generation, op.unit, e == h.errors.end() ? "" : e->second);
  }
  for (const auto& [logical, a] : h.aliases) {
    std::string name;
    for (const auto& [n, id] : h.ids)
      if (id == logical) name = n;
    row(name, logical, GPUOS_OP_KIND_ALIAS, a.arg_bytes, a.targets.empty() ? logical : a.targets.back(), 0, "", "");
  }
  for (const auto& [src, err] : h.errors)
    if (!h.reg.units.contains(src)) row("", UINT32_MAX, GPUOS_OP_KIND_FAILED, 0, UINT32_MAX, 0, src, err);
  return rows;
}

}  // namespace gpuos::detail
