// The C ABI: every entry point checks its pointers, runs the call on the runtime and converts any
// exception into a gpuos_status and a per-thread message (gpuos_last_error).
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "gpuos/gpuos.h"
#include "host/device.hpp"
#include "host/graph.hpp"
#include "host/graphs.hpp"
#include "host/ops_dir.hpp"
#include "host/runtime.hpp"
#include "host/submitter.hpp"

struct gpuos_ops_dir {
  gpuos::detail::OpsDir dir;
};

struct gpuos_runtime {
  gpuos::detail::Runtime impl;
  // Declared after impl: destroyed first, so no watcher loads into a runtime being torn down.
  std::mutex dirs_mu;
  std::vector<std::unique_ptr<gpuos_ops_dir>> dirs;
  explicit gpuos_runtime(const gpuos_options& o) : impl(o) {}
  /// Stops every operator directory's watcher (outside dirs_mu: a stopping watcher may be loading).
  void close_dirs() {
    std::vector<std::unique_ptr<gpuos_ops_dir>> d;
    {
      std::lock_guard<std::mutex> lock(dirs_mu);
      d.swap(dirs);
    }
  }
};

struct gpuos_lane {
  gpuos::detail::Lane lane;
  const gpuos_runtime* owner;
};

struct gpuos_graph {
  gpuos::detail::Graph g;
};

namespace {

thread_local std::string t_last_error;

gpuos_status set_error(gpuos_status s, std::string msg) {
  t_last_error = std::move(msg);
  return s;
}

/// Runs f, which returns a gpuos_status, mapping every exception to a status.
template <class F>
gpuos_status guarded(F&& f) noexcept {
  try {
    t_last_error.clear();
    return f();
  } catch (const gpuos::common::Failure& e) {
    return set_error(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(GPUOS_ERR_OUT_OF_MEMORY, "host out of memory");
  } catch (const std::exception& e) {
    return set_error(GPUOS_ERR_INTERNAL, e.what());
  } catch (...) {
    return set_error(GPUOS_ERR_INTERNAL, "unknown exception");
  }
}

/// Runs f, which returns nothing: GPUOS_OK unless it throws.
template <class F>
gpuos_status run(F&& f) noexcept {
  return guarded([&] {
    f();
    return GPUOS_OK;
  });
}

/// Runs f and stores its result in *out (out may be NULL: the result is dropped).
template <class T, class F>
gpuos_status store(T* out, F&& f) noexcept {
  return guarded([&] {
    const T v = f();
    if (out) *out = v;
    return GPUOS_OK;
  });
}

/// A wait's or a drain's status with its message: the runtime's reason, or pending() on a timeout (built
/// only then: a wait that succeeds costs no allocation here).
template <class Pending>
gpuos_status waited(gpuos_status s, const std::string& why, Pending&& pending) {
  if (s == GPUOS_OK) return s;
  return set_error(s, s == GPUOS_ERR_TIMEOUT ? pending() : why);
}

gpuos_options with_defaults(const gpuos_options* opts) {
  gpuos_options o;
  gpuos_options_init(&o);
  if (opts) o = *opts;
  return o;
}

#define GPUOS_REQUIRE(cond, msg) \
  if (!(cond)) return set_error(GPUOS_ERR_INVALID_ARG, msg)

/// The runtime's lane behind a handle (NULL: none); throws unless it is one of rt's.
gpuos::detail::Lane* lane_of(const gpuos_runtime* rt, gpuos_lane* l) {
  if (!l) return nullptr;
  if (l->owner != rt) gpuos::detail::fail(GPUOS_ERR_INVALID_ARG, "the lane belongs to another runtime");
  return &l->lane;
}

gpuos::detail::GraphInstance* instance_of(gpuos_graph_exec* e) { return reinterpret_cast<gpuos::detail::GraphInstance*>(e); }

/// Copies text into buf (at most cap bytes, NUL-terminated when cap > 0); *needed = its length + 1.
void copy_out(const std::string& r, char* buf, size_t cap, size_t* needed) {
  if (needed) *needed = r.size() + 1;
  if (cap > 0) {
    const size_t n = std::min(cap - 1, r.size());
    std::memcpy(buf, r.data(), n);
    buf[n] = '\0';
  }
}

}  // namespace

extern "C" {

const char* gpuos_status_name(gpuos_status s) {
  switch (s) {
    case GPUOS_OK: return "GPUOS_OK";
    case GPUOS_ERR_INVALID_ARG: return "GPUOS_ERR_INVALID_ARG";
    case GPUOS_ERR_QUEUE_FULL: return "GPUOS_ERR_QUEUE_FULL";
    case GPUOS_ERR_TIMEOUT: return "GPUOS_ERR_TIMEOUT";
    case GPUOS_ERR_UNAVAILABLE: return "GPUOS_ERR_UNAVAILABLE";
    case GPUOS_ERR_NO_DEVICE: return "GPUOS_ERR_NO_DEVICE";
    case GPUOS_ERR_DRIVER: return "GPUOS_ERR_DRIVER";
    case GPUOS_ERR_DEVICE_FAULT: return "GPUOS_ERR_DEVICE_FAULT";
    case GPUOS_ERR_TASK_FAILED: return "GPUOS_ERR_TASK_FAILED";
    case GPUOS_ERR_OUT_OF_MEMORY: return "GPUOS_ERR_OUT_OF_MEMORY";
    case GPUOS_ERR_UNSUPPORTED: return "GPUOS_ERR_UNSUPPORTED";
    case GPUOS_ERR_INTERNAL: return "GPUOS_ERR_INTERNAL";
    case GPUOS_ERR_HUNG: return "GPUOS_ERR_HUNG";
  }
  return "GPUOS_ERR_UNKNOWN";
}

const char* gpuos_last_error(void) { return t_last_error.c_str(); }

void gpuos_options_init(gpuos_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(gpuos_options);
  o->queue_capacity = 65536;
  o->heap_bytes = 256ull << 20;
  o->slice_us = 5000;
  o->park_us = 2000;
  o->deadline_ms = 10000;
}

gpuos_status gpuos_create(const gpuos_options* opts, gpuos_runtime** out) {
  GPUOS_REQUIRE(out, "out is NULL");
  *out = nullptr;
  return store(out, [&] { return new gpuos_runtime(with_defaults(opts)); });
}

gpuos_status gpuos_destroy(gpuos_runtime* rt) {
  if (!rt) return GPUOS_OK;
  rt->close_dirs();
  rt->impl.shutdown();  // drains (bounded), stops, frees; never throws
  const std::string abandoned = rt->impl.abandoned();
  delete rt;
  return abandoned.empty() ? GPUOS_OK : set_error(GPUOS_ERR_HUNG, abandoned);
}

gpuos_status gpuos_set_op_deadline(gpuos_runtime* rt, uint32_t op, uint32_t deadline_ms) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return run([&] { rt->impl.set_op_deadline(op, deadline_ms); });
}

gpuos_status gpuos_shutdown(gpuos_runtime* rt) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return run([&] {
    rt->close_dirs();
    rt->impl.close();
  });
}

