// gpuos._gpuos: the Python binding of the C++ API (include/gpuos/gpuos.hpp).
//
// Device memory comes in as a DLPack producer on a CUDA device (a torch.Tensor, a CuPy array) or as an
// int device pointer. Every call that can block (submit on a full queue, wait, drain, loads, switches,
// suspend, heap requests, close) releases the GIL. A gpuos failure is a gpuos.Error carrying the status
// name (`status`), its number (`code`) and the runtime's message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuos/gpuos.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// ---- errors ---------------------------------------------------------------------------------------------

PyObject* g_error_type = nullptr;  // gpuos.Error, created at import

/// Sets the Python error to a gpuos.Error for status `s`.
void set_status_error(gpuos_status s, const std::string& message) {
  nb::object type = nb::borrow(g_error_type);
  nb::object e = type(message);
  e.attr("status") = gpuos_status_name(s);
  e.attr("code") = static_cast<int>(s);
  PyErr_SetObject(g_error_type, e.ptr());
}

[[noreturn]] void raise_status(gpuos_status s, const std::string& message) {
  set_status_error(s, message);
  throw nb::python_error();
}

// ---- device memory --------------------------------------------------------------------------------------

using CudaArray = nb::ndarray<nb::device::cuda>;
using CudaFloats = nb::ndarray<float, nb::device::cuda, nb::c_contig>;

/// A device address: an int, or the data pointer of a CUDA array (DLPack).
std::uint64_t device_address(nb::handle h, const char* what) {
  if (PyLong_Check(h.ptr())) return nb::cast<std::uint64_t>(h);
  CudaArray a;
  if (nb::try_cast(h, a)) return reinterpret_cast<std::uint64_t>(a.data());
  throw nb::type_error((std::string(what) + ": expected a CUDA array (DLPack: torch.Tensor, cupy.ndarray) or an int device "
                        "pointer, got " + nb::cast<std::string>(nb::str(h.type()))).c_str());
}

/// A float32 device buffer for the built-in operators: its address and, for an array, its length.
struct Floats {
  float* ptr = nullptr;
  std::optional<std::uint64_t> size;
};
Floats floats(nb::handle h, const char* what) {
  if (PyLong_Check(h.ptr())) return Floats{reinterpret_cast<float*>(nb::cast<std::uint64_t>(h)), std::nullopt};
  CudaFloats a;
  if (nb::try_cast(h, a)) return Floats{a.data(), static_cast<std::uint64_t>(a.size())};
  CudaArray any;
  if (nb::try_cast(h, any))
    throw nb::type_error((std::string(what) + ": the built-in operators take contiguous float32 CUDA arrays").c_str());
  throw nb::type_error((std::string(what) + ": expected a float32 CUDA array (DLPack) or an int device pointer, got " +
                        nb::cast<std::string>(nb::str(h.type()))).c_str());
}

/// The element count of a built-in task: `n` when given (checked against every array's length), else
/// the arrays' common length.
std::uint64_t count_of(std::optional<std::uint64_t> n, std::initializer_list<const Floats*> bufs) {
  std::optional<std::uint64_t> len;
  for (const Floats* b : bufs) {
    if (!b->size) continue;
    if (n && *b->size < *n)
      throw nb::value_error(("n = " + std::to_string(*n) + " exceeds an array of " + std::to_string(*b->size) + " elements").c_str());
    if (!n && len && *len != *b->size)
      throw nb::value_error("arrays of different lengths: pass n");
    len = b->size;
  }
  if (n) return *n;
  if (!len) throw nb::value_error("n is required when every buffer is an int pointer");
  return *len;
}

// ---- tasks ------------------------------------------------------------------------------------------------

gpuos::Task make_task(std::uint32_t op, std::uint32_t tiles, nb::bytes args, std::uint32_t deadline_ms) {
  if (args.size() > GPUOS_MAX_ARG_BYTES)
    throw nb::value_error(("arguments of " + std::to_string(args.size()) + " bytes exceed GPUOS_MAX_ARG_BYTES (" +
                           std::to_string(GPUOS_MAX_ARG_BYTES) + ")").c_str());
  if (tiles == 0 || tiles > GPUOS_MAX_TILES) throw nb::value_error("tiles must be in [1, 2^30]");
  gpuos::Task t;
  t.op = op;
  t.tiles = tiles;
  t.arg_bytes = static_cast<std::uint32_t>(args.size());
  t.deadline_ms = deadline_ms;
  if (args.size()) std::memcpy(t.args, args.c_str(), args.size());
  return t;
}

