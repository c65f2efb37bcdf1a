// gpuos C++ API: a thin RAII shell over the C ABI in gpuos/gpuos.h.
//
//   gpuos::Runtime rt;                                   // boots on device 0
//   auto t = rt.submit(gpuos::ops::add(out, a, b, n));   // thread-safe
//   rt.wait(t);                                          // throws gpuos::Error on failure
//
//   gpuos::Graph g;                                      // a task graph: build once,
//   auto a = g.add(gpuos::ops::add(x, x, y, n));
//   g.add(gpuos::ops::mul(z, x, x, n), {a});             // runs after a
//   gpuos::GraphExec ge(rt, g);                          // instantiate,
//   rt.wait(ge.launch());                                // launch many times
//
// Errors are gpuos::Error exceptions carrying the gpuos_status and the message. Destructors never throw.
#ifndef GPUOS_GPUOS_HPP
#define GPUOS_GPUOS_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gpuos/gpuos.h"

namespace gpuos {

using Status = gpuos_status;
using Ticket = std::uint64_t;
using Stats = gpuos_stats;
using DeviceInfo = gpuos_device_info;

class Error : public std::runtime_error {
 public:
  Error(Status s, const std::string& what) : std::runtime_error(what), status_(s) {}
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

namespace detail {
inline void check(Status s) {
  if (s != GPUOS_OK) {
    const char* msg = gpuos_last_error();
    throw Error(s, std::string(gpuos_status_name(s)) + ": " + (msg && *msg ? msg : "(no detail)"));
  }
}
inline std::int64_t to_ns(std::chrono::nanoseconds d) { return d.count(); }
}  // namespace detail

/// A task ready to submit: operator id, tile count and an inline copy of its argument struct.
struct Task {
  std::uint32_t op = GPUOS_OP_NOP;
  std::uint32_t tiles = 1;
  std::uint32_t arg_bytes = 0;
  /// The watchdog's deadline for this task's calls (gpuos_task.deadline_ms; 0 = the operator's or runtime's).
  std::uint32_t deadline_ms = 0;
  alignas(8) unsigned char args[GPUOS_MAX_ARG_BYTES] = {};

