// Hot-patching: how fast a saved operator file serves, how long a generation switch pauses serving,
// what an alias switch costs, and whether switches under load lose or repeat tasks.
//
//   1. save -> first task on the new code: an operator file is saved (write + rename into an operator
//      directory), the directory watcher reports it (jit/watcher.hpp), the runtime compiles, links and
//      switches, one task runs and its result is checked. Cold: content never built before (NVRTC
//      compile and nvJitLink link both run; NVRTC's precompiled header is warm after the first compile
//      of the process, which is reported on its own). Warm: content built before (both from the cache).
//   2. the serving pause of a generation switch (kernel stop requested .. relaunched kernel serving),
//      measured by the runtime on every switch of phase 4, under load.
//   3. alias switch round trip: submit of the control task .. its completion (applied by the front end
//      at its turn), against a nop task's round trip, on an idle runtime.
//   4. 100 generation switches and 1,000 alias flips while threads submit tagging tasks through the
//      alias and directly (batches of 64): every task's output must show exactly one run (lost = 0,
//      duplicated = 0), completed == submitted, and the submit rate must stay >= 1 M tasks/s.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "bench/bench_common.hpp"
#include "host/watcher.hpp"

namespace gpuos::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHelp =
    "usage: bench_hotpatch [--device N] [--reps N] [--switches N] [--flips N] [--threads T] [--json FILE]\n"
    "\n"
    "Hot-patching latency and correctness (see the top of bench/bench_hotpatch.cpp).\n"
    "  --reps N       saves measured per cache state (default 20)\n"
    "  --switches N   generation switches under load (default 100)\n"
    "  --flips N      alias flips under load (default 1000)\n"
    "  --threads T    submitting threads under load (default 4)\n"
    "  --batch N      tasks per submit under load, 1..64 (default 1)\n"
    "  --only-load 1  diagnostics: skip phases 1-3\n"
    "  --load-op OP   tag (default) or axpy (built-in) for the load\n"
    "  --jit 0|1      with axpy: switch to a linked generation first (default 1)\n"
    "  --debounce MS  watcher quiet period (default 2)\n"
    "  --hang-s S     report the phase and stats and exit 3 if the run takes longer (default 240)\n"
    "  --json FILE    result file (default bench_hotpatch.json)\n";

struct TagArgs {
  float* out;
  unsigned long long pad;
};

/// out[0] += version: a task run twice shows 2 * version (even: versions are odd), a lost one 0.
std::string tag_source(const std::string& name, unsigned version) {
  return "#include \"gpuos/op.cuh\"\n"
         "struct TagArgs { float* out; unsigned long long pad; };\n"
         "__device__ void " + name + "_tile(const TagArgs& a, const gpuos::TileCtx&) {\n"
         "  if (threadIdx.x == 0) *a.out += " + std::to_string(version) + ".0f;\n"
         "}\n"
         "GPUOS_OPERATOR(" + name + ", TagArgs, " + name + "_tile)\n";
}

void save(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.parent_path() / ("." + p.filename().string() + ".tmp");
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
  }
  fs::rename(tmp, p);  // rename into the directory: what editors and atomic writers do
}

double ms_since(std::int64_t t0) { return static_cast<double>(now_ns() - t0) * 1e-6; }