// ---- options ----------------------------------------------------------------------------------------------

struct OptionStrings {
  std::optional<std::string> cache, include, cccl;
};

/// The value of option `key` as a T; a TypeError naming the option when it is not one.
template <class T>
T option_value(const std::string& key, nb::handle v, const char* expected) {
  T out{};
  if (!nb::try_cast(v, out))
    throw nb::type_error(("option " + key + " takes " + expected + ", got " + nb::cast<std::string>(nb::repr(v))).c_str());
  return out;
}

/// A CUDA stream handle from Python: an int (0: the legacy default stream), or an object with
/// `__cuda_stream__` (the CUDA stream protocol: a method returning (version, handle)), `cuda_stream`
/// (torch.cuda.Stream) or `ptr` (cupy.cuda.Stream).
void* stream_of(nb::handle s) {
  nb::handle h = s;
  nb::object held;
  if (!nb::isinstance<nb::int_>(s)) {
    if (nb::hasattr(s, "__cuda_stream__")) {
      held = s.attr("__cuda_stream__");
      if (PyCallable_Check(held.ptr())) held = held();
      if (!nb::isinstance<nb::tuple>(held) || nb::len(held) != 2)
        throw nb::type_error("stream: __cuda_stream__ must give a (version, handle) tuple");
      held = nb::borrow(held[1]);
    } else if (nb::hasattr(s, "cuda_stream")) {
      held = s.attr("cuda_stream");
    } else if (nb::hasattr(s, "ptr")) {
      held = s.attr("ptr");
    } else {
      throw nb::type_error(("stream takes an int or a CUDA stream object (__cuda_stream__, cuda_stream or ptr), got " +
                            nb::cast<std::string>(nb::repr(s))).c_str());
    }
    h = held;
  }
  std::uint64_t v = 0;
  if (!nb::try_cast(h, v)) throw nb::type_error("stream: the handle must be a non-negative int");
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(v));
}

gpuos::Options options_of(const nb::kwargs& kw, OptionStrings& keep) {
  gpuos::Options o;
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    if (key == "device") o.device = option_value<std::int32_t>(key, v, "an int");
    else if (key == "sm_budget") o.sm_budget = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "queue_capacity") o.queue_capacity = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "blocks_per_sm") o.blocks_per_sm = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "stage_bytes") o.stage_bytes = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "slice_us") o.slice_us = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "park_us") o.park_us = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "deadline_ms") o.deadline_ms = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "heap_bytes") o.heap_bytes = option_value<std::uint64_t>(key, v, "an int >= 0");
    else if (key == "heap_arenas") o.heap_arenas = option_value<std::uint32_t>(key, v, "an int >= 0");
    else if (key == "heap_checked") o.heap_flags = option_value<bool>(key, v, "a bool") ? GPUOS_HEAP_CHECKED : 0u;
    else if (key == "cache_dir") keep.cache = option_value<std::string>(key, v, "a str");
    else if (key == "include_dir") keep.include = option_value<std::string>(key, v, "a str");
    else if (key == "cccl_dir") keep.cccl = option_value<std::string>(key, v, "a str");
    else throw nb::type_error(("unknown option '" + key + "'").c_str());
  }
  o.cache_dir = keep.cache ? keep.cache->c_str() : nullptr;
  o.include_dir = keep.include ? keep.include->c_str() : nullptr;
  o.cccl_dir = keep.cccl ? keep.cccl->c_str() : nullptr;
  return o;
}

std::chrono::nanoseconds timeout_of(std::optional<double> seconds) {
  if (!seconds) return std::chrono::nanoseconds(-1);
  if (*seconds < 0) throw nb::value_error("timeout must be >= 0 seconds (None waits for ever)");
  return std::chrono::nanoseconds(static_cast<std::int64_t>(*seconds * 1e9));
}

// ---- plain structs as dicts ---------------------------------------------------------------------------------

nb::dict ops_dir_dict(const gpuos_ops_dir_stats& s) {
  nb::dict d;
  d["loads"] = s.loads;
  d["failures"] = s.failures;
  d["removals"] = s.removals;
  d["generation"] = s.generation;
  d["failing"] = s.failing;
  d["watching"] = s.watching != 0;
  return d;
}

nb::dict stats_dict(const gpuos::Stats& s) {
  nb::dict d;
  d["submitted"] = s.submitted;
  d["completed"] = s.completed;
  d["failed"] = s.failed;
  d["queue_depth"] = s.queue_depth;
  d["heartbeat"] = s.heartbeat;
  d["launches"] = s.launches;
  return d;
}