gpuos_status gpuos_submit(gpuos_runtime* rt, const gpuos_task* task, uint64_t* ticket) {
  GPUOS_REQUIRE(rt && ticket, "rt or ticket is NULL");
  return run([&] { rt->impl.submit(task, 1, true, *ticket); });
}

gpuos_status gpuos_try_submit(gpuos_runtime* rt, const gpuos_task* task, uint64_t* ticket) {
  GPUOS_REQUIRE(rt && ticket, "rt or ticket is NULL");
  return guarded([&] {
    return rt->impl.submit(task, 1, false, *ticket) ? GPUOS_OK : set_error(GPUOS_ERR_QUEUE_FULL, "the queue is full");
  });
}

gpuos_status gpuos_submit_batch(gpuos_runtime* rt, const gpuos_task* tasks, size_t n, uint64_t* first) {
  GPUOS_REQUIRE(rt && first, "rt or first_ticket is NULL");
  return run([&] { rt->impl.submit(tasks, n, true, *first); });
}

gpuos_status gpuos_lane_create(gpuos_runtime* rt, gpuos_lane** out) {
  GPUOS_REQUIRE(rt && out, "rt or out is NULL");
  *out = nullptr;
  return store(out, [&] { return new gpuos_lane{{}, rt}; });
}

gpuos_status gpuos_lane_destroy(gpuos_runtime* rt, gpuos_lane* lane) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return run([&] {
    lane_of(rt, lane);
    delete lane;
  });
}

