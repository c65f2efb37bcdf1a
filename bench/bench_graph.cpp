// bench_graph: dependent work. Every node is a tiny add of 256 floats onto its own slice (x = x + 1 through
// the built-in add: gpuos tasks run its tile function, the CUDA baselines launch the same tile function as
// a kernel, bench_direct_add, one block), so the final values check that each node ran exactly once per
// launch. Shapes:
//   chain   N = 16, 64, 256, 1024 dependent steps on one slice: a gpuos graph launch, gpuos submit_after,
//           gpuos submit + wait per step; a CUDA graph of the chain and N stream launches (both measured
//           before gpuos boots). Per step: the launch-to-completion time on the host clock / N. Last, once
//           an operator was loaded (the kernel then runs a generation's image), the graph launch of the
//           built-in add's chain again and of an add loaded at run time (the same loop; a chain link calls
//           a built-in operator directly, a run-time one through the jump table: kernel/scheduler.cu,
//           run_links).
//   fan     1 -> 128 -> 1: gpuos graph vs CUDA graph, per launch.
//   dag     a random DAG (--dag-nodes, each node 1..4 predecessors among the 64 before it): gpuos graph
//           vs CUDA graph of the same DAG, per launch.
//   one     a 1-node graph launched and waited for vs a nop submitted and waited for (p50 round trips),
//           and a nop after a nop just submitted (submit, submit_after, wait: the dependency resolved on
//           the device) vs the same pair with a wait between (two host round trips).
// Targets: chain N = 256 <= 0.5 us a step and >= 2x faster than the faster CUDA baseline (judged for the
// boot image, the loaded image and the run-time add); dag >= 3x faster than the CUDA graph.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_common.hpp"

namespace gpuos::bench {
namespace {

const char* const kHelp =
    "usage: bench_graph [--device N] [--chain 16,64,256,1024] [--dag-nodes 10000] [--reps 30]\n"
    "                   [--round-trips 2000] [--json PATH]\n"
    "\n"
    "Dependent tiny adds as gpuos task graphs, gpuos dependencies and host round trips, against CUDA\n"
    "graphs and stream launches of the same kernels (see the top of bench/bench_graph.cpp).\n"
    "Exit status: 0 every target met, 4 a target missed, 1 an error or a wrong result, 3 no device.\n";

constexpr std::uint64_t kElems = 256;  // one tile of the built-in add
constexpr double kChainStepUs = 0.5;
constexpr double kChainOverCuda = 2.0;
constexpr double kDagOverCuda = 3.0;
constexpr std::uint32_t kFan = 128;

struct Config {
  int device = 0;
  std::vector<std::int64_t> chain = {16, 64, 256, 1024};
  std::uint32_t dag_nodes = 10000;
  int reps = 30;
  int round_trips = 2000;
  std::string json = "bench_graph.json";
};

/// A DAG over nodes 0..n-1, edges from lower to higher ids.
struct Dag {
  std::vector<std::vector<std::uint32_t>> preds;
  std::size_t size() const { return preds.size(); }
};

Dag chain_dag(std::uint32_t n) {
  Dag d;
  d.preds.resize(n);
  for (std::uint32_t v = 1; v < n; ++v) d.preds[v] = {v - 1};
  return d;
}

Dag fan_dag() {
  Dag d;
  d.preds.resize(kFan + 2);
  for (std::uint32_t v = 1; v <= kFan; ++v) d.preds[v] = {0};
  for (std::uint32_t v = 1; v <= kFan; ++v) d.preds[kFan + 1].push_back(v);
  return d;
}

Dag random_dag(std::uint32_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Dag d;
  d.preds.resize(n);
  for (std::uint32_t v = 1; v < n; ++v) {
    const std::uint32_t k = std::uniform_int_distribution<std::uint32_t>(1, 4)(rng);
    const std::uint32_t lo = v > 64 ? v - 64 : 0;
    for (std::uint32_t i = 0; i < k; ++i) {
      const auto p = std::uniform_int_distribution<std::uint32_t>(lo, v - 1)(rng);
      if (std::find(d.preds[v].begin(), d.preds[v].end(), p) == d.preds[v].end()) d.preds[v].push_back(p);
    }
  }
  return d;
}

/// Node v of a shape adds 1 to slice `slice_of(v)`: the arguments of the built-in add.
struct Slices {
  CUdeviceptr x = 0, ones = 0;
  std::uint32_t first = 0;  // the shape's first slice
  bool one_slice = false;   // every node on the same slice (a chain)
  gpuos_binary_args args(std::uint32_t v) const {
    float* s = reinterpret_cast<float*>(x) + (one_slice ? first : first + v) * kElems;
    return gpuos_binary_args{s, s, reinterpret_cast<const float*>(ones), kElems};
  }
  std::uint32_t count(const Dag& d) const { return one_slice ? 1u : static_cast<std::uint32_t>(d.size()); }
};

struct Method {
  Method(std::string s, std::string n, std::size_t count)
      : shape(std::move(s)), name(std::move(n)), nodes(static_cast<std::uint32_t>(count)) {}
  std::string shape, name;
  std::uint32_t nodes = 0;
  std::vector<double> seconds;  // per rep: one launch of the whole shape, to completion
  std::uint64_t wrong = 0, checked = 0;
  double per_node_us() const { return median(seconds) * 1e6 / nodes; }
  double per_launch_us() const { return median(seconds) * 1e6; }
};

/// Elements of the shape's slices that are not `expect` (each node ran `runs` times).
std::uint64_t count_wrong(const Stream& s, const Slices& sl, const Dag& d, float expect_per_node_run, int runs) {
  const std::uint32_t n = sl.count(d);
  std::vector<float> h(static_cast<std::size_t>(n) * kElems);
  s.download(h.data(), sl.x + sl.first * kElems * sizeof(float), h.size() * sizeof(float));
  const float want = expect_per_node_run * static_cast<float>(runs);
  return static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), [&](float v) { return v != want; }));
}

