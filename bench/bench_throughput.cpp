// bench_throughput: how many tiny tasks per second reach the GPU and complete.
//
// A tiny task is an add of 256 floats; task k owns slice k of big buffers (out = a + b), so every
// method's results can be checked. Methods, all in this process:
//   launches    back-to-back cuLaunchKernel of a 256-thread add kernel, one per task, then one sync
//   graph       a CUDA graph of independent add nodes (one per task), instantiated once, replayed
//   one kernel  the upper bound: the same N adds as gpuos runs, through the same add tile function
//               (kernel/builtin_ops.cuh), in ONE launch: one block per task, or a grid of as many blocks
//               as fit at once, each running every grid-th task; GPU time between events (launch + sync
//               on the host clock beside it)
//   gpuos       gpuos_submit_batch in batches from 1..T host threads, timed from the first submit until
//               gpuos_drain returns
// The kernel methods run before gpuos boots (the resident kernel occupies the GPU).
#include <algorithm>
#include <cstdio>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpuos/limits.h"  // GPUOS_BLOCK_THREADS: the block size the tile functions are written for

#include "bench/bench_common.hpp"

namespace gpuos::bench {
namespace {

constexpr std::uint64_t kElems = 256;
static_assert(kElems <= GPUOS_ELEMS_PER_TILE, "a tiny task is one tile (bench_fused_adds runs one per task)");
/// Targets of the best gpuos row: tasks per second, and times the back-to-back launches.
constexpr double kMinRate = 20e6;
constexpr double kMinOverLaunches = 50.0;

const char* kHelp =
    "usage: bench_throughput [--device N] [--tasks N] [--launches N] [--graph-nodes N]\n"
    "                        [--graph-replays N] [--threads LIST] [--batch N] [--reps N]\n"
    "                        [--queue N] [--json FILE]\n"
    "\n"
    "Tiny tasks (add of 256 floats, each on its own slice) per second:\n"
    "  launches    back-to-back cuLaunchKernel, one per task, then one cuStreamSynchronize\n"
    "  graph       CUDA graph of independent kernel nodes, replayed back to back, then one sync\n"
    "  one kernel  the upper bound: the same --tasks adds in ONE launch, through the add tile function the\n"
    "              resident kernel runs; one block per task, and a grid-stride grid (GPU time, events)\n"
    "  gpuos       gpuos_submit_batch from 1..T host threads, first submit to drain\n"
    "Every method's outputs are checked on the host afterwards (poisoned with NaN before).\n"
    "Targets: best gpuos >= 20 M tasks/s and >= 50 x back-to-back launches. Reported: best gpuos as a\n"
    "fraction of the one-kernel bound, and over the graph.\n"
    "Exit status: 0 every target met, 4 a target missed, 1 error or wrong result, 3 no device, 2 usage.\n"
    "\n"
    "Options:\n"
    "  --device N         CUDA device (default 0)\n"
    "  --tasks N          gpuos tasks per repetition (default 1048576)\n"
    "  --launches N       kernel launches per repetition (default 100000)\n"
    "  --graph-nodes N    kernel nodes in the graph (default 10000)\n"
    "  --graph-replays N  graph launches per repetition (default 10)\n"
    "  --threads LIST     gpuos submitter thread counts (default 1,2,4,8)\n"
    "  --batch N          tasks per gpuos_submit_batch (default 1024)\n"
    "  --reps N           timed repetitions per method (default 3; the median is reported)\n"
    "  --queue N          gpuos queue capacity (power of two; default: the runtime's default)\n"
    "  --json FILE        result file (default bench_throughput.json)\n"
    GPUOS_BENCH_RESIDENCY_HELP;

struct Config {
  int device = 0;
  std::uint64_t tasks = 1u << 20;
  std::uint64_t launches = 100000;
  std::uint64_t graph_nodes = 10000;
  std::uint64_t graph_replays = 10;
  std::vector<std::int64_t> threads{1, 2, 4, 8};
  std::uint64_t batch = 1024;
  int reps = 3;
  std::uint32_t queue = 0;
  std::string json = "bench_throughput.json";
  Residency residency;
};

struct Buffers {
  explicit Buffers(std::uint64_t slices)
      : slices(slices), a(slices * kElems * 4), b(slices * kElems * 4), out(slices * kElems * 4) {}
  std::uint64_t slices;
  DeviceBuffer a, b, out;
  float* out_of(std::uint64_t k) const { return out.as<float>(k * kElems); }
  const float* a_of(std::uint64_t k) const { return a.as<const float>(k * kElems); }
  const float* b_of(std::uint64_t k) const { return b.as<const float>(k * kElems); }
};

/// Number of the first `count` slices with an element that is not a + b.
std::uint64_t count_wrong(const Stream& s, const Buffers& buf, std::uint64_t count) {
  std::vector<float> got(count * kElems);
  s.download(got.data(), buf.out.ptr(), got.size() * sizeof(float));
  std::uint64_t wrong = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    for (std::uint64_t e = 0; e < kElems; ++e) {
      const std::uint64_t i = k * kElems + e;
      if (!(got[i] == input_a(i) + input_b(i))) {
        ++wrong;
        break;
      }
    }
  }
  return wrong;
}

/// What a method is to the verdicts: a baseline, the upper bound, or gpuos.
enum class Kind { kBaseline, kBound, kGpuos };

/// One method's result: per-repetition rates, and whether its outputs were right.
struct Method {
  Method(std::string n, std::uint64_t tasks, Kind k = Kind::kBaseline)
      : name(std::move(n)), kind(k), tasks_per_rep(tasks) {}
  std::string name;
  Kind kind = Kind::kBaseline;
  std::uint64_t tasks_per_rep = 0;
  std::vector<double> seconds;          ///< first submit/launch to completion, per repetition (GPU time: one kernel)
  std::vector<double> wall_seconds;     ///< launch to the end of the sync on the host clock (one kernel only)
  std::vector<double> submit_seconds;   ///< first submit to the last submit returning (gpuos only)
  std::uint64_t checked = 0, wrong = 0;
  double setup_seconds = 0;             ///< graph build + instantiate (graph only)