  template <class Args>
  static Task make(std::uint32_t op, std::uint32_t tiles, const Args& a) {
    static_assert(std::is_trivially_copyable_v<Args>, "operator arguments must be trivially copyable");
    static_assert(sizeof(Args) <= sizeof(args), "operator arguments exceed GPUOS_MAX_ARG_BYTES");
    Task t;
    t.op = op;
    t.tiles = tiles;
    t.arg_bytes = sizeof(Args);
    std::memcpy(t.args, &a, sizeof(Args));
    return t;
  }
  Task& with_deadline(std::uint32_t ms) {
    deadline_ms = ms;
    return *this;
  }
  gpuos_task c() const { return gpuos_task{op, tiles, arg_bytes ? args : nullptr, arg_bytes, deadline_ms}; }
};

/// Builders for the built-in operators (ids and argument layouts from gpuos/builtin_ops.h).
namespace ops {
inline Task nop() { return Task{}; }
inline Task fill(float* out, float value, std::uint64_t n) {
  return Task::make(GPUOS_OP_FILL, gpuos_tiles_for(n), gpuos_fill_args{out, n, value, 0});
}
inline Task copy(float* out, const float* in, std::uint64_t n) {
  return Task::make(GPUOS_OP_COPY, gpuos_tiles_for(n), gpuos_copy_args{out, in, n});
}
inline Task add(float* out, const float* a, const float* b, std::uint64_t n) {
  return Task::make(GPUOS_OP_ADD, gpuos_tiles_for(n), gpuos_binary_args{out, a, b, n});
}
inline Task mul(float* out, const float* a, const float* b, std::uint64_t n) {
  return Task::make(GPUOS_OP_MUL, gpuos_tiles_for(n), gpuos_binary_args{out, a, b, n});
}
inline Task axpy(float* y, float alpha, const float* x, std::uint64_t n) {
  return Task::make(GPUOS_OP_AXPY, gpuos_tiles_for(n), gpuos_axpy_args{y, x, n, alpha, 0});
}
inline Task sum(float* out, const float* x, std::uint64_t n) {
  return Task::make(GPUOS_OP_SUM, gpuos_tiles_for(n), gpuos_sum_args{out, x, n});
}
}  // namespace ops

struct Options : gpuos_options {
  Options() { gpuos_options_init(this); }
  Options& with_device(int d) { device = d; return *this; }
  Options& with_sm_budget(std::uint32_t s) { sm_budget = s; return *this; }
  Options& with_queue_capacity(std::uint32_t c) { queue_capacity = c; return *this; }
  /// Each block's stage memory for operators, in bytes (gpuos_options.stage_bytes, gpuos::stage).
  Options& with_stage(std::uint32_t bytes) { stage_bytes = bytes; return *this; }
  /// How long the kernel stays resident under load, and idle, before it leaves the GPU (gpuos_options
  /// slice_us, park_us; 0 = never).
  Options& with_residency(std::uint32_t slice, std::uint32_t park) {
    slice_us = slice;
    park_us = park;
    return *this;
  }
  /// The watchdog's deadline on every operator call, in ms (gpuos_options.deadline_ms; 0 = none).
  Options& with_deadline(std::uint32_t ms) {
    deadline_ms = ms;
    return *this;
  }
  Options& with_heap(std::uint64_t bytes, std::uint32_t flags = 0) {
    heap_bytes = bytes;
    heap_flags = flags;
    return *this;
  }
  /// Directories of the operator compiler; nullptr keeps the environment's setting or the default
  /// (docs/configuration.md). The strings must stay valid until the Runtime is constructed.
  Options& with_compiler_dirs(const char* cache, const char* include = nullptr, const char* cccl = nullptr) {
    cache_dir = cache;
    include_dir = include;
    cccl_dir = cccl;
    return *this;
  }
};

using HeapStats = gpuos_heap_stats;

class Lane;

/// Owns a running resident kernel on one GPU.
class Runtime {
 public:
  explicit Runtime(const Options& o = Options()) { detail::check(gpuos_create(&o, &rt_)); }
  ~Runtime() { gpuos_destroy(rt_); }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  Runtime(Runtime&& o) noexcept : rt_(o.rt_) { o.rt_ = nullptr; }
  Runtime& operator=(Runtime&& o) noexcept {
    if (this != &o) {
      gpuos_destroy(rt_);
      rt_ = o.rt_;
      o.rt_ = nullptr;
    }
    return *this;
  }

  /// Submits a task; blocks while the queue is full.
  Ticket submit(const Task& t) {
    gpuos_task c = t.c();
    Ticket k = 0;
    detail::check(gpuos_submit(rt_, &c, &k));
    return k;
  }
  /// Submits unless the queue is full (then returns nullopt and submits nothing).
  std::optional<Ticket> try_submit(const Task& t) {
    gpuos_task c = t.c();
    Ticket k = 0;
    Status s = gpuos_try_submit(rt_, &c, &k);
    if (s == GPUOS_ERR_QUEUE_FULL) return std::nullopt;
    detail::check(s);
    return k;
  }
  /// Submits a task in `stream`'s order (a CUstream or cudaStream_t; gpuos_submit_on_stream).
  void submit_on_stream(const Task& t, void* stream) {
    const gpuos_task c = t.c();
    detail::check(gpuos_submit_on_stream(rt_, &c, stream));
  }
  /// Submits tasks with consecutive tickets; returns the first.
  Ticket submit_batch(std::span<const Task> ts) {
    const std::vector<gpuos_task> c = c_tasks(ts);
    Ticket k = 0;
    detail::check(gpuos_submit_batch(rt_, c.data(), c.size(), &k));
    return k;
  }
  /// Submits tasks in `stream`'s order; the stream's later work waits for all (gpuos_submit_batch_on_stream).
  void submit_batch_on_stream(std::span<const Task> ts, void* stream) {
    const std::vector<gpuos_task> c = c_tasks(ts);
    detail::check(gpuos_submit_batch_on_stream(rt_, c.data(), c.size(), stream));
  }
  /// Submits a task that runs after every ticket in `after` and, with a lane, after the lane's previous
  /// task (gpuos_submit_after).
  Ticket submit_after(const Task& t, std::span<const Ticket> after, Lane* lane = nullptr);
  /// The same in `stream`'s order (gpuos_submit_after_on_stream).
  void submit_after_on_stream(const Task& t, std::span<const Ticket> after, Lane* lane, void* stream);
  /// Waits for a task; false on timeout; throws if it failed or the device faulted.
  bool wait(Ticket t, std::chrono::nanoseconds timeout = std::chrono::nanoseconds(-1)) {
    Status s = gpuos_wait(rt_, t, detail::to_ns(timeout));
    if (s == GPUOS_ERR_TIMEOUT) return false;
    detail::check(s);
    return true;
  }
  /// Waits for every task submitted so far; false on timeout.
  bool drain(std::chrono::nanoseconds timeout = std::chrono::nanoseconds(-1)) {
    Status s = gpuos_drain(rt_, detail::to_ns(timeout));
    if (s == GPUOS_ERR_TIMEOUT) return false;
    detail::check(s);
    return true;
  }
  Stats stats() const {
    Stats s{};
    detail::check(gpuos_get_stats(rt_, &s));
    return s;
  }
  DeviceInfo device_info() const {
    DeviceInfo d{};
    detail::check(gpuos_get_device_info(rt_, &d));
    return d;
  }
  void suspend() { detail::check(gpuos_suspend(rt_)); }
  /// Stops accepting tasks, drains, stops the kernel; waits and stats keep working.
  void shutdown() { detail::check(gpuos_shutdown(rt_)); }
  void resume() { detail::check(gpuos_resume(rt_)); }