gpuos_status gpuos_submit_on_stream(gpuos_runtime* rt, const gpuos_task* task, void* stream) {
  GPUOS_REQUIRE(rt && task, "rt or task is NULL");
  return run([&] { rt->impl.submit_on_stream(task, 1, static_cast<CUstream>(stream)); });
}

gpuos_status gpuos_submit_batch_on_stream(gpuos_runtime* rt, const gpuos_task* tasks, size_t n, void* stream) {
  GPUOS_REQUIRE(rt && (tasks || n == 0), "rt or tasks is NULL");
  return run([&] { rt->impl.submit_on_stream(tasks, n, static_cast<CUstream>(stream)); });  // n == 0 refused there
}

gpuos_status gpuos_submit_after_on_stream(gpuos_runtime* rt, const gpuos_task* task, const uint64_t* after,
                                          size_t n_after, gpuos_lane* lane, void* stream) {
  GPUOS_REQUIRE(rt && task && (after || n_after == 0), "rt, task or after is NULL");
  return run([&] {
    rt->impl.submit_after_on_stream(*task, after, n_after, lane_of(rt, lane), static_cast<CUstream>(stream));
  });
}

gpuos_status gpuos_submit_after(gpuos_runtime* rt, const gpuos_task* task, const uint64_t* after, size_t n_after,
                                gpuos_lane* lane, uint64_t* ticket) {
  GPUOS_REQUIRE(rt && task && ticket, "rt, task or ticket is NULL");
  return run([&] { *ticket = rt->impl.submit_after(*task, after, n_after, lane_of(rt, lane)); });
}

gpuos_status gpuos_graph_create(gpuos_graph** out) {
  GPUOS_REQUIRE(out, "out is NULL");
  *out = nullptr;
  return store(out, [] { return new gpuos_graph{}; });
}

gpuos_status gpuos_graph_destroy(gpuos_graph* g) {
  delete g;
  return GPUOS_OK;
}

gpuos_status gpuos_graph_add_node(gpuos_graph* g, const gpuos_task* task, uint32_t* node) {
  GPUOS_REQUIRE(g && task, "graph or task is NULL");
  return store(node, [&] { return g->g.add_node(*task); });
}

gpuos_status gpuos_graph_add_edge(gpuos_graph* g, uint32_t from, uint32_t to) {
  GPUOS_REQUIRE(g, "graph is NULL");
  return run([&] { g->g.add_edge(from, to); });
}

gpuos_status gpuos_graph_instantiate(gpuos_runtime* rt, const gpuos_graph* g, gpuos_graph_exec** out) {
  GPUOS_REQUIRE(rt && g && out, "rt, graph or out is NULL");
  *out = nullptr;
  return store(out, [&] { return reinterpret_cast<gpuos_graph_exec*>(rt->impl.graphs().instantiate(g->g)); });
}

gpuos_status gpuos_graph_exec_set_args(gpuos_runtime* rt, gpuos_graph_exec* e, uint32_t node, const void* args,
                                       uint32_t arg_bytes) {
  GPUOS_REQUIRE(rt && e, "rt or instance is NULL");
  return run([&] { rt->impl.graphs().set_args(instance_of(e), node, args, arg_bytes); });
}

gpuos_status gpuos_graph_launch(gpuos_runtime* rt, gpuos_graph_exec* e, const uint64_t* after, size_t n_after,
                                gpuos_lane* lane, uint64_t* ticket) {
  GPUOS_REQUIRE(rt && e && ticket, "rt, instance or ticket is NULL");
  return run([&] { *ticket = rt->impl.graphs().launch(instance_of(e), after, n_after, lane_of(rt, lane)); });
}

gpuos_status gpuos_graph_launch_on_stream(gpuos_runtime* rt, gpuos_graph_exec* e, void* stream) {
  GPUOS_REQUIRE(rt && e, "rt or instance is NULL");
  return run([&] { rt->impl.graph_launch_on_stream(instance_of(e), static_cast<CUstream>(stream)); });
}

gpuos_status gpuos_graph_exec_destroy(gpuos_runtime* rt, gpuos_graph_exec* e) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  if (!e) return GPUOS_OK;
  return run([&] { rt->impl.graphs().destroy(instance_of(e)); });
}

gpuos_status gpuos_wait(gpuos_runtime* rt, uint64_t ticket, int64_t timeout_ns) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return guarded([&] {
    std::string why;
    const gpuos_status s = rt->impl.wait(ticket, timeout_ns, why);
    return waited(s, why, [&] { return "task " + std::to_string(ticket) + " is still pending"; });
  });
}

