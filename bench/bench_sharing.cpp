// bench_sharing: gpuos and other CUDA code in one process (gpuos_options slice_us, park_us; docs/design.md,
// "Sharing the GPU").
//
//   calls   what a framework's calls on the primary context cost, from another thread: a context
//           synchronization, a 1 MiB and a 1 GiB alloc + free, a module never loaded before + its launch +
//           a sync, 1,000 empty kernels + a sync. Three ways: nothing of gpuos in the process (before
//           boot: the baseline), gpuos (sm_budget --sm-budget) serving a continuous load, and gpuos idle
//           (parked).
//   costs   what the bounded residency costs gpuos (the default, and 2 ms slices), against the same runtime
//           with slice and park off (0, 0), in the same process: the nop round trip (p50, p99), tiny-task throughput, and the
//           round trip of the first task after an idle period (the kernel parked: the task launches it).
//   stream  the round trip of a nop submitted on a CUDA stream (gpuos_submit_on_stream) + the stream's
//           sync, beside the nop's through the host doorbell (submit + wait), its parts (the stream's
//           doorbell answered by a spinning host thread, before boot; a nop and its signal through the
//           ring, no stream) and an empty kernel launched on a stream + its sync (before boot).
//
// Every framework call runs on a thread of its own under a watchdog: one that has not returned after
// 60 s ends the run (exit status 1) with the runtime's report. Every gpuos task's effect is checked.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.hpp"
#include "host/doors.hpp"