  /// The watchdog's deadline for every call of operator `op` (gpuos_set_op_deadline; 0 = the runtime's).
  void set_op_deadline(std::uint32_t op, std::uint32_t ms) { detail::check(gpuos_set_op_deadline(rt_, op, ms)); }
  /// Plain-text report of the runtime's internal state (see gpuos_diagnose).
  std::string diagnose() const { return text_of(gpuos_diagnose); }
  /// The statistics as Prometheus text (see gpuos_metrics).
  std::string metrics() const { return text_of(gpuos_metrics); }

  // ---- operators loaded at run time (gpuos/gpuos.h: "Operators loaded at run time") ----------------
  using Generation = gpuos_generation;
  using OpInfo = gpuos_op_info;
  /// Compiles and switches to a generation serving the file; throws Error with the diagnostics.
  Generation load_operator_file(const std::string& path) {
    Generation g{};
    detail::check(gpuos_load_operator_file(rt_, path.c_str(), &g));
    return g;
  }
  /// Loads every file that compiles in one generation; `failed` (may be null) receives how many did not
  /// (their errors are in list_ops()).
  Generation load_operator_files(const std::vector<std::string>& paths, std::size_t* failed = nullptr) {
    std::vector<const char*> p;
    for (const std::string& s : paths) p.push_back(s.c_str());
    Generation g{};
    std::size_t f = 0;
    detail::check(gpuos_load_operator_files(rt_, p.data(), p.size(), &g, &f));
    if (failed) *failed = f;
    return g;
  }
  Generation load_operator_source(const std::string& name, const std::string& source) {
    Generation g{};
    detail::check(gpuos_load_operator_source(rt_, name.c_str(), source.data(), source.size(), &g));
    return g;
  }
  Generation remove_operator_source(const std::string& name) {
    Generation g{};
    detail::check(gpuos_remove_operator_source(rt_, name.c_str(), &g));
    return g;
  }
  std::uint32_t op_id(const std::string& name) const {
    std::uint32_t id = 0;
    detail::check(gpuos_op_id(rt_, name.c_str(), &id));
    return id;
  }
  /// Returns the switch's ticket: earlier tickets run the old target, later ones the new.
  Ticket alias_set(const std::string& alias, const std::string& target) {
    Ticket t = 0;
    detail::check(gpuos_alias_set(rt_, alias.c_str(), target.c_str(), &t));
    return t;
  }
  Ticket alias_rollback(const std::string& alias) {
    Ticket t = 0;
    detail::check(gpuos_alias_rollback(rt_, alias.c_str(), &t));
    return t;
  }
  Generation rollback_generation() {
    Generation g{};
    detail::check(gpuos_generation_rollback(rt_, &g));
    return g;
  }
  Generation generation() const {
    Generation g{};
    detail::check(gpuos_get_generation(rt_, &g));
    return g;
  }
  std::vector<OpInfo> list_ops() const {
    std::size_t n = 0;
    detail::check(gpuos_list_ops(rt_, nullptr, 0, &n));
    std::vector<OpInfo> v(n + 8);
    detail::check(gpuos_list_ops(rt_, v.data(), v.size(), &n));
    v.resize(std::min(n, v.size()));
    return v;
  }