  double median_rate() const {
    std::vector<double> r;
    for (double s : seconds) r.push_back(static_cast<double>(tasks_per_rep) / s);
    return median(r);
  }
  double best_rate() const {
    double best = 0;
    for (double s : seconds) best = std::max(best, static_cast<double>(tasks_per_rep) / s);
    return best;
  }
};

// ---- Kernels: launches, graph, one kernel -------------------------------------------------------------

/// bench_add on slice k: its arguments live in the struct, so a launch or a graph node can point at them.
struct AddLaunch {
  AddLaunch(CUfunction fn, const Buffers& buf, std::uint64_t k)
      : out(buf.out_of(k)), a(buf.a_of(k)), b(buf.b_of(k)), fn_(fn) {}
  float* out;
  const float* a;
  const float* b;
  unsigned long long n = kElems;
  void* params[4] = {&out, &a, &b, &n};
  AddLaunch(const AddLaunch&) = delete;  // params point at this object's own fields
  AddLaunch& operator=(const AddLaunch&) = delete;
  KernelLaunch kernel() { return KernelLaunch{fn_, 1, kElems, 0, params}; }

 private:
  CUfunction fn_;
};

Method measure_launches(const Config& c, const Module& m, const Stream& s, const Buffers& buf) {
  Method r{"launches", c.launches};
  CUfunction add = m.get("bench_add");
  for (std::uint64_t k = 0; k < std::min<std::uint64_t>(1000, c.launches); ++k)
    AddLaunch(add, buf, k).kernel().launch(s.get());
  s.sync();
  s.poison(buf.out.ptr(), c.launches * kElems);
  for (int rep = 0; rep < c.reps; ++rep) {
    const std::int64_t t0 = now_ns();
    for (std::uint64_t k = 0; k < c.launches; ++k) AddLaunch(add, buf, k).kernel().launch(s.get());
    s.sync();
    r.seconds.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  r.checked = c.launches;
  r.wrong = count_wrong(s, buf, c.launches);
  return r;
}

Method measure_graph(const Config& c, const Module& m, const Stream& s, const Buffers& buf) {
  Method r{"graph", c.graph_nodes * c.graph_replays};
  CUfunction add = m.get("bench_add");
  const std::int64_t t_build = now_ns();
  KernelGraph graph;
  // Independent nodes, like independent gpuos tasks: the graph is free to run them concurrently.
  for (std::uint64_t k = 0; k < c.graph_nodes; ++k) graph.add(AddLaunch(add, buf, k).kernel());
  graph.instantiate();
  r.setup_seconds = static_cast<double>(now_ns() - t_build) * 1e-9;

  graph.launch(s.get());  // warm-up (uploads the graph)
  s.sync();
  s.poison(buf.out.ptr(), c.graph_nodes * kElems);
  for (int rep = 0; rep < c.reps; ++rep) {
    const std::int64_t t0 = now_ns();
    for (std::uint64_t i = 0; i < c.graph_replays; ++i) graph.launch(s.get());
    s.sync();
    r.seconds.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  r.checked = c.graph_nodes;
  r.wrong = count_wrong(s, buf, c.graph_nodes);
  return r;
}

/// The upper bound: all c.tasks adds in one launch of bench_fused_adds on `grid` blocks (grid-stride
/// over the tasks when fewer than the tasks). Timed with events; the launch + sync wall time beside.
Method measure_one_kernel(const Config& c, const Module& m, const Stream& s, const Buffers& buf, unsigned grid,
                          const std::string& name) {
  Method r{name, c.tasks, Kind::kBound};
  CUdeviceptr out = buf.out.ptr(), a = buf.a.ptr(), b = buf.b.ptr();
  unsigned long long tasks = c.tasks, elems = kElems;
  void* params[] = {&out, &a, &b, &tasks, &elems};
  const KernelLaunch k{m.get("bench_fused_adds"), grid, GPUOS_BLOCK_THREADS, 0, params};
  const GpuTimer timer;
  k.launch(s.get());  // warm-up
  s.sync();
  s.poison(buf.out.ptr(), c.tasks * kElems);
  for (int rep = 0; rep < c.reps; ++rep) {
    const std::int64_t t0 = now_ns();
    timer.start(s.get());
    k.launch(s.get());
    timer.stop(s.get());
    s.sync();
    r.wall_seconds.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
    r.seconds.push_back(timer.ms() * 1e-3);
  }
  r.checked = c.tasks;
  r.wrong = count_wrong(s, buf, c.tasks);
  return r;
}

/// Blocks of bench_fused_adds that run at once on the whole device.
unsigned resident_grid(const Module& m, int sm_count) {
  int per_sm = 0;
  GPUOS_CU_TRY(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, m.get("bench_fused_adds"),
                                                                 GPUOS_BLOCK_THREADS, 0));
  return static_cast<unsigned>(std::max(1, per_sm * sm_count));
}

// ---- gpuos ------------------------------------------------------------------------------------------

/// The tasks, built before timing (like the graph's nodes): args[k] is task k's argument struct.
struct TaskSet {
  std::vector<gpuos_binary_args> args;
  std::vector<gpuos_task> tasks;
};

TaskSet make_tasks(const Buffers& buf, std::uint64_t n) {
  TaskSet t;
  t.args.resize(n);
  t.tasks.resize(n);
  for (std::uint64_t k = 0; k < n; ++k) {
    t.args[k] = gpuos_binary_args{buf.out_of(k), buf.a_of(k), buf.b_of(k), kElems};
    t.tasks[k] = gpuos_task{GPUOS_OP_ADD, gpuos_tiles_for(kElems), &t.args[k], sizeof(gpuos_binary_args), 0};
  }
  return t;
}

/// Submits tasks [begin, end) in batches through the C ABI (no per-call copies of the C++ wrapper).
void submit_range(gpuos_runtime* rt, const TaskSet& ts, std::uint64_t begin, std::uint64_t end,
                  std::uint64_t batch) {
  for (std::uint64_t k = begin; k < end; k += batch) {
    std::uint64_t first = 0;
    detail::check(gpuos_submit_batch(rt, ts.tasks.data() + k, std::min(batch, end - k), &first));
  }
}

/// One repetition with `threads` submitters; returns {submit seconds, total seconds}.
std::pair<double, double> gpuos_rep(Runtime& rt, const TaskSet& ts, unsigned threads, std::uint64_t batch) {
  const std::uint64_t n = ts.tasks.size();
  std::latch start(threads + 1);
  std::vector<std::thread> pool;
  std::vector<std::string> errors(threads);
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        submit_range(rt.handle(), ts, n * t / threads, n * (t + 1) / threads, batch);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  start.arrive_and_wait();
  const std::int64_t t0 = now_ns();
  for (auto& th : pool) th.join();
  const std::int64_t t_submitted = now_ns();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error("submit: " + e);
  rt.drain();
  const std::int64_t t1 = now_ns();
  return {static_cast<double>(t_submitted - t0) * 1e-9, static_cast<double>(t1 - t0) * 1e-9};
}

Method measure_gpuos(const Config& c, unsigned threads, const TaskSet& ts, DeviceInfo& info) {
  Method r{"gpuos " + std::to_string(threads) + (threads == 1 ? " thread" : " threads"), c.tasks, Kind::kGpuos};
  Options o = c.residency.apply(Options());
  o.with_device(c.device);
  if (c.queue) o.with_queue_capacity(c.queue);
  Runtime rt(o);
  info = rt.device_info();
  {  // warm-up: the same submit path, with tasks that touch no data
    std::vector<Task> nops(std::min<std::uint64_t>(c.batch, 1024), ops::nop());
    for (int i = 0; i < 20; ++i) rt.submit_batch(nops);
    rt.drain();
  }
  for (int rep = 0; rep < c.reps; ++rep) {
    auto [submit_s, total_s] = gpuos_rep(rt, ts, threads, c.batch);
    r.submit_seconds.push_back(submit_s);
    r.seconds.push_back(total_s);
  }
  const Stats st = rt.stats();
  if (st.failed != 0) throw std::runtime_error(std::to_string(st.failed) + " tasks failed on the device");
  return r;  // the runtime is destroyed here; outputs are checked by the caller
}

// ---- Report -----------------------------------------------------------------------------------------

void write_method(JsonWriter& j, const Method& m) {
  j.begin_object()
      .field("name", m.name)
      .field("kind", m.kind == Kind::kGpuos ? "gpuos" : m.kind == Kind::kBound ? "upper bound" : "baseline")
      .field("tasks_per_rep", m.tasks_per_rep)
      .field("median_tasks_per_s", m.median_rate())
      .field("best_tasks_per_s", m.best_rate())
      .array("seconds_per_rep", m.seconds);
  if (!m.wall_seconds.empty()) j.array("wall_seconds_per_rep", m.wall_seconds);
  if (!m.submit_seconds.empty()) j.array("submit_seconds_per_rep", m.submit_seconds);
  if (m.setup_seconds > 0) j.field("setup_seconds", m.setup_seconds);
  j.field("checked_tasks", m.checked).field("wrong_tasks", m.wrong).end_object();
}

Config parse(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  Config c;
  c.device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  c.tasks = static_cast<std::uint64_t>(f.integer("--tasks", static_cast<std::int64_t>(c.tasks), 1, 1 << 26));
  c.launches = static_cast<std::uint64_t>(f.integer("--launches", static_cast<std::int64_t>(c.launches), 1, 1 << 26));
  c.graph_nodes =
      static_cast<std::uint64_t>(f.integer("--graph-nodes", static_cast<std::int64_t>(c.graph_nodes), 1, 1 << 20));
  c.graph_replays =
      static_cast<std::uint64_t>(f.integer("--graph-replays", static_cast<std::int64_t>(c.graph_replays), 1, 1 << 20));
  c.threads = f.list("--threads", c.threads, 1, 256);
  c.batch = static_cast<std::uint64_t>(f.integer("--batch", static_cast<std::int64_t>(c.batch), 1, 1 << 22));
  c.reps = static_cast<int>(f.integer("--reps", c.reps, 1, 1000));
  c.queue = static_cast<std::uint32_t>(f.integer("--queue", 0, 0, 1 << 22));
  c.json = f.text("--json", c.json);
  c.residency = residency_flags(f);
  f.finish();
  // gpuos_submit_batch takes at most a queue's worth of tasks (65536 is the runtime's default capacity).
  const std::uint64_t capacity = c.queue ? c.queue : 65536;
  if (c.batch > capacity) {
    std::fprintf(stderr, "bench_throughput: error: --batch %llu exceeds the queue capacity %llu (see --queue)\n",
                 static_cast<unsigned long long>(c.batch), static_cast<unsigned long long>(capacity));
    std::exit(2);
  }
  return c;
}

/// The method of `kind` with the highest median rate (nullptr: none).
const Method* best_of(const std::vector<Method>& methods, Kind kind) {
  const Method* best = nullptr;
  for (const Method& m : methods)
    if (m.kind == kind && (!best || m.median_rate() > best->median_rate())) best = &m;
  return best;
}

const Method& named(const std::vector<Method>& methods, const std::string& name) {
  for (const Method& m : methods)
    if (m.name == name) return m;
  throw std::logic_error("no method " + name);
}

int run(int argc, char** argv) {
  const Config c = parse(argc, argv);
  DeviceContext dev(c.device);
  Stream s;
  const std::uint64_t slices = std::max({c.tasks, c.launches, c.graph_nodes});
  Buffers buf(slices);
  upload_inputs(s, buf.a, buf.b, slices * kElems);
  std::printf("bench_throughput on %s (driver %d, %s)\n", dev.name.c_str(), dev.driver_version, gpuos_build_info());

  std::vector<Method> methods;
  {
    const Module m(bench_kernels_cubin);  // loaded and unloaded while no resident kernel runs
    methods.push_back(measure_launches(c, m, s, buf));
    methods.push_back(measure_graph(c, m, s, buf));
    const unsigned per_task = static_cast<unsigned>(std::min<std::uint64_t>(c.tasks, 0x7fffffffu));
    methods.push_back(measure_one_kernel(c, m, s, buf, per_task, "one kernel, block per task"));
    const unsigned resident = resident_grid(m, dev.sm_count);
    methods.push_back(measure_one_kernel(c, m, s, buf, resident,
                                         "one kernel, " + std::to_string(resident) + " blocks"));
  }
  const TaskSet ts = make_tasks(buf, c.tasks);
  DeviceInfo info{};
  for (std::int64_t threads : c.threads) {
    s.poison(buf.out.ptr(), c.tasks * kElems);
    Method g = guarded("gpuos", [&] { return measure_gpuos(c, static_cast<unsigned>(threads), ts, info); });
    g.checked = c.tasks;
    g.wrong = count_wrong(s, buf, c.tasks);
    methods.push_back(std::move(g));
  }

  std::printf("%-30s %10s %12s %14s %14s %8s\n", "method", "tasks/rep", "median ms", "median Mtask/s",
              "best Mtask/s", "wrong");
  for (const Method& m : methods)
    std::printf("%-30s %10llu %12.3f %14.3f %14.3f %8llu\n", m.name.c_str(),
                static_cast<unsigned long long>(m.tasks_per_rep), median(m.seconds) * 1e3, m.median_rate() / 1e6,
                m.best_rate() / 1e6, static_cast<unsigned long long>(m.wrong));
  std::printf("(one kernel: GPU time between events; its launch + sync on the host clock: ");
  for (const Method& m : methods)
    if (m.kind == Kind::kBound) std::printf("%s %.3f ms; ", m.name.c_str(), median(m.wall_seconds) * 1e3);
  std::printf(")\n");

  const Method& best = *best_of(methods, Kind::kGpuos);
  const Method& bound = *best_of(methods, Kind::kBound);
  const double best_rate = best.median_rate(), bound_rate = bound.median_rate();
  const double vs_launch = best_rate / named(methods, "launches").median_rate();
  const double vs_graph = best_rate / named(methods, "graph").median_rate();
  const double of_bound = best_rate / bound_rate;
  std::printf("best gpuos: %s, %.2f M tasks/s = %.4f of the one-kernel bound ('%s', %.2f M tasks/s, GPU time), "
              "%.1f x launches, %.1f x graph\n",
              best.name.c_str(), best_rate / 1e6, of_bound, bound.name.c_str(), bound_rate / 1e6, vs_launch, vs_graph);

  Verdicts v("bench_throughput");
  v.target("best gpuos M tasks/s (" + best.name + ")", best_rate / 1e6, ">= " + fmt("%g", kMinRate / 1e6),
           best_rate >= kMinRate, "", "%.2f");
  v.target("best gpuos / back-to-back launches", vs_launch, ">= " + fmt("%g", kMinOverLaunches),
           vs_launch >= kMinOverLaunches, "", "%.1f");
  std::uint64_t wrong = 0, checked = 0;
  for (const Method& m : methods) {
    wrong += m.wrong;
    checked += m.checked;
  }
  v.check("every method's outputs", wrong == 0,
          std::to_string(wrong) + " wrong of " + std::to_string(checked) + " tasks checked over " +
              std::to_string(methods.size()) + " methods");

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_throughput", dev);
  write_grid(j, info);
  j.field("elems_per_task", kElems)
      .field("batch", c.batch)
      .field("reps", c.reps)
      .field("graph_nodes", c.graph_nodes)
      .field("graph_replays", c.graph_replays)
      .field("queue_capacity", c.queue);
  j.begin_array("methods");
  for (const Method& m : methods) write_method(j, m);
  j.end_array();
  j.begin_object("summary")
      .field("best_gpuos", best.name)
      .field("best_gpuos_tasks_per_s", best_rate)
      .field("target_min_tasks_per_s", kMinRate)
      .field("rate_pass", best_rate >= kMinRate)
      .field("gpuos_over_launches", vs_launch)
      .field("target_min_over_launches", kMinOverLaunches)
      .field("launches_pass", vs_launch >= kMinOverLaunches)
      .field("gpuos_over_graph", vs_graph)
      .field("one_kernel_bound", bound.name)
      .field("one_kernel_bound_tasks_per_s", bound_rate)
      .field("gpuos_fraction_of_one_kernel", of_bound)
      .field("all_results_correct", wrong == 0)
      .end_object();
  return v.conclude(j, c.json);
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) {
  return gpuos::bench::run_main("bench_throughput", gpuos::bench::run, argc, argv);
}