gpuos_status gpuos_drain(gpuos_runtime* rt, int64_t timeout_ns) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return guarded([&] {
    std::string why;
    const gpuos_status s = rt->impl.drain(timeout_ns, why);
    return waited(s, why, [] { return std::string("tasks are still pending"); });
  });
}

gpuos_status gpuos_get_stats(gpuos_runtime* rt, gpuos_stats* out) {
  GPUOS_REQUIRE(rt && out, "rt or out is NULL");
  return store(out, [&] { return rt->impl.stats(); });
}

gpuos_status gpuos_suspend(gpuos_runtime* rt) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return run([&] { rt->impl.suspend(); });
}

gpuos_status gpuos_resume(gpuos_runtime* rt) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return run([&] { rt->impl.resume(); });
}

gpuos_status gpuos_diagnose(gpuos_runtime* rt, char* buf, size_t cap, size_t* needed) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  GPUOS_REQUIRE(buf || cap == 0, "buf is NULL with cap > 0");
  return run([&] { copy_out(rt->impl.diagnose(), buf, cap, needed); });
}

gpuos_status gpuos_metrics(gpuos_runtime* rt, char* buf, size_t cap, size_t* needed) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  GPUOS_REQUIRE(buf || cap == 0, "buf is NULL with cap > 0");
  return run([&] { copy_out(rt->impl.metrics(), buf, cap, needed); });
}

gpuos_status gpuos_query_device(const gpuos_options* opts, gpuos_device_info* out) {
  GPUOS_REQUIRE(out, "out is NULL");
  return store(out, [&] { return gpuos::detail::describe_device(with_defaults(opts)); });
}

gpuos_status gpuos_get_device_info(gpuos_runtime* rt, gpuos_device_info* out) {
  GPUOS_REQUIRE(rt && out, "rt or out is NULL");
  return store(out, [&] { return rt->impl.device_info(); });
}

gpuos_status gpuos_load_operator_file(gpuos_runtime* rt, const char* path, gpuos_generation* out) {
  GPUOS_REQUIRE(rt && path, "rt or path is NULL");
  return store(out, [&] { return rt->impl.load_operator(path, nullptr); });
}

gpuos_status gpuos_load_operator_files(gpuos_runtime* rt, const char* const* paths, size_t n, gpuos_generation* out,
                                       size_t* failed) {
  GPUOS_REQUIRE(rt && (paths || n == 0), "rt or paths is NULL");
  for (size_t i = 0; i < n; ++i) GPUOS_REQUIRE(paths[i], "paths[" + std::to_string(i) + "] is NULL");
  return store(out, [&] {
    std::vector<std::string> errors;
    const gpuos_generation g = rt->impl.load_operators(std::vector<std::string>(paths, paths + n), errors);
    if (failed) *failed = errors.size();
    return g;
  });
}

gpuos_status gpuos_load_operator_source(gpuos_runtime* rt, const char* source_name, const char* source, size_t size,
                                        gpuos_generation* out) {
  GPUOS_REQUIRE(rt && source_name && (source || size == 0), "rt, source_name or source is NULL");
  return store(out, [&] {
    const std::string text(source ? source : "", size);
    return rt->impl.load_operator(source_name, &text);
  });
}

gpuos_status gpuos_remove_operator_source(gpuos_runtime* rt, const char* source_name, gpuos_generation* out) {
  GPUOS_REQUIRE(rt && source_name, "rt or source_name is NULL");
  return store(out, [&] { return rt->impl.remove_operator_source(source_name); });
}

gpuos_status gpuos_ops_dir_open(gpuos_runtime* rt, const char* dir, uint32_t debounce_ms,
                                gpuos_ops_dir_callback callback, void* user, gpuos_ops_dir** out) {
  GPUOS_REQUIRE(rt && dir && out, "rt, dir or out is NULL");
  return store(out, [&] {
    auto d = std::unique_ptr<gpuos_ops_dir>(new gpuos_ops_dir{{rt->impl, dir, debounce_ms, callback, user}});
    gpuos_ops_dir* h = d.get();
    std::lock_guard<std::mutex> lock(rt->dirs_mu);
    rt->dirs.push_back(std::move(d));
    return h;
  });
}