namespace gpuos::bench {
namespace {

const char* kHelp =
    "usage: bench_sharing [--device N] [--sm-budget N] [--reps N] [--iters N] [--json FILE]\n"
    "\n"
    "Framework calls on the primary context beside a runtime (no gpuos / gpuos under load / gpuos parked),\n"
    "and what the bounded residency (default slice and park) costs gpuos against slice and park off.\n"
    "Exit status: 0 every check passed, 1 error, a hang or a wrong result, 3 no device, 2 usage.\n"
    "\n"
    "Options:\n"
    "  --device N     CUDA device (default 0)\n"
    "  --sm-budget N  the runtime's SM budget for the calls (default 16)\n"
    "  --reps N       repetitions of each framework call (default 20)\n"
    "  --iters N      nop round trips per setting (default 20000)\n"
    "  --json FILE    result file (default bench_sharing.json)\n";

struct Config {
  int device = 0;
  std::uint32_t sm_budget = 16;
  int reps = 20;
  int iters = 20000;
  std::string json = "bench_sharing.json";
};

struct Call {
  std::string name;
  std::function<void()> run;
};

struct CallResult {
  std::string setting, call;
  std::vector<double> ms;
};

/// Runs `f` on a thread of its own with the primary context current and returns its milliseconds;
/// ends the run if it has not returned within 60 s.
double timed_call(const std::function<void()>& f, const std::function<std::string()>& report) {
  std::packaged_task<double()> task([&] {
    support::use_device();
    const std::int64_t t0 = now_ns();
    f();
    return static_cast<double>(now_ns() - t0) * 1e-6;
  });
  std::future<double> done = task.get_future();
  std::thread th(std::move(task));
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready)
    die("a framework call did not return within 60 s; runtime state:\n" + report());
  th.join();
  return done.get();
}

void measure_calls(const std::vector<Call>& calls, const std::string& setting, int reps,
                   const std::function<std::string()>& report, std::vector<CallResult>& out) {
  for (const Call& c : calls) {
    CallResult r{setting, c.name, {}};
    for (int i = 0; i < reps; ++i) r.ms.push_back(timed_call(c.run, report));
    std::printf("  %-22s %-44s median %9.3f ms  max %9.3f ms\n", setting.c_str(), c.name.c_str(), median(r.ms),
                *std::max_element(r.ms.begin(), r.ms.end()));
    out.push_back(std::move(r));
  }
}

/// Waits until the runtime reports that its kernel left the GPU while idle.
bool wait_parked(Runtime& rt) {
  const std::int64_t deadline = now_ns() + 10'000'000'000;
  while (now_ns() < deadline) {
    if (rt.diagnose().find("state=parked") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

struct Costs {
  std::string setting;
  LatencySummary nop;
  double tasks_per_s = 0;
  LatencySummary after_park;  // settings that park
  LatencySummary on_stream;   // the first setting only: a nop submitted on a stream, + the stream's sync
};

int bench_main(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  Config c;
  c.device = static_cast<int>(f.integer("--device", c.device, 0, 64));
  c.sm_budget = static_cast<std::uint32_t>(f.integer("--sm-budget", c.sm_budget, 0, 1 << 16));
  c.reps = static_cast<int>(f.integer("--reps", c.reps, 1, 100000));
  c.iters = static_cast<int>(f.integer("--iters", c.iters, 100, 10000000));
  c.json = f.text("--json", c.json);
  f.finish();
  DeviceContext dev(c.device);
  Verdicts v("bench_sharing");

  // Everything allocated before boot; the modules the calls load are new each time.
  const Module m(bench_kernels_cubin);
  const KernelLaunch empty{m.get("bench_empty")};
  const Stream s;
  const DeviceBuffer fresh_out(256 * sizeof(std::uint32_t));
  constexpr std::size_t kCounters = 1 << 23;
  const DeviceBuffer counters(kCounters * sizeof(float)), ones(kCounters * sizeof(float));
  s.upload(ones.ptr(), std::vector<float>(kCounters, 1.0f).data(), kCounters * sizeof(float));
  s.upload(counters.ptr(), std::vector<float>(kCounters, 0.0f).data(), kCounters * sizeof(float));
  std::uint64_t fresh_wrong = 0;
  const std::vector<Call> calls = {
      {"cuCtxSynchronize", [] { GPUOS_CU_TRY(drv().cuCtxSynchronize(nullptr)); }},
      {"cuMemAlloc + cuMemFree, 1 MiB",
       [] {
         CUdeviceptr p = 0;
         GPUOS_CU_TRY(drv().cuMemAlloc(&p, 1 << 20));
         GPUOS_CU_TRY(drv().cuMemFree(p));
       }},
      {"cuMemAlloc + cuMemFree, 1 GiB",
       [] {
         CUdeviceptr p = 0;
         GPUOS_CU_TRY(drv().cuMemAlloc(&p, 1ull << 30));
         GPUOS_CU_TRY(drv().cuMemFree(p));
       }},
      {"new module + launch + sync",
       [&] {
         const Stream own;
         support::run_fresh_module(own, fresh_out.ptr(), 7u);
         std::vector<std::uint32_t> h(256);
         own.download(h.data(), fresh_out.ptr(), h.size() * sizeof(std::uint32_t));
         fresh_wrong += static_cast<std::uint64_t>(std::count_if(h.begin(), h.end(), [](std::uint32_t x) { return x != 7u; }));
       }},
      {"1,000 empty kernels + stream sync",
       [&] {
         const Stream own;
         for (int i = 0; i < 1000; ++i) empty.launch(own.get());
         own.sync();
       }},
  };
  std::vector<CallResult> results;
  std::printf("framework calls from another thread (%d reps each)\n", c.reps);
  measure_calls(calls, "no gpuos", c.reps, [] { return std::string("(no runtime)"); }, results);

  // The stream-ordered round trip's baseline, before boot: an empty kernel launched on a stream + its sync.
  LatencySummary launch_rt;
  {
    const Stream own;
    std::vector<double> us;
    for (int i = 0; i < c.iters / 10 + 100; ++i) {
      const std::int64_t t0 = now_ns();
      empty.launch(own.get());
      own.sync();
      if (i >= 100) us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    }
    launch_rt = LatencySummary::of(us);
    std::printf("an empty kernel launched on a stream + its sync: p50 %.1f us p99 %.1f us\n", launch_rt.p50, launch_rt.p99);
  }
  // The doorbell's floor, before boot: the stream rings a word of mapped memory and waits for a flag
  // (the memory operations stream-ordered submission puts on a stream), a host thread spinning on the
  // word answers by writing the flag, + the stream's sync. No gpuos. Answered at once, and `late` us
  // after the ring is seen (a task's round trip in between): what the stream's wait adds when its flag
  // comes later than its first look.
  std::vector<std::pair<int, LatencySummary>> door_rt;
  for (const int late : {0, 3, 10}) {
    const Stream own;
    const MappedHost words(256);
    std::uint32_t* req = words.host<std::uint32_t>(0);
    std::uint32_t* flag = words.host<std::uint32_t>(32);
    std::atomic<bool> stop{false};
    std::thread answer([&] {
      while (!stop.load(std::memory_order_relaxed))
        if (__atomic_load_n(req, __ATOMIC_ACQUIRE) != 0) {
          __atomic_store_n(req, 0u, __ATOMIC_RELAXED);
          const std::int64_t seen = now_ns();
          while (now_ns() - seen < late * 1000) {
          }
          __atomic_store_n(flag, detail::Doors::kSignaled, __ATOMIC_RELEASE);
        }
    });
    CUstreamBatchMemOpParams ops[3];
    detail::Doors::ring_ops(words.device<std::uint32_t>(0), words.device<std::uint32_t>(32), ops);
    std::vector<double> us;
    for (int i = 0; i < c.iters / 10 + 100; ++i) {
      const std::int64_t t0 = now_ns();
      GPUOS_CU_TRY(drv().cuStreamBatchMemOp(own.get(), 3, ops, 0));
      own.sync();
      if (i >= 100) us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    }
    stop = true;
    answer.join();
    door_rt.emplace_back(late, LatencySummary::of(us));
    std::printf("a stream's doorbell answered by a spinning host thread %d us after it rings, + its sync: p50 %.1f us p99 %.1f us\n",
                late, door_rt.back().second.p50, door_rt.back().second.p99);
  }

  std::uint64_t next = 0;  // counters handed to tasks so far (each incremented once)
  std::vector<Costs> costs;
  {
    Runtime rt(Options().with_device(c.device).with_sm_budget(c.sm_budget));
    const auto report = [&] { return rt.diagnose(); };
    // A continuous load: batches of 64 tiny tasks, each incrementing its own counter, waited for.
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> done{0};
    std::thread load([&] {
      std::vector<Task> batch;
      while (!stop.load() && next + 64 <= kCounters) {
        batch.clear();
        for (std::uint64_t i = 0; i < 64; ++i)
          batch.push_back(ops::axpy(counters.as<float>(next + i), 1.0f, ones.as<float>(next + i), 1));
        const Ticket first = rt.submit_batch(batch);
        if (!rt.wait(first + 63, std::chrono::seconds(60))) die("load: no completion within 60 s\n" + rt.diagnose());
        next += 64;
        done += 64;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::uint64_t d0 = done.load();
    measure_calls(calls, "gpuos serving load", c.reps, report, results);
    v.check("gpuos kept completing tasks during the calls", done.load() > d0);
    stop.store(true);
    load.join();
    guarded("drain", [&] { return rt.drain(std::chrono::seconds(60)); });
    if (!wait_parked(rt)) die("the idle runtime did not park within 10 s\n" + rt.diagnose());
    measure_calls({calls[0], calls[1], calls[3]}, "gpuos parked", c.reps, report, results);
  }
  // The counters: each handed out exactly once.
  {
    std::vector<float> h(kCounters);
    s.download(h.data(), counters.ptr(), h.size() * sizeof(float));
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < kCounters; ++i) wrong += h[i] != (i < next ? 1.0f : 0.0f);
    v.check("every load task ran exactly once", wrong == 0, std::to_string(wrong) + " of " + std::to_string(kCounters) + " counters wrong");
  }
  v.check("the new module's kernel wrote its output", fresh_wrong == 0, std::to_string(fresh_wrong) + " words wrong");

  // What the bounded residency costs gpuos: the default against slice and park off, same process.
  struct Setting {
    const char* name;
    std::uint32_t slice_us, park_us;
  };
  const Options defaults;
  const std::string default_name =
      "default (slice " + std::to_string(defaults.slice_us) + " us, park " + std::to_string(defaults.park_us) + " us)";
  const Setting settings[] = {{default_name.c_str(), defaults.slice_us, defaults.park_us},
                              {"slice 2000 us, park 2000 us", 2000, 2000},
                              {"slice and park off", 0, 0}};
  for (const Setting& st : settings) {
    const bool bounded = st.slice_us != 0;
    Runtime rt(Options().with_device(c.device).with_residency(st.slice_us, st.park_us));
    Costs k;
    k.setting = st.name;
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(c.iters));
    for (int i = 0; i < c.iters + 1000; ++i) {
      const std::int64_t t0 = now_ns();
      if (!rt.wait(rt.submit(ops::nop()), std::chrono::seconds(60))) die("nop: no completion\n" + rt.diagnose());
      if (i >= 1000) us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    }
    k.nop = LatencySummary::of(us);
    if (&st == &settings[0]) {
      // Stream-ordered: the ring, the task through the ring, the flag, the stream's wait, the sync.
      const Stream own;
      std::vector<double> sus;
      for (int i = 0; i < c.iters / 10 + 100; ++i) {
        const std::int64_t t0 = now_ns();
        rt.submit_on_stream(ops::nop(), own.get());
        own.sync();
        if (i >= 100) sus.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
      }
      k.on_stream = LatencySummary::of(sus);
    }
    // Throughput: 2M nops in batches of 4096, in flight together.
    const std::vector<Task> batch(4096, ops::nop());
    const std::int64_t t0 = now_ns();
    Ticket last = 0;
    for (int i = 0; i < 512; ++i) last = rt.submit_batch(batch) + batch.size() - 1;
    if (!rt.wait(last, std::chrono::seconds(60))) die("throughput: no completion\n" + rt.diagnose());
    k.tasks_per_s = 512.0 * 4096.0 / (static_cast<double>(now_ns() - t0) * 1e-9);
    if (bounded) {
      std::vector<double> first;
      for (int i = 0; i < 50; ++i) {
        if (!wait_parked(rt)) die("the idle runtime did not park within 10 s\n" + rt.diagnose());
        const std::int64_t t1 = now_ns();
        if (!rt.wait(rt.submit(ops::nop()), std::chrono::seconds(60))) die("first nop: no completion\n" + rt.diagnose());
        first.push_back(static_cast<double>(now_ns() - t1) * 1e-3);
      }
      k.after_park = LatencySummary::of(first);
    }
    std::printf("gpuos, %-40s nop p50 %.2f us p99 %.2f us | %.1f M tiny tasks/s", k.setting.c_str(), k.nop.p50, k.nop.p99,
                k.tasks_per_s * 1e-6);
    if (bounded) std::printf(" | first task after park p50 %.1f us max %.1f us", k.after_park.p50, k.after_park.max);
    if (k.on_stream.count)
      std::printf(" | nop on a stream + sync p50 %.1f us p99 %.1f us", k.on_stream.p50, k.on_stream.p99);
    std::printf("\n");
    costs.push_back(std::move(k));
  }

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_sharing", dev);
  j.field("sm_budget", static_cast<std::int64_t>(c.sm_budget)).field("reps", static_cast<std::int64_t>(c.reps));
  j.begin_array("calls");
  for (const CallResult& r : results)
    j.begin_object()
        .field("setting", r.setting)
        .field("call", r.call)
        .field("median_ms", median(r.ms))
        .field("max_ms", *std::max_element(r.ms.begin(), r.ms.end()))
        .array("ms", r.ms)
        .end_object();
  j.end_array();
  j.field("launch_on_stream_p50_us", launch_rt.p50).field("launch_on_stream_p99_us", launch_rt.p99);
  j.begin_array("doorbell_on_stream");
  for (const auto& [late, l] : door_rt)
    j.begin_object().field("answer_after_us", static_cast<std::int64_t>(late)).field("p50_us", l.p50).field("p99_us", l.p99).end_object();
  j.end_array();
  j.begin_array("costs");
  for (const Costs& k : costs) {
    j.begin_object()
        .field("setting", k.setting)
        .field("nop_p50_us", k.nop.p50)
        .field("nop_p99_us", k.nop.p99)
        .field("nop_max_us", k.nop.max)
        .field("tasks_per_s", k.tasks_per_s);
    if (k.after_park.count) j.field("after_park_p50_us", k.after_park.p50).field("after_park_max_us", k.after_park.max);
    if (k.on_stream.count)
      j.field("on_stream_p50_us", k.on_stream.p50).field("on_stream_p99_us", k.on_stream.p99);
    j.end_object();
  }
  j.end_array();
  return v.conclude(j, c.json);
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_sharing", gpuos::bench::bench_main, argc, argv); }