int run(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  const int device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  const int reps = static_cast<int>(f.integer("--reps", 20, 2, 1000));
  const int switches = static_cast<int>(f.integer("--switches", 100, 0, 10000));
  const int flips = static_cast<int>(f.integer("--flips", 1000, 0, 1000000));
  const int hang_s = static_cast<int>(f.integer("--hang-s", 240, 1, 100000));
  const unsigned threads = static_cast<unsigned>(f.integer("--threads", 4, 1, 64));
  const size_t batch_size = static_cast<size_t>(f.integer("--batch", 1, 1, 64));
  // Diagnostics: --only-load 1 skips phases 1-3; --load-op axpy loads with the built-in axpy (y += x,
  // x = 1) instead of the tag operators, on the boot image unless --jit 1 first switches to a linked one.
  const bool only_load = f.integer("--only-load", 0, 0, 1) != 0;
  const std::string load_op = f.text("--load-op", "tag");
  const bool jit_first = f.integer("--jit", 1, 0, 1) != 0;
  const int debounce = static_cast<int>(f.integer("--debounce", 2, 0, 1000));
  const std::string json = f.text("--json", "bench_hotpatch.json");
  f.finish();

  // A fresh compile cache and operator directory: "cold" means cold.
  const fs::path root = fs::temp_directory_path() / ("gpuos-bench-hotpatch-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "cache");
  fs::create_directories(root / "ops");
  ::setenv("GPUOS_CACHE_DIR", (root / "cache").c_str(), 1);

  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  DeviceContext dev(device);
  Stream s;
  constexpr size_t kLoadPerThread = 1u << 22;
  DeviceArray probe(4096 * 4), load_out(size_t(threads) * kLoadPerThread * 4);
  const bool axpy_load = load_op == "axpy";
  DeviceArray ones(axpy_load ? size_t(threads) * kLoadPerThread * 4 : 4);
  if (axpy_load) {
    std::vector<float> one(size_t(threads) * kLoadPerThread, 1.0f);
    s.upload(ones.ptr(), one.data(), one.size() * 4);
  }
  std::printf("bench_hotpatch on %s (driver %d, %s)\n", dev.name.c_str(), dev.driver_version, gpuos_build_info());

  std::vector<double> first_compile_ms, cold_ms, warm_ms, alias_rt_us, nop_rt_us, pause_us, build_ms;
  std::vector<double> stop_us, load_us, launch_us, unload_us;  // the pause's phases
  std::vector<double> overlap_us;                              // the load's part before the pause
  std::uint32_t retired_max = 0;
  std::uint64_t lost = 0, doubled = 0, wrong = 0, load_tasks = 0, completed = 0, submitted = 0, failed = 0;
  double load_rate = 0, load_seconds = 0;
  std::uint64_t launches = 0;
  DeviceInfo info{};
  guarded("gpuos", [&] {
    Runtime rt;
    info = rt.device_info();
    detail::WatchOptions wo;
    wo.debounce = std::chrono::milliseconds(debounce);
    wo.report_existing = false;
    detail::Watcher w(root / "ops", wo);
    const fs::path file = root / "ops" / "tag.cu";
    std::vector<float> zero(4096, 0.0f);
    s.upload(probe.ptr(), zero.data(), zero.size() * 4);
    int slot = 0;
    // One save: returns ms from the rename to the checked result of a task on the new code.
    auto save_and_serve = [&](unsigned version) {
      const std::int64_t t0 = now_ns();
      save(file, tag_source("tag", version));
      for (;;) {
        auto evs = w.poll(std::chrono::milliseconds(1000));
        if (evs.empty()) throw std::runtime_error("the watcher reported no event within 1 s");
        if (evs.back().path == file) break;
      }
      rt.load_operator_file(file.string());
      const Ticket t = rt.submit(Task::make(rt.op_id("tag"), 1, TagArgs{probe.as<float>(slot), 0}));
      rt.wait(t);
      float got = 0;
      s.download(&got, probe.ptr() + size_t(slot) * 4, 4);
      ++slot;
      const double ms = ms_since(t0);
      if (got != static_cast<float>(version)) throw std::runtime_error("a task ran the wrong version");
      return ms;
    };
    // A hang (a switch that never finishes, tasks that never complete) ends the run with a report.
    std::atomic<const char*> phase{"save -> new code"};
    std::atomic<int> switches_done{0}, flips_done{0};
    std::atomic<bool> finished{false};
    std::thread watchdog([&] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(hang_s);
      while (!finished.load() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (finished.load()) return;
      // The phase first, on its own: should anything below block, the report still says where it hung.
      std::printf("HANG in phase '%s'\n", phase.load());
      std::fflush(stdout);
      const Stats st = rt.stats();
      std::printf("  submitted %llu completed %llu failed %llu heartbeat %llu launches %llu\n",
                  (unsigned long long)st.submitted, (unsigned long long)st.completed,
                  (unsigned long long)st.failed, (unsigned long long)st.heartbeat, (unsigned long long)st.launches);
      std::printf("  load phase: switches done %d, alias flips done %d\n", switches_done.load(), flips_done.load());
      std::fflush(stdout);
      std::printf("%s", rt.diagnose().c_str());
      std::fflush(stdout);
      std::_Exit(3);
    });
    struct Join {
      std::atomic<bool>& f;
      std::thread& t;
      ~Join() { f.store(true); t.join(); }
    } join{finished, watchdog};
    // 1. save -> first task on the new code.
    unsigned version = 1;
    if (!only_load) {
    first_compile_ms.push_back(save_and_serve(version));
    for (int i = 0; i < reps; ++i) cold_ms.push_back(save_and_serve(version += 2));
    // Warm: alternate between two contents built above.
    for (int i = 0; i < reps; ++i) warm_ms.push_back(save_and_serve(i % 2 ? version : version - 2));

    std::printf("phase 1 done: cold p50 %.1f ms\n", LatencySummary::of(cold_ms).p50);
    phase = "alias round trips";
    // 3. alias and nop round trips on an idle runtime.
    rt.load_operator_source("tag_b.cu", tag_source("tag_b", 1));
    rt.alias_set("tagx", "tag");
    for (int i = 0; i < 2000; ++i) {
      std::int64_t t0 = now_ns();
      const Ticket a = (i % 2) ? rt.alias_rollback("tagx") : rt.alias_set("tagx", "tag_b");
      rt.wait(a);
      if (i >= 100) alias_rt_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
      t0 = now_ns();
      rt.wait(rt.submit(ops::nop()));
      if (i >= 100) nop_rt_us.push_back(static_cast<double>(now_ns() - t0) * 1e-3);
    }

    phase = "switches under load";
    std::printf("phase 3 done\n");
    }  // !only_load
    if (only_load && !axpy_load) {
      rt.load_operator_source("tag_b.cu", tag_source("tag_b", 1));
      rt.load_operator_source(file.string(), tag_source("tag", 1));
      rt.alias_set("tagx", "tag");
    }
    if (only_load && axpy_load && jit_first) rt.load_operator_source("tag_b.cu", tag_source("tag_b", 1));
    // 4. switches under load.
    std::vector<float> zeros(size_t(threads) * kLoadPerThread, 0.0f);
    s.upload(load_out.ptr(), zeros.data(), zeros.size() * 4);
    if (!axpy_load) {
      rt.load_operator_source(file.string(), tag_source("tag", 1));
      rt.load_operator_source("tag_b.cu", tag_source("tag_b", 3));
    }
    const uint32_t alias_id = axpy_load ? 0 : rt.op_id("tagx");
    const uint32_t direct_id = axpy_load ? 0 : rt.op_id("tag");
    std::printf("load: %s tasks, batch %zu, generation %llu\n", load_op.c_str(), batch_size,
                static_cast<unsigned long long>(rt.generation().number));
    const Stats before = rt.stats();
    std::atomic<bool> stop{false};
    std::vector<size_t> counts(threads, 0);
    std::vector<std::thread> th;
    const std::int64_t l0 = now_ns();
    for (unsigned t = 0; t < threads; ++t)
      th.emplace_back([&, t] {
        const size_t kBatch = batch_size;
        std::vector<Task> batch(kBatch);
        size_t k = 0;
        float* base = load_out.as<float>(size_t(t) * kLoadPerThread);
        while (!stop.load(std::memory_order_relaxed) && k + kBatch <= kLoadPerThread) {
          for (size_t b = 0; b < kBatch; ++b)
            batch[b] = axpy_load ? ops::axpy(base + k + b, 1.0f, ones.as<float>(size_t(t) * kLoadPerThread + k + b), 1)
                                 : Task::make((k + b) % 2 ? alias_id : direct_id, 1, TagArgs{base + k + b, 0});
          if (kBatch == 1)
            rt.submit(batch[0]);
          else
            rt.submit_batch(batch);
          k += kBatch;
        }
        counts[t] = k;
      });
    std::thread flipper([&] {
      for (int i = 0; i < flips && !stop.load(); ++i) {
        (i % 2) ? rt.alias_rollback("tagx") : rt.alias_set("tagx", "tag_b");
        flips_done.store(i + 1);
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
    // Generation switches: tag alternates between versions 1 and 5 (each a new generation; built once,
    // then from the cache). Odd versions: a doubled task shows an even value.
    for (int i = 0; i < switches; ++i) {
      const auto g = rt.load_operator_source(file.string(), tag_source("tag", i % 2 ? 1 : 5));
      pause_us.push_back(static_cast<double>(g.pause_ns) * 1e-3);
      stop_us.push_back(static_cast<double>(g.stop_ns) * 1e-3);
      load_us.push_back(static_cast<double>(g.load_ns) * 1e-3);
      launch_us.push_back(static_cast<double>(g.launch_ns) * 1e-3);
      unload_us.push_back(static_cast<double>(g.unload_ns) * 1e-3);
      overlap_us.push_back(static_cast<double>(g.overlap_ns) * 1e-3);
      retired_max = std::max(retired_max, g.retired);
      build_ms.push_back(static_cast<double>(g.build_ns) * 1e-6);
      switches_done.store(i + 1);
    }
    phase = "waiting for the alias flips";
    flipper.join();
    stop.store(true);
    phase = "joining the submitters";
    for (auto& t : th) t.join();
    load_seconds = static_cast<double>(now_ns() - l0) * 1e-9;
    phase = "draining";
    rt.drain();
    const Stats after = rt.stats();
    for (size_t c : counts) load_tasks += c;
    submitted = after.submitted - before.submitted;
    completed = after.completed - before.completed;
    failed = after.failed - before.failed;
    launches = after.launches;
    load_rate = static_cast<double>(load_tasks) / load_seconds;
    std::vector<float> h(zeros.size());
    s.download(h.data(), load_out.ptr(), h.size() * 4);
    for (unsigned t = 0; t < threads; ++t)
      for (size_t k = 0; k < counts[t]; ++k) {
        const float v = h[size_t(t) * kLoadPerThread + k];
        if (v == 0.0f) ++lost;
        else if (v == 1.0f || v == 3.0f || v == 5.0f) continue;
        else if (v == 2.0f || v == 6.0f || v == 10.0f) ++doubled;
        else ++wrong;
      }
    // Shut down inside the run, so that a failure at the end (the idle unload of retired images, the
    // stop) is reported with the runtime's diagnosis instead of passing unseen.
    phase = "shutting down";
    rt.shutdown();
    if (const std::string d = rt.diagnose(); d.find("state=faulted") != std::string::npos)
      throw std::runtime_error("the runtime faulted:\n" + d);
  });
  fs::remove_all(root);

  const auto first = LatencySummary::of(first_compile_ms), cold = LatencySummary::of(cold_ms),
             warm = LatencySummary::of(warm_ms), pause = LatencySummary::of(pause_us),
             alias = LatencySummary::of(alias_rt_us), nop = LatencySummary::of(nop_rt_us),
             build = LatencySummary::of(build_ms);
  const bool cold_ok = cold.p50 <= 150, warm_ok = warm.p50 <= 20, pause_ok = pause.p99 <= 500;
  const double alias_extra = alias.p50 - nop.p50;
  const bool alias_ok = alias_extra <= 10;
  const bool load_ok = lost == 0 && doubled == 0 && wrong == 0 && completed == submitted && failed == 0;
  std::printf("save -> first task on new code: first compile of the process %.1f ms\n", first.p50);
  std::printf("  cold (compile + link): p50 %.1f ms, p99 %.1f ms (target p50 <= 150: %s)\n", cold.p50, cold.p99, verdict(cold_ok));
  std::printf("  warm (cached):         p50 %.1f ms, p99 %.1f ms (target p50 <= 20: %s)\n", warm.p50, warm.p99, verdict(warm_ok));
  std::printf("generation switch pause under load: p50 %.0f us, p99 %.0f us, max %.0f us (target p99 <= 500: %s)\n",
              pause.p50, pause.p99, pause.max, verdict(pause_ok));
  {
    const auto st = LatencySummary::of(stop_us), ld = LatencySummary::of(load_us), la = LatencySummary::of(launch_us);
    const auto un = LatencySummary::of(unload_us), ov = LatencySummary::of(overlap_us);
    std::printf("  phases: stop p50 %.0f / p99 %.0f us, load p50 %.0f / p99 %.0f us, unload p50 %.0f / p99 %.0f us, "
                "launch p50 %.0f / p99 %.0f us\n",
                st.p50, st.p99, ld.p50, ld.p99, un.p50, un.p99, la.p50, la.p99);
    std::printf("  before the pause, the load overlapped serving for p50 %.0f us; up to %u retired images kept loaded\n",
                ov.p50, retired_max);
  }
  std::printf("  build of those generations: p50 %.1f ms\n", build.p50);
  std::printf("alias switch round trip p50 %.1f us, p99 %.1f us; nop task p50 %.1f us: +%.1f us (target <= 10: %s)\n",
              alias.p50, alias.p99, nop.p50, alias_extra, verdict(alias_ok));
  std::printf("load: %d generation switches, %d alias flips, %llu tasks in %.2f s = %.2f M tasks/s (target >= 1: %s)\n",
              switches, flips, static_cast<unsigned long long>(load_tasks), load_seconds, load_rate * 1e-6,
              verdict(load_rate >= 1e6));
  std::printf("  lost %llu, duplicated %llu, wrong %llu, completed %llu of %llu submitted, failed %llu: %s\n",
              static_cast<unsigned long long>(lost), static_cast<unsigned long long>(doubled),
              static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(completed),
              static_cast<unsigned long long>(submitted), static_cast<unsigned long long>(failed), verdict(load_ok));

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_hotpatch", dev);
  write_grid(j, info);
  j.field("reps", reps).field("debounce_ms", debounce).field("kernel_object", std::getenv("GPUOS_KERNEL_LTO") ? "lto-ir" : "sass");
  first.write(j, "first_compile_of_process_ms", false);
  cold.write(j, "save_to_new_code_cold_ms", false);
  warm.write(j, "save_to_new_code_warm_ms", false);
  pause.write(j, "switch_pause_us", false);
  LatencySummary::of(stop_us).write(j, "switch_stop_us", false);
  LatencySummary::of(load_us).write(j, "switch_load_us", false);
  LatencySummary::of(launch_us).write(j, "switch_launch_us", false);
  LatencySummary::of(unload_us).write(j, "switch_unload_us", false);
  LatencySummary::of(overlap_us).write(j, "switch_load_overlap_us", false);
  j.field("retired_images_max", static_cast<std::uint64_t>(retired_max));
  build.write(j, "switch_build_ms", false);
  alias.write(j, "alias_round_trip_us", false);
  nop.write(j, "nop_round_trip_us", false);
  j.begin_object("load")
      .field("generation_switches", switches)
      .field("alias_flips", flips)
      .field("threads", threads)
      .field("batch", static_cast<std::uint64_t>(batch_size))
      .field("tasks", load_tasks)
      .field("seconds", load_seconds)
      .field("tasks_per_s", load_rate)
      .field("lost", lost)
      .field("duplicated", doubled)
      .field("wrong", wrong)
      .field("submitted", submitted)
      .field("completed", completed)
      .field("failed", failed)
      .field("launches", launches)
      .end_object();
  j.begin_object("summary")
      .field("cold_p50_ms", cold.p50).field("cold_pass", cold_ok)
      .field("warm_p50_ms", warm.p50).field("warm_pass", warm_ok)
      .field("pause_p99_us", pause.p99).field("pause_pass", pause_ok)
      .field("alias_extra_us", alias_extra).field("alias_pass", alias_ok)
      .field("load_mtasks_per_s", load_rate * 1e-6).field("load_pass", load_ok && load_rate >= 1e6)
      .end_object();
  j.end_object();
  save_json(j, json);
  return load_ok ? 0 : 1;
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run(argc, argv); }