nb::dict device_dict(const gpuos::DeviceInfo& i) {
  nb::dict d;
  d["name"] = std::string(i.name);
  d["ordinal"] = i.ordinal;
  d["compute_capability"] = nb::make_tuple(i.cc_major, i.cc_minor);
  d["sm_count"] = i.sm_count;
  d["blocks_per_sm"] = i.blocks_per_sm;
  d["grid_blocks"] = i.grid_blocks;
  d["block_threads"] = i.block_threads;
  d["total_mem"] = i.total_mem;
  d["driver_version"] = i.driver_version;
  d["stage_bytes"] = i.stage_bytes;
  return d;
}

nb::dict generation_dict(const gpuos::Runtime::Generation& g) {
  nb::dict d;
  d["number"] = g.number;
  d["first_ticket"] = g.first_ticket;
  d["pause_ns"] = g.pause_ns;
  d["build_ns"] = g.build_ns;
  d["stop_ns"] = g.stop_ns;
  d["load_ns"] = g.load_ns;
  d["launch_ns"] = g.launch_ns;
  d["compiled"] = g.compiled;
  d["linked"] = bool(g.linked);
  d["changed"] = bool(g.changed);
  d["retired"] = g.retired;
  d["overlap_ns"] = g.overlap_ns;
  d["unload_ns"] = g.unload_ns;
  return d;
}

nb::dict op_dict(const gpuos::Runtime::OpInfo& o) {
  static const char* const kinds[] = {"builtin", "loaded", "alias", "failed"};
  nb::dict d;
  d["name"] = std::string(o.name);
  d["id"] = o.id;
  d["kind"] = o.kind < 4 ? kinds[o.kind] : "unknown";
  d["arg_bytes"] = o.arg_bytes;
  d["target"] = o.target;
  d["generation"] = o.generation;
  d["source"] = std::string(o.source);
  d["error"] = std::string(o.error);
  d["completed"] = o.completed;
  d["failed"] = o.failed;
  return d;
}

nb::dict heap_dict(const gpuos::HeapStats& h) {
  nb::dict d;
  d["pool_bytes"] = h.pool_bytes;
  d["used_bytes"] = h.used_bytes;
  d["free_bytes"] = h.free_bytes;
  d["largest_free"] = h.largest_free;
  d["used_blocks"] = h.used_blocks;
  d["free_blocks"] = h.free_blocks;
  d["allocs"] = h.allocs;
  d["frees"] = h.frees;
  d["failed_allocs"] = h.failed_allocs;
  d["bad_align"] = h.bad_align;
  d["too_large"] = h.too_large;
  d["bad_free"] = h.bad_free;
  d["double_free"] = h.double_free;
  d["fragmentation"] = h.fragmentation;
  d["arenas"] = h.arenas;
  d["checked"] = bool(h.checked);
  return d;
}

// ---- the runtime --------------------------------------------------------------------------------------------

/// A gpuos::Runtime that close() (or leaving a `with` block) releases; calls after that raise. Lanes and
/// graph instances made from it hold it too: it is destroyed when the last of them goes.
class PyRuntime {
 public:
  explicit PyRuntime(const gpuos::Options& o) {
    nb::gil_scoped_release unlocked;
    rt_ = std::make_shared<gpuos::Runtime>(o);
  }
  gpuos::Runtime& rt() { return *shared(); }
  const std::shared_ptr<gpuos::Runtime>& shared() {
    if (!rt_) raise_status(GPUOS_ERR_UNAVAILABLE, "the runtime is closed");
    return rt_;
  }
  void close() {
    std::shared_ptr<gpuos::Runtime> r = std::move(rt_);
    nb::gil_scoped_release unlocked;
    r.reset();
  }
  bool closed() const { return !rt_; }

 private:
  std::shared_ptr<gpuos::Runtime> rt_;
};

/// A lane of a runtime (gpuos::Lane), holding the runtime.
struct PyLane {
  explicit PyLane(PyRuntime& r) : rt(r.shared()), lane(std::make_unique<gpuos::Lane>(*rt)) {}
  std::shared_ptr<gpuos::Runtime> rt;
  std::unique_ptr<gpuos::Lane> lane;  // destroyed before rt
};