namespace {
/// The registered directory `d` of `rt`, or nullptr (closed, or not this runtime's).
std::vector<std::unique_ptr<gpuos_ops_dir>>::iterator find_dir(gpuos_runtime* rt, gpuos_ops_dir* d) {
  return std::find_if(rt->dirs.begin(), rt->dirs.end(), [&](const auto& p) { return p.get() == d; });
}
}  // namespace

gpuos_status gpuos_ops_dir_get_stats(gpuos_runtime* rt, gpuos_ops_dir* d, gpuos_ops_dir_stats* out) {
  GPUOS_REQUIRE(rt && d && out, "rt, d or out is NULL");
  std::lock_guard<std::mutex> lock(rt->dirs_mu);
  GPUOS_REQUIRE(find_dir(rt, d) != rt->dirs.end(), "not an open operator directory of this runtime");
  *out = d->dir.stats();
  return GPUOS_OK;
}

gpuos_status gpuos_ops_dir_close(gpuos_runtime* rt, gpuos_ops_dir* d) {
  GPUOS_REQUIRE(rt && d, "rt or d is NULL");
  std::unique_ptr<gpuos_ops_dir> owned;
  {
    std::lock_guard<std::mutex> lock(rt->dirs_mu);
    auto it = find_dir(rt, d);
    GPUOS_REQUIRE(it != rt->dirs.end(), "not an open operator directory of this runtime");
    owned = std::move(*it);
    rt->dirs.erase(it);
  }
  return GPUOS_OK;  // `owned` stops its watcher here
}

gpuos_status gpuos_op_id(gpuos_runtime* rt, const char* name, uint32_t* id) {
  GPUOS_REQUIRE(rt && name && id, "rt, name or id is NULL");
  return store(id, [&] { return rt->impl.op_id(name); });
}

gpuos_status gpuos_alias_set(gpuos_runtime* rt, const char* alias, const char* target, uint64_t* ticket) {
  GPUOS_REQUIRE(rt && alias && target, "rt, alias or target is NULL");
  return store(ticket, [&] { return rt->impl.alias_set(alias, target); });
}

gpuos_status gpuos_alias_rollback(gpuos_runtime* rt, const char* alias, uint64_t* ticket) {
  GPUOS_REQUIRE(rt && alias, "rt or alias is NULL");
  return store(ticket, [&] { return rt->impl.alias_rollback(alias); });
}

gpuos_status gpuos_generation_rollback(gpuos_runtime* rt, gpuos_generation* out) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return store(out, [&] { return rt->impl.rollback_generation(); });
}

gpuos_status gpuos_get_generation(gpuos_runtime* rt, gpuos_generation* out) {
  GPUOS_REQUIRE(rt && out, "rt or out is NULL");
  return store(out, [&] { return rt->impl.generation(); });
}

gpuos_status gpuos_list_ops(gpuos_runtime* rt, gpuos_op_info* out, size_t capacity, size_t* count) {
  GPUOS_REQUIRE(rt && count && (out || capacity == 0), "rt, count or out is NULL");
  return run([&] {
    const std::vector<gpuos_op_info> rows = rt->impl.list_ops();
    for (size_t i = 0; i < rows.size() && i < capacity; ++i) out[i] = rows[i];
    *count = rows.size();
  });
}

gpuos_status gpuos_alloc(gpuos_runtime* rt, size_t bytes, size_t align, void** out) {
  GPUOS_REQUIRE(rt && out, "rt or out is NULL");
  *out = nullptr;
  return store(out, [&] { return rt->impl.heap_alloc(bytes, align); });
}

gpuos_status gpuos_free(gpuos_runtime* rt, void* p) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return run([&] { rt->impl.heap_free(p); });
}

gpuos_status gpuos_heap_get_stats(gpuos_runtime* rt, gpuos_heap_stats* out) {
  GPUOS_REQUIRE(rt && out, "rt or out is NULL");
  return store(out, [&] { return rt->impl.heap_stats(); });
}

gpuos_status gpuos_heap_check(gpuos_runtime* rt) {
  GPUOS_REQUIRE(rt, "rt is NULL");
  return guarded([&] {
    std::string why;
    if (!rt->impl.heap_check(why)) return set_error(GPUOS_ERR_INTERNAL, "heap invariant violated: " + why);
    return GPUOS_OK;
  });
}

const char* gpuos_build_info(void) { return "gpuos " GPUOS_BUILD_INFO; }

}  // extern "C"