  /// Allocates device memory from the runtime's heap (served by the resident kernel). Throws Error
  /// (GPUOS_ERR_OUT_OF_MEMORY when the heap cannot serve it, GPUOS_ERR_INVALID_ARG for an alignment that
  /// is not a power of two).
  void* alloc(std::size_t bytes, std::size_t align = 16) {
    void* p = nullptr;
    detail::check(gpuos_alloc(rt_, bytes, align, &p));
    return p;
  }
  template <class T>
  T* alloc_array(std::size_t n) {
    return static_cast<T*>(alloc(n * sizeof(T), alignof(T) > 16 ? alignof(T) : 16));
  }
  /// Returns a block to the heap; throws Error (GPUOS_ERR_INVALID_ARG) on a double or foreign free.
  void free(void* p) { detail::check(gpuos_free(rt_, p)); }
  HeapStats heap_stats() const {
    HeapStats s{};
    detail::check(gpuos_heap_get_stats(rt_, &s));
    return s;
  }
  /// Runs the heap's invariant checker on the device; false (and the violation in *why) if it fails.
  bool heap_check(std::string* why = nullptr) const {
    const Status s = gpuos_heap_check(rt_);
    if (s == GPUOS_ERR_INTERNAL) {
      if (why) *why = gpuos_last_error();
      return false;
    }
    detail::check(s);
    return true;
  }

  gpuos_runtime* handle() const noexcept { return rt_; }
  /// Gives the handle up: the caller destroys it with gpuos_destroy (whose status says whether the
  /// kernel could be ended). The Runtime is empty afterwards.
  gpuos_runtime* release() noexcept {
    gpuos_runtime* r = rt_;
    rt_ = nullptr;
    return r;
  }

 private:
  static std::vector<gpuos_task> c_tasks(std::span<const Task> ts) {
    std::vector<gpuos_task> c;
    c.reserve(ts.size());
    for (const Task& t : ts) c.push_back(t.c());
    return c;
  }
  /// A text the C ABI writes into a buffer (gpuos_diagnose, gpuos_metrics): one call when it fits 64 KiB
  /// (a metrics read has effects: it reads the heap through the ring), asked again with more room when not.
  std::string text_of(gpuos_status (*f)(gpuos_runtime*, char*, size_t, size_t*)) const {
    size_t needed = 64 * 1024 - 1024;
    for (;;) {
      std::string s(needed + 1024, '\0');
      detail::check(f(rt_, s.data(), s.size(), &needed));
      if (needed <= s.size()) {
        s.resize(needed - 1);
        return s;
      }
    }
  }
  gpuos_runtime* rt_ = nullptr;
};

/// A lane of a runtime: the tasks submitted to it run one after the other (gpuos_lane). It must not outlive
/// its runtime.
class Lane {
 public:
  explicit Lane(Runtime& rt) : rt_(rt.handle()) { detail::check(gpuos_lane_create(rt_, &lane_)); }
  ~Lane() { gpuos_lane_destroy(rt_, lane_); }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  gpuos_lane* handle() const noexcept { return lane_; }

 private:
  gpuos_runtime* rt_;
  gpuos_lane* lane_ = nullptr;
};

inline Ticket Runtime::submit_after(const Task& t, std::span<const Ticket> after, Lane* lane) {
  gpuos_task c = t.c();
  Ticket k = 0;
  detail::check(gpuos_submit_after(rt_, &c, after.data(), after.size(), lane ? lane->handle() : nullptr, &k));
  return k;
}

inline void Runtime::submit_after_on_stream(const Task& t, std::span<const Ticket> after, Lane* lane, void* stream) {
  const gpuos_task c = t.c();
  detail::check(gpuos_submit_after_on_stream(rt_, &c, after.data(), after.size(), lane ? lane->handle() : nullptr, stream));
}

/// A task graph being built: nodes (tasks) and edges ("to runs after from"). Instantiate it on a runtime
/// (GraphExec) to launch it.
class Graph {
 public:
  Graph() { detail::check(gpuos_graph_create(&g_)); }
  ~Graph() { gpuos_graph_destroy(g_); }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }

  /// Adds a node; returns its id.
  std::uint32_t add(const Task& t) {
    gpuos_task c = t.c();
    std::uint32_t id = 0;
    detail::check(gpuos_graph_add_node(g_, &c, &id));
    return id;
  }
  /// Adds a node that runs after each node in `after`; returns its id.
  std::uint32_t add(const Task& t, std::initializer_list<std::uint32_t> after) {
    const std::uint32_t id = add(t);
    for (std::uint32_t a : after) edge(a, id);
    return id;
  }
  /// Node `to` runs after node `from`.
  void edge(std::uint32_t from, std::uint32_t to) { detail::check(gpuos_graph_add_edge(g_, from, to)); }
  const gpuos_graph* handle() const noexcept { return g_; }

 private:
  gpuos_graph* g_ = nullptr;
};

/// An instance of a graph on a runtime: launch it many times, change node arguments in between. It must
/// not outlive its runtime; destroying it waits for its launches.
class GraphExec {
 public:
  GraphExec(Runtime& rt, const Graph& g) : rt_(rt.handle()) {
    detail::check(gpuos_graph_instantiate(rt_, g.handle(), &e_));
  }
  ~GraphExec() { gpuos_graph_exec_destroy(rt_, e_); }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  /// Node `node`'s arguments for the next launches (the same struct type as the node's).
  template <class Args>
  void set_args(std::uint32_t node, const Args& a) {
    static_assert(std::is_trivially_copyable_v<Args>, "operator arguments must be trivially copyable");
    detail::check(gpuos_graph_exec_set_args(rt_, e_, node, &a, sizeof(Args)));
  }
  /// Launches in `stream`'s order (a CUstream or cudaStream_t; gpuos_graph_launch_on_stream).
  void launch_on_stream(void* stream) { detail::check(gpuos_graph_launch_on_stream(rt_, e_, stream)); }
  /// Launches after every ticket in `after` (and the lane's previous task); returns the launch's ticket.
  Ticket launch(std::span<const Ticket> after = {}, Lane* lane = nullptr) {
    Ticket k = 0;
    detail::check(gpuos_graph_launch(rt_, e_, after.data(), after.size(), lane ? lane->handle() : nullptr, &k));
    return k;
  }
  gpuos_graph_exec* handle() const noexcept { return e_; }

 private:
  gpuos_runtime* rt_;
  gpuos_graph_exec* e_ = nullptr;
};

/// An operator directory the runtime loads and watches (gpuos_ops_dir_open). It must not outlive its
/// runtime; destroying it stops the watching (the operators stay loaded).
class OpsDir {
 public:
  OpsDir(Runtime& rt, const std::string& dir, unsigned debounce_ms = 20, gpuos_ops_dir_callback callback = nullptr,
         void* user = nullptr)
      : rt_(rt.handle()) {
    detail::check(gpuos_ops_dir_open(rt_, dir.c_str(), debounce_ms, callback, user, &d_));
  }
  ~OpsDir() { close(); }
  OpsDir(const OpsDir&) = delete;
  OpsDir& operator=(const OpsDir&) = delete;

  gpuos_ops_dir_stats stats() const {
    gpuos_ops_dir_stats s{};
    detail::check(gpuos_ops_dir_get_stats(rt_, d_, &s));
    return s;
  }
  void close() noexcept {
    if (d_) gpuos_ops_dir_close(rt_, d_);
    d_ = nullptr;
  }

 private:
  gpuos_runtime* rt_;
  gpuos_ops_dir* d_ = nullptr;
};

/// Device and grid gpuos would use, without booting.
inline DeviceInfo query_device(const Options& o = Options()) {
  DeviceInfo d{};
  detail::check(gpuos_query_device(&o, &d));
  return d;
}

}  // namespace gpuos

#endif  // GPUOS_GPUOS_HPP