/// Destroys what `p` owns (and empties it) with the GIL released: destructors that wait (a graph's
/// launches, a watcher's load) must not hold up other Python threads.
template <class T>
void reset_unlocked(std::unique_ptr<T>& p) {
  std::unique_ptr<T> owned = std::move(p);
  nb::gil_scoped_release unlocked;
  owned.reset();
}

/// A graph instance (gpuos::GraphExec), holding the runtime; close() waits for its launches.
struct PyGraphExec {
  PyGraphExec(PyRuntime& r, const gpuos::Graph& g) : rt(r.shared()) {
    nb::gil_scoped_release unlocked;
    exec = std::make_unique<gpuos::GraphExec>(*rt, g);
  }
  gpuos::GraphExec& get() {
    if (!exec) raise_status(GPUOS_ERR_INVALID_ARG, "the graph instance is closed");
    return *exec;
  }
  void close() { reset_unlocked(exec); }
  std::shared_ptr<gpuos::Runtime> rt;
  std::unique_ptr<gpuos::GraphExec> exec;  // destroyed before rt
};

/// An operator directory (gpuos::OpsDir) the runtime loads and watches, holding the runtime.
struct PyOpsDir {
  PyOpsDir(PyRuntime& r, const std::string& dir, unsigned debounce_ms) : rt(r.shared()) {
    nb::gil_scoped_release unlocked;
    ops = std::make_unique<gpuos::OpsDir>(*rt, dir, debounce_ms);
  }
  void close() { reset_unlocked(ops); }
  std::shared_ptr<gpuos::Runtime> rt;
  std::unique_ptr<gpuos::OpsDir> ops;  // destroyed before rt
};

gpuos::Lane* lane_of(const std::optional<PyLane*>& l) { return l && *l ? (*l)->lane.get() : nullptr; }

template <class F>
auto unlocked(F&& f) {
  nb::gil_scoped_release r;
  return f();
}

}  // namespace

// ---- PyTorch's pluggable allocator (gpuos.torch.MemPool) -------------------------------------------------
// torch.cuda.CUDAPluggableAllocator loads two C functions by name from a shared library (this extension
// module): they allocate from, and free to, the heap of the runtime gpuos.torch.MemPool named. One
// runtime serves the process's pluggable allocator at a time (torch's allocator functions take no
// context); the allocator holds it, so it stays alive while framework tensors may live in its heap.
namespace {
std::mutex g_alloc_mu;
std::shared_ptr<gpuos::Runtime> g_alloc_runtime;

std::shared_ptr<gpuos::Runtime> allocator_runtime() {
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  return g_alloc_runtime;
}
}  // namespace

/// Alignment of the allocator's blocks: what cudaMalloc gives, and what PyTorch's kernels assume.
constexpr std::uint64_t kTorchAlign = 256;

extern "C" __attribute__((visibility("default"))) void* gpuos_torch_alloc(std::int64_t size, int /*device*/,
                                                                         void* /*stream*/) {
  const std::shared_ptr<gpuos::Runtime> rt = allocator_runtime();
  void* p = nullptr;
  // nullptr on failure: PyTorch frees its cached blocks and retries, then raises its out-of-memory error.
  if (!rt || size < 0 || gpuos_alloc(rt->handle(), static_cast<std::uint64_t>(size), kTorchAlign, &p) != GPUOS_OK)
    return nullptr;
  return p;
}

extern "C" __attribute__((visibility("default"))) void gpuos_torch_free(void* ptr, std::int64_t /*size*/,
                                                                       int /*device*/, void* /*stream*/) {
  if (const std::shared_ptr<gpuos::Runtime> rt = allocator_runtime()) gpuos_free(rt->handle(), ptr);
}