void zero(const Stream& s, const Slices& sl, const Dag& d) {
  const std::vector<float> z(static_cast<std::size_t>(sl.count(d)) * kElems, 0.0f);
  s.upload(sl.x + sl.first * kElems * sizeof(float), z.data(), z.size() * sizeof(float));
}

// ---- CUDA baselines (before gpuos boots) -------------------------------------------------------------

/// bench_direct_add on one block; `params` (which the launch points to) must outlive its use.
KernelLaunch add_kernel(const Module& m, gpuos_binary_args& a, CUdeviceptr& scratch, void* (&params)[2]) {
  params[0] = &a;
  params[1] = &scratch;
  KernelLaunch k;
  k.fn = m.get("bench_direct_add");
  k.grid = 1;
  k.block = GPUOS_BLOCK_THREADS;
  k.params = params;
  return k;
}

Method cuda_graph(const Module& m, const Stream& s, const Slices& sl, const Dag& d, const std::string& shape,
                  int reps, CUdeviceptr scratch) {
  KernelGraph g;
  for (std::uint32_t v = 0; v < d.size(); ++v) {
    gpuos_binary_args a = sl.args(v);
    void* params[2];
    std::vector<std::size_t> after(d.preds[v].begin(), d.preds[v].end());
    g.add(add_kernel(m, a, scratch, params), after);  // the arguments are copied into the node
  }
  g.instantiate();
  zero(s, sl, d);
  Method r(shape, "CUDA graph", d.size());
  for (int i = 0; i < reps + 3; ++i) {
    const std::int64_t t0 = now_ns();
    g.launch(s.get());
    s.sync();
    if (i >= 3) r.seconds.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  r.checked = static_cast<std::uint64_t>(sl.count(d)) * kElems;
  r.wrong = count_wrong(s, sl, d, sl.one_slice ? static_cast<float>(d.size()) : 1.0f, reps + 3);
  return r;
}

Method stream_launches(const Module& m, const Stream& s, const Slices& sl, const Dag& d, int reps, CUdeviceptr scratch) {
  zero(s, sl, d);
  gpuos_binary_args a = sl.args(0);
  void* params[2];
  const KernelLaunch k = add_kernel(m, a, scratch, params);
  Method r("chain", "stream launches", d.size());
  for (int i = 0; i < reps + 3; ++i) {
    const std::int64_t t0 = now_ns();
    for (std::uint32_t v = 0; v < d.size(); ++v) k.launch(s.get());
    s.sync();
    if (i >= 3) r.seconds.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  r.checked = kElems;
  r.wrong = count_wrong(s, sl, d, static_cast<float>(d.size()), reps + 3);
  return r;
}

// ---- gpuos -------------------------------------------------------------------------------------------

Task add_task(const Slices& sl, std::uint32_t v, std::uint32_t op = GPUOS_OP_ADD) {
  return Task::make(op, 1, sl.args(v));
}

/// The built-in add's scalar loop (a tile of 256 floats takes it), as an operator loaded at run time.
constexpr const char* kRuntimeAdd = R"(
#include "gpuos/builtin_ops.h"
#include "gpuos/op.cuh"
__device__ void radd_tile(const gpuos_binary_args& a, const gpuos::TileCtx& c) {
  const unsigned long long e = c.last(GPUOS_ELEMS_PER_TILE, a.n);
  for (unsigned long long i = c.first(GPUOS_ELEMS_PER_TILE) + threadIdx.x; i < e; i += blockDim.x)
    a.out[i] = a.a[i] + a.b[i];
}
GPUOS_OPERATOR(radd, gpuos_binary_args, radd_tile)
)";

void wait_or_die(Runtime& rt, Ticket t, const char* what) {
  if (!guarded(what, [&] { return rt.wait(t, std::chrono::seconds(60)); }))
    die(std::string(what) + ": no completion within 60 s; runtime state:\n" + rt.diagnose());
}

Method gpuos_graph(Runtime& rt, const Stream& s, const Slices& sl, const Dag& d, const std::string& shape, int reps,
                   std::uint32_t op = GPUOS_OP_ADD, const char* variant = "") {
  Graph g;
  for (std::uint32_t v = 0; v < d.size(); ++v) g.add(add_task(sl, v, op));
  for (std::uint32_t v = 0; v < d.size(); ++v)
    for (std::uint32_t p : d.preds[v]) g.edge(p, v);
  GraphExec ge(rt, g);
  zero(s, sl, d);
  Method r(shape, std::string("gpuos graph") + variant, d.size());
  for (int i = 0; i < reps + 3; ++i) {
    const std::int64_t t0 = now_ns();
    wait_or_die(rt, ge.launch(), "gpuos graph launch");
    if (i >= 3) r.seconds.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  r.checked = static_cast<std::uint64_t>(sl.count(d)) * kElems;
  r.wrong = count_wrong(s, sl, d, sl.one_slice ? static_cast<float>(d.size()) : 1.0f, reps + 3);
  return r;
}

Method gpuos_chain(Runtime& rt, const Stream& s, const Slices& sl, const Dag& d, bool on_device, int reps) {
  zero(s, sl, d);
  Method r("chain", on_device ? "gpuos submit_after" : "gpuos submit + wait", d.size());
  const Task t = add_task(sl, 0);
  for (int i = 0; i < reps + 3; ++i) {
    const std::int64_t t0 = now_ns();
    Ticket k = guarded("submit", [&] { return rt.submit(t); });
    for (std::uint32_t v = 1; v < d.size(); ++v) {
      if (on_device) {
        k = guarded("submit_after", [&] { return rt.submit_after(t, std::span<const Ticket>(&k, 1)); });
      } else {
        wait_or_die(rt, k, "submit + wait");
        k = guarded("submit", [&] { return rt.submit(t); });
      }
    }
    wait_or_die(rt, k, "chain");
    if (i >= 3) r.seconds.push_back(static_cast<double>(now_ns() - t0) * 1e-9);
  }
  r.checked = kElems;
  r.wrong = count_wrong(s, sl, d, static_cast<float>(d.size()), reps + 3);
  return r;
}

std::vector<double> round_trips(Runtime& rt, int n, const std::function<Ticket()>& submit) {
  std::vector<double> us;
  for (int i = 0; i < n + 100; ++i) {
    const std::int64_t t0 = now_ns();
    wait_or_die(rt, submit(), "round trip");
    if (i >= 100) us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
  }
  return us;
}

void write_method(JsonWriter& j, const Method& m) {
  j.begin_object()
      .field("shape", m.shape)
      .field("name", m.name)
      .field("nodes", static_cast<std::int64_t>(m.nodes))
      .field("median_us_per_launch", m.per_launch_us())
      .field("median_us_per_node", m.per_node_us())
      .array("seconds_per_launch", m.seconds)
      .field("checked_elements", static_cast<std::int64_t>(m.checked))
      .field("wrong_elements", static_cast<std::int64_t>(m.wrong))
      .end_object();
}

Config parse(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  Config c;
  c.device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  c.chain = f.list("--chain", c.chain, 1, 1 << 16);
  c.dag_nodes = static_cast<std::uint32_t>(f.integer("--dag-nodes", c.dag_nodes, 2, 1 << 20));
  c.reps = static_cast<int>(f.integer("--reps", c.reps, 1, 100000));
  c.round_trips = static_cast<int>(f.integer("--round-trips", c.round_trips, 1, 10000000));
  c.json = f.text("--json", c.json);
  f.finish();
  return c;
}

const Method* find(const std::vector<Method>& ms, const std::string& shape, std::uint32_t nodes, const std::string& name) {
  for (const Method& m : ms)
    if (m.shape == shape && m.nodes == nodes && m.name == name) return &m;
  return nullptr;
}

int run(int argc, char** argv) {
  const Config c = parse(argc, argv);
  DeviceContext dev(c.device);
  Stream s;
  std::printf("bench_graph on %s (driver %d, %s)\n", dev.name.c_str(), dev.driver_version, gpuos_build_info());

  // Slices: one per chain length, then the fan, then the DAG; all allocated before gpuos boots.
  const Dag fan = fan_dag(), dag = random_dag(c.dag_nodes, 7);
  std::vector<Dag> chains;
  for (std::int64_t n : c.chain) chains.push_back(chain_dag(static_cast<std::uint32_t>(n)));
  const std::uint32_t total = static_cast<std::uint32_t>(chains.size() + fan.size() + dag.size());
  DeviceBuffer x(static_cast<std::size_t>(total) * kElems * sizeof(float));
  DeviceBuffer ones(kElems * sizeof(float));
  DeviceBuffer scratch(sizeof(double));
  const std::vector<float> h1(kElems, 1.0f);
  s.upload(ones.ptr(), h1.data(), h1.size() * sizeof(float));
  std::vector<Slices> chain_sl;
  for (std::uint32_t i = 0; i < chains.size(); ++i) chain_sl.push_back(Slices{x.ptr(), ones.ptr(), i, true});
  const Slices fan_sl{x.ptr(), ones.ptr(), static_cast<std::uint32_t>(chains.size()), false};
  const Slices dag_sl{x.ptr(), ones.ptr(), static_cast<std::uint32_t>(chains.size() + fan.size()), false};

  std::vector<Method> ms;
  CUdeviceptr scr = scratch.ptr();
  {
    const Module m(bench_kernels_cubin);  // loaded and unloaded while no resident kernel runs
    for (std::size_t i = 0; i < chains.size(); ++i) {
      ms.push_back(stream_launches(m, s, chain_sl[i], chains[i], c.reps, scr));
      ms.push_back(cuda_graph(m, s, chain_sl[i], chains[i], "chain", c.reps, scr));
    }
    ms.push_back(cuda_graph(m, s, fan_sl, fan, "fan", c.reps, scr));
    ms.push_back(cuda_graph(m, s, dag_sl, dag, "dag", c.reps, scr));
  }

  DeviceInfo info{};
  LatencySummary rt_graph, rt_nop, rt_after, rt_two;
  guarded("gpuos", [&] {
    Options o;
    o.with_device(c.device);
    Runtime rt(o);
    info = rt.device_info();
    for (std::size_t i = 0; i < chains.size(); ++i) {
      ms.push_back(gpuos_graph(rt, s, chain_sl[i], chains[i], "chain", c.reps));
      ms.push_back(gpuos_chain(rt, s, chain_sl[i], chains[i], true, c.reps));
      ms.push_back(gpuos_chain(rt, s, chain_sl[i], chains[i], false, c.reps));
    }
    ms.push_back(gpuos_graph(rt, s, fan_sl, fan, "fan", c.reps));
    ms.push_back(gpuos_graph(rt, s, dag_sl, dag, "dag", c.reps));
    Graph one;
    one.add(ops::nop());
    GraphExec ge(rt, one);
    rt_graph = LatencySummary::of(round_trips(rt, c.round_trips, [&] { return ge.launch(); }));
    rt_nop = LatencySummary::of(round_trips(rt, c.round_trips, [&] { return rt.submit(ops::nop()); }));
    rt_after = LatencySummary::of(round_trips(rt, c.round_trips, [&] {
      const Ticket t = rt.submit(ops::nop());
      return rt.submit_after(ops::nop(), std::span<const Ticket>(&t, 1));
    }));
    rt_two = LatencySummary::of(round_trips(rt, c.round_trips, [&] {
      wait_or_die(rt, rt.submit(ops::nop()), "round trip");
      return rt.submit(ops::nop());
    }));
    // Last: an operator loaded at run time, so the kernel runs an image linked at run time from here on
    // (the boot image is compiled whole; a generation links the kernel's relocatable code with the
    // operators), the built-in add's chain again and the run-time add's.
    rt.load_operator_source("radd.cu", kRuntimeAdd);
    const std::uint32_t radd = rt.op_id("radd");
    for (std::size_t i = 0; i < chains.size(); ++i) {
      ms.push_back(gpuos_graph(rt, s, chain_sl[i], chains[i], "chain", c.reps, GPUOS_OP_ADD, " (loaded image)"));
      ms.push_back(gpuos_graph(rt, s, chain_sl[i], chains[i], "chain", c.reps, radd, ", run-time op"));
    }
    if (rt.stats().failed != 0) throw std::runtime_error(std::to_string(rt.stats().failed) + " tasks failed");
    return 0;
  });

  std::printf("%-6s %6s %-30s %14s %14s %8s\n", "shape", "nodes", "method", "us/launch p50", "us/node p50", "wrong");
  for (const Method& m : ms)
    std::printf("%-6s %6u %-30s %14.2f %14.3f %8llu\n", m.shape.c_str(), m.nodes, m.name.c_str(), m.per_launch_us(),
                m.per_node_us(), static_cast<unsigned long long>(m.wrong));
  std::printf("round trip p50: 1-node graph %.2f us, nop task %.2f us; a nop after a nop just submitted %.2f us, "
              "the two with a wait between %.2f us\n",
              rt_graph.p50, rt_nop.p50, rt_after.p50, rt_two.p50);

  Verdicts v("bench_graph");
  const std::uint32_t n256 = 256;
  const Method* cg256 = find(ms, "chain", n256, "CUDA graph");
  const Method* sl256 = find(ms, "chain", n256, "stream launches");
  const std::string rule_step = "<= " + fmt("%g", kChainStepUs) + " us";
  const std::string rule_chain = ">= " + fmt("%g", kChainOverCuda);
  // The boot image's chain of the built-in add, and the same once an operator was loaded, built-in and
  // loaded at run time: a served runtime runs a loaded image.
  for (const char* name : {"gpuos graph", "gpuos graph (loaded image)", "gpuos graph, run-time op"}) {
    const Method* g256 = find(ms, "chain", n256, name);
    const std::string step = std::string("chain N=256: ") + name + " us per step";
    const std::string over = std::string("chain N=256: faster CUDA baseline / ") + name + ", per step";
    if (g256 && cg256 && sl256) {
      const double best_cuda = std::min(cg256->per_node_us(), sl256->per_node_us());
      v.target(step, g256->per_node_us(), rule_step, g256->per_node_us() <= kChainStepUs);
      const double ratio = best_cuda / g256->per_node_us();
      v.target(over, ratio, rule_chain, ratio >= kChainOverCuda,
               cg256->per_node_us() <= sl256->per_node_us() ? "baseline: CUDA graph" : "baseline: stream launches",
               "%.2f");
    } else {
      v.not_measured(step, rule_step, "--chain does not include 256");
      v.not_measured(over, rule_chain, "--chain does not include 256");
    }
  }
  const Method* gd = find(ms, "dag", c.dag_nodes, "gpuos graph");
  const Method* cd = find(ms, "dag", c.dag_nodes, "CUDA graph");
  const double dag_ratio = cd->per_launch_us() / gd->per_launch_us();
  v.target("dag of " + std::to_string(c.dag_nodes) + " nodes: CUDA graph / gpuos graph, per launch", dag_ratio,
           ">= " + fmt("%g", kDagOverCuda), dag_ratio >= kDagOverCuda, "", "%.2f");
  std::uint64_t wrong = 0, checked = 0;
  for (const Method& m : ms) {
    wrong += m.wrong;
    checked += m.checked;
  }
  v.check("every method's outputs", wrong == 0,
          std::to_string(wrong) + " wrong of " + std::to_string(checked) + " elements checked");

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_graph", dev);
  write_grid(j, info);
  j.field("elems_per_node", static_cast<std::int64_t>(kElems)).field("reps", static_cast<std::int64_t>(c.reps));
  j.begin_array("methods");
  for (const Method& m : ms) write_method(j, m);
  j.end_array();
  j.begin_object("round_trip_us")
      .field("graph_1_node_p50", rt_graph.p50)
      .field("graph_1_node_p90", rt_graph.p90)
      .field("nop_task_p50", rt_nop.p50)
      .field("nop_task_p90", rt_nop.p90)
      .field("nop_after_nop_p50", rt_after.p50)
      .field("nop_after_nop_p90", rt_after.p90)
      .field("nop_wait_nop_p50", rt_two.p50)
      .field("nop_wait_nop_p90", rt_two.p90)
      .end_object();
  return v.conclude(j, c.json);
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_graph", gpuos::bench::run, argc, argv); }