NB_MODULE(_gpuos, m) {
  m.doc() = "gpuos: a persistent-kernel runtime for NVIDIA GPUs (the extension; import gpuos)";

  g_error_type = PyErr_NewExceptionWithDoc(
      "gpuos.Error",
      "A gpuos call failed. `status` is the status name (e.g. 'GPUOS_ERR_NO_DEVICE'), `code` its number; the "
      "message names the cause.",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(g_error_type);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const gpuos::Error& e) {
      set_status_error(e.status(), e.what());
    }
  });

  m.def("build_info", [] { return std::string(gpuos_build_info()); },
        "The library's version, the CUDA toolkit it was built with and its device arch.");
  m.def("status_name", [](int code) { return std::string(gpuos_status_name(static_cast<gpuos_status>(code))); },
        "code"_a, "The name of a gpuos status number.");
  m.attr("MAX_ARG_BYTES") = GPUOS_MAX_ARG_BYTES;

  m.def(
      "query_device",
      [](const nb::kwargs& kw) {
        OptionStrings keep;
        const gpuos::Options o = options_of(kw, keep);
        return device_dict(unlocked([&] { return gpuos::query_device(o); }));
      },
      "The device and the grid a runtime with these options would use, without booting it.");

  nb::class_<gpuos::Task>(m, "Task", "A task: an operator id, its tile count and a copy of its argument struct.")
      .def(nb::new_([](std::uint32_t op, std::uint32_t tiles, nb::bytes args, std::uint32_t deadline_ms) {
             return make_task(op, tiles, args, deadline_ms);
           }),
           "op"_a, "tiles"_a = 1, "args"_a = nb::bytes(""), "deadline_ms"_a = 0,
           "`args`: the operator's argument struct as bytes (at most MAX_ARG_BYTES), e.g. from struct.pack. "
           "`deadline_ms`: the watchdog's deadline for this task's calls (0: the operator's or the runtime's).")
      .def_ro("op", &gpuos::Task::op)
      .def_ro("tiles", &gpuos::Task::tiles)
      .def_ro("deadline_ms", &gpuos::Task::deadline_ms)
      .def_prop_ro("args", [](const gpuos::Task& t) { return nb::bytes(reinterpret_cast<const char*>(t.args), t.arg_bytes); })
      .def("__repr__", [](const gpuos::Task& t) {
        return "gpuos.Task(op=" + std::to_string(t.op) + ", tiles=" + std::to_string(t.tiles) + ", " +
               std::to_string(t.arg_bytes) + " bytes of arguments)";
      });

  // Built-in operators: float32 buffers as CUDA arrays or int pointers; n defaults to the arrays' length.
  nb::module_ ops = m.def_submodule("ops", "Builders of the built-in operators' tasks.");
  ops.def("nop", [] { return gpuos::ops::nop(); });
  ops.def(
      "fill",
      [](nb::handle out, float value, std::optional<std::uint64_t> n) {
        const Floats o = floats(out, "out");
        return gpuos::ops::fill(o.ptr, value, count_of(n, {&o}));
      },
      "out"_a, "value"_a, "n"_a = nb::none());
  ops.def(
      "copy",
      [](nb::handle out, nb::handle in, std::optional<std::uint64_t> n) {
        const Floats o = floats(out, "out"), i = floats(in, "in");
        return gpuos::ops::copy(o.ptr, i.ptr, count_of(n, {&o, &i}));
      },
      "out"_a, "in_"_a, "n"_a = nb::none());
  for (const char* name : {"add", "mul"}) {
    const bool add = std::strcmp(name, "add") == 0;
    ops.def(
        name,
        [add](nb::handle out, nb::handle a, nb::handle b, std::optional<std::uint64_t> n) {
          const Floats o = floats(out, "out"), x = floats(a, "a"), y = floats(b, "b");
          const std::uint64_t c = count_of(n, {&o, &x, &y});
          return add ? gpuos::ops::add(o.ptr, x.ptr, y.ptr, c) : gpuos::ops::mul(o.ptr, x.ptr, y.ptr, c);
        },
        "out"_a, "a"_a, "b"_a, "n"_a = nb::none());
  }
  ops.def(
      "axpy",
      [](nb::handle y, float alpha, nb::handle x, std::optional<std::uint64_t> n) {
        const Floats yy = floats(y, "y"), xx = floats(x, "x");
        return gpuos::ops::axpy(yy.ptr, alpha, xx.ptr, count_of(n, {&yy, &xx}));
      },
      "y"_a, "alpha"_a, "x"_a, "n"_a = nb::none(), "y = alpha * x + y");
  ops.def(
      "sum",
      [](nb::handle out, nb::handle x, std::optional<std::uint64_t> n) {
        const Floats o = floats(out, "out"), xx = floats(x, "x");
        return gpuos::ops::sum(o.ptr, xx.ptr, count_of(n, {&xx}));
      },
      "out"_a, "x"_a, "n"_a = nb::none(), "out[0] = the sum of x (accumulated in float64)");

  m.def(
      "_set_allocator_runtime",
      [](PyRuntime* r) {
        std::shared_ptr<gpuos::Runtime> rt = r ? r->shared() : nullptr;
        std::lock_guard<std::mutex> lock(g_alloc_mu);
        g_alloc_runtime = std::move(rt);
      },
      "runtime"_a.none(),
      "The runtime whose heap gpuos_torch_alloc / gpuos_torch_free serve (None: none); gpuos.torch.MemPool sets it.");

  nb::class_<PyRuntime>(m, "Runtime", nb::is_weak_referenceable(),
                        "A resident kernel on one GPU. Options as keywords: device, sm_budget, queue_capacity, "
                        "blocks_per_sm, stage_bytes, slice_us, park_us, deadline_ms, heap_bytes, heap_arenas, heap_checked, cache_dir, include_dir, "
                        "cccl_dir (gpuos/gpuos.h, docs/configuration.md). Use it as a context manager, or call close().")
      .def(nb::new_([](const nb::kwargs& kw) {
        OptionStrings keep;
        const gpuos::Options o = options_of(kw, keep);
        return new PyRuntime(o);
      }))
      .def("close", &PyRuntime::close, "Drains, stops the kernel and frees the runtime; later calls raise.")
      .def(
          "metrics", [](PyRuntime& r) { return unlocked([&] { return r.rt().metrics(); }); },
          "The runtime's statistics as Prometheus text (gpuos_metrics); gpuos.metrics.RuntimeCollector "
          "serves them to prometheus_client.")
      .def_prop_ro("closed", &PyRuntime::closed)
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyRuntime& r, nb::args) { r.close(); })
      .def(
          "submit",
          [](PyRuntime& r, const gpuos::Task& t, nb::handle stream) -> nb::object {
            if (stream.is_none()) return nb::cast(unlocked([&] { return r.rt().submit(t); }));
            void* st = stream_of(stream);
            unlocked([&] { r.rt().submit_on_stream(t, st); });
            return nb::none();
          },
          "task"_a, "stream"_a = nb::none(),
          "Submits a task; blocks while the queue is full. Returns its ticket. With `stream` (an int handle or a "
          "CUDA stream object, e.g. torch.cuda.current_stream()), the task runs in that stream's order instead: "
          "after the stream's earlier work, before its later work, and recorded by a CUDA graph capture of the "
          "stream; then it returns None (no ticket: a captured task runs once per replay).")
      .def(
          "submit_after",
          [](PyRuntime& r, const gpuos::Task& t, const std::vector<std::uint64_t>& after, std::optional<PyLane*> lane,
             nb::handle stream) -> nb::object {
            gpuos::Lane* l = lane_of(lane);
            if (!stream.is_none()) {
              void* st = stream_of(stream);
              unlocked([&] { r.rt().submit_after_on_stream(t, after, l, st); });
              return nb::none();
            }
            return nb::cast(unlocked([&] { return r.rt().submit_after(t, after, l); }));
          },
          "task"_a, "after"_a = std::vector<std::uint64_t>{}, "lane"_a = nb::none(), "stream"_a = nb::none(),
          "Submits a task that runs once every ticket in `after` (and the lane's previous task) has completed; "
          "the wait is resolved on the GPU. A task after a failed one fails too, naming the cause. With `stream`, "
          "also in that CUDA stream's order (as submit); then it returns None, and the lane must stay alive "
          "until the stream has reached the task.")
      .def(
          "try_submit",
          [](PyRuntime& r, const gpuos::Task& t) { return unlocked([&] { return r.rt().try_submit(t); }); }, "task"_a,
          "Submits unless the queue is full; returns the ticket, or None (nothing submitted). (No stream=: a "
          "task in a stream's order is submitted when the stream reaches it, never refused for a full queue.)")
      .def(
          "submit_batch",
          [](PyRuntime& r, const std::vector<gpuos::Task>& ts, nb::handle stream) -> nb::object {
            if (!stream.is_none()) {
              void* st = stream_of(stream);
              unlocked([&] { r.rt().submit_batch_on_stream(ts, st); });
              return nb::none();
            }
            return nb::cast(unlocked([&] { return r.rt().submit_batch(ts); }));
          },
          "tasks"_a, "stream"_a = nb::none(),
          "Submits tasks with consecutive tickets; returns the first. With `stream`, in that CUDA stream's order "
          "(the stream's later work waits for all of them); then it returns None.")
      .def(
          "wait",
          [](PyRuntime& r, std::uint64_t ticket, std::optional<double> timeout) {
            const auto t = timeout_of(timeout);
            return unlocked([&] { return r.rt().wait(ticket, t); });
          },
          "ticket"_a, "timeout"_a = nb::none(),
          "Waits for a task (timeout in seconds; None: for ever). False on timeout; raises gpuos.Error if it "
          "failed or the device faulted.")
      .def(
          "drain",
          [](PyRuntime& r, std::optional<double> timeout) {
            const auto t = timeout_of(timeout);
            return unlocked([&] { return r.rt().drain(t); });
          },
          "timeout"_a = nb::none(), "Waits for every task submitted so far; False on timeout.")
      .def("stats", [](PyRuntime& r) { return stats_dict(r.rt().stats()); })
      .def("device_info", [](PyRuntime& r) { return device_dict(r.rt().device_info()); })
      .def("diagnose", [](PyRuntime& r) { return r.rt().diagnose(); },
           "A plain-text report of the runtime's state, for hangs and bug reports.")
      .def("suspend", [](PyRuntime& r) { unlocked([&] { r.rt().suspend(); }); })
      .def("resume", [](PyRuntime& r) { unlocked([&] { r.rt().resume(); }); })
      .def("shutdown", [](PyRuntime& r) { unlocked([&] { r.rt().shutdown(); }); },
           "Stops accepting tasks, drains, stops the kernel; waits and stats keep working.")
      .def(
          "load_operator_file",
          [](PyRuntime& r, const std::string& path) {
            return generation_dict(unlocked([&] { return r.rt().load_operator_file(path); }));
          },
          "path"_a)
      .def(
          "load_operator_files",
          [](PyRuntime& r, const std::vector<std::string>& paths) {
            std::size_t failed = 0;
            nb::dict d = generation_dict(unlocked([&] { return r.rt().load_operator_files(paths, &failed); }));
            d["failed"] = failed;
            return d;
          },
          "paths"_a,
          "Compiles the files concurrently and switches to one generation serving every one that compiles and "
          "links; the result's 'failed' counts those left out (list_ops() shows their errors).")
      .def(
          "load_operator_source",
          [](PyRuntime& r, const std::string& name, const std::string& source) {
            return generation_dict(unlocked([&] { return r.rt().load_operator_source(name, source); }));
          },
          "name"_a, "source"_a)
      .def(
          "remove_operator_source",
          [](PyRuntime& r, const std::string& name) {
            return generation_dict(unlocked([&] { return r.rt().remove_operator_source(name); }));
          },
          "name"_a)
      .def("op_id", [](PyRuntime& r, const std::string& name) { return r.rt().op_id(name); }, "name"_a)
      .def(
          "set_op_deadline", [](PyRuntime& r, std::uint32_t op, std::uint32_t ms) { r.rt().set_op_deadline(op, ms); },
          "op"_a, "deadline_ms"_a,
          "The watchdog's deadline (ms) for every call of operator `op`, unless a task sets its own (0: the "
          "runtime's deadline_ms).")
      .def(
          "alias_set",
          [](PyRuntime& r, const std::string& alias, const std::string& target) {
            return unlocked([&] { return r.rt().alias_set(alias, target); });
          },
          "alias"_a, "target"_a, "Points an alias at an operator; returns the switch's ticket.")
      .def(
          "alias_rollback",
          [](PyRuntime& r, const std::string& alias) { return unlocked([&] { return r.rt().alias_rollback(alias); }); },
          "alias"_a)
      .def("rollback_generation",
           [](PyRuntime& r) { return generation_dict(unlocked([&] { return r.rt().rollback_generation(); })); })
      .def("generation", [](PyRuntime& r) { return generation_dict(r.rt().generation()); })
      .def("list_ops",
           [](PyRuntime& r) {
             nb::list l;
             for (const auto& o : r.rt().list_ops()) l.append(op_dict(o));
             return l;
           })
      .def(
          "alloc",
          [](PyRuntime& r, std::size_t bytes, std::size_t align) {
            return reinterpret_cast<std::uint64_t>(unlocked([&] { return r.rt().alloc(bytes, align); }));
          },
          "bytes"_a, "align"_a = 16,
          "Device memory from the runtime's heap; returns its address (an int). It is usable at once, by any "
          "stream's later work (so it takes no stream=); free() frees at once: call it after the work that uses "
          "the block has finished (synchronize its stream first), as for cudaFree.")
      .def(
          "free",
          [](PyRuntime& r, nb::handle p) {
            void* q = reinterpret_cast<void*>(device_address(p, "free"));
            unlocked([&] { r.rt().free(q); });
          },
          "ptr"_a)
      .def(
          "watch_operator_dir",
          [](PyRuntime& r, const std::string& dir, unsigned debounce_ms) { return new PyOpsDir(r, dir, debounce_ms); },
          "dir"_a, "debounce_ms"_a = 20u,
          "Loads every *.cu file of `dir` (one generation), then watches it: a file saved there loads as a new "
          "generation, one that does not compile is refused (the version before keeps serving; list_ops() shows "
          "why), a removed one retires its operators. Returns an OpsDir; close() it to stop watching.")
      .def("heap_stats", [](PyRuntime& r) { return heap_dict(unlocked([&] { return r.rt().heap_stats(); })); })
      .def(
          "heap_check",
          [](PyRuntime& r) {
            std::string why;
            const bool ok = unlocked([&] { return r.rt().heap_check(&why); });
            if (!ok) raise_status(GPUOS_ERR_INTERNAL, "heap check failed: " + why);
          },
          "Runs the heap's invariant checker on the device; raises gpuos.Error on a violation.");

  nb::class_<PyOpsDir>(m, "OpsDir", "An operator directory a runtime watches (Runtime.watch_operator_dir).")
      .def(
          "stats",
          [](PyOpsDir& d) {
            if (!d.ops) raise_status(GPUOS_ERR_INVALID_ARG, "the operator directory is closed");
            return ops_dir_dict(d.ops->stats());
          },
          "Loads, refusals and removals so far, the last generation, the sources whose latest version does not "
          "serve now, and whether it is still watching.")
      .def("close", &PyOpsDir::close, "Stops watching; the operators stay loaded.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyOpsDir& d, nb::args) { d.close(); });

  nb::class_<PyLane>(m, "Lane",
                     "A lane of a runtime: the tasks submitted to it (submit_after(..., lane=), GraphExec.launch(lane=)) "
                     "run one after the other; lanes run concurrently.")
      .def(nb::init<PyRuntime&>(), "runtime"_a);

  nb::class_<gpuos::Graph>(m, "Graph",
                           "A task graph being built: nodes (tasks) and edges (`to` runs after `from`). Instantiate "
                           "it on a runtime (GraphExec) to launch it.")
      .def(nb::init<>())
      .def(
          "add",
          [](gpuos::Graph& g, const gpuos::Task& t, const std::vector<std::uint32_t>& after) {
            const std::uint32_t id = g.add(t);
            for (std::uint32_t a : after) g.edge(a, id);
            return id;
          },
          "task"_a, "after"_a = std::vector<std::uint32_t>{}, "Adds a node that runs after the nodes in `after`; returns its id.")
      .def("edge", &gpuos::Graph::edge, "from_"_a, "to"_a, "Node `to` runs after node `from_`.");

  nb::class_<PyGraphExec>(m, "GraphExec",
                          "An instance of a graph on a runtime: launch it many times (each launch is one ticket), "
                          "change node arguments in between. close() (or leaving a `with` block) waits for its "
                          "launches.")
      .def(nb::init<PyRuntime&, const gpuos::Graph&>(), "runtime"_a, "graph"_a,
           "Checks the graph (operators, argument sizes, no cycle) and uploads an instance into the device heap.")
      .def(
          "set_args",
          [](PyGraphExec& e, std::uint32_t node, nb::bytes args) {
            gpuos::GraphExec& x = e.get();
            gpuos::detail::check(gpuos_graph_exec_set_args(e.rt->handle(), x.handle(), node, args.c_str(), args.size()));
          },
          "node"_a, "args"_a, "The node's argument struct (bytes of the node's size) for the launches after this call.")
      .def(
          "launch",
          [](PyGraphExec& e, const std::vector<std::uint64_t>& after, std::optional<PyLane*> lane,
             nb::handle stream) -> nb::object {
            gpuos::GraphExec& x = e.get();
            if (!stream.is_none()) {
              if (!after.empty() || lane) throw nb::type_error("launch: stream= takes neither after= nor lane=");
              void* st = stream_of(stream);
              unlocked([&] { x.launch_on_stream(st); });
              return nb::none();
            }
            gpuos::Lane* l = lane_of(lane);
            return nb::cast(unlocked([&] { return x.launch(after, l); }));
          },
          "after"_a = std::vector<std::uint64_t>{}, "lane"_a = nb::none(), "stream"_a = nb::none(),
          "Launches the graph after the tickets in `after` (and the lane's previous task); returns the launch's "
          "ticket, waited for like a task's. With `stream`, the launch runs in that CUDA stream's order instead "
          "(and once per replay of a captured stream); then it returns None.")
      .def("close", &PyGraphExec::close)
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PyGraphExec& e, nb::args) { e.close(); });
}
