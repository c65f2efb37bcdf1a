// Hot-patching: how fast a saved operator file serves, how long a generation switch pauses serving,
// what an alias switch costs, and whether switches under load lose or repeat tasks.
//
//   1. save -> first task on the new code, through the tool's own operator directory: an operator file
//      is saved (write + rename into the directory) that an OpsDir serves (tools/ops_cmd.hpp: the code of
//      `gpuos run --ops-dir`, its watcher with the tool's debounce, its reload thread); once the OpsDir
//      has loaded it, one task runs and its result is checked. Cold: content never built before (NVRTC
//      compile and nvJitLink link both run; NVRTC's precompiled header is warm after the first compile
//      of the process, which is reported on its own). Warm: content built before (both from the cache).
//   2. the serving pause of a generation switch under load (phase 4), as the submitting threads see it:
//      each keeps a window of tasks in flight and notes when it sees each of them complete; a switch's
//      pause is the largest gap between two consecutive completions one thread saw that overlaps the
//      switch's call. Beside it, the runtime's own figure (gpuos_generation.pause_ns: kernel stop
//      requested .. relaunched kernel serving) and its phases.
//   3. alias switch round trip: submit of the control task .. its completion (applied by the front end
//      at its turn), against a nop task's round trip, on an idle runtime.
//   4. 100 generation switches and 1,000 alias flips while threads submit tagging tasks through the
//      alias and directly: every task's output must show exactly one run (lost = 0, duplicated = 0),
//      completed == submitted, and the completion rate must stay >= 1 M tasks/s.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "bench/bench_common.hpp"
#include "common/wait.hpp"
#include "tools/ops_cmd.hpp"
#include "tools/tag_operator.hpp"

namespace gpuos::bench {
namespace {

namespace fs = std::filesystem;
using tools::tag_source;
using tools::TagArgs;

constexpr const char* kHelp =
    "usage: bench_hotpatch [--device N] [--reps N] [--switches N] [--flips N] [--threads T] [--json FILE]\n"
    "\n"
    "Hot-patching latency and correctness (see the top of bench/bench_hotpatch.cpp).\n"
    "Targets: save -> new code p50 <= 150 ms cold, <= 40 ms warm (through the tool's operator directory,\n"
    "its 20 ms debounce included); switch pause p99 <= 500 us as the submitting threads see it (the runtime's\n"
    "own figure beside it); alias switch round trip <= nop round trip + 10 us; >= 1 M tasks/s under load.\n"
    "Checks: no task lost, repeated or wrong under load; completed == submitted; none failed.\n"
    "Exit status: 0 every target met, 4 a target missed or not measured, 1 error, wrong result or hang,\n"
    "3 no device, 2 usage.\n"
    "\n"
    "  --reps N       saves measured per cache state (default 20)\n"
    "  --switches N   generation switches under load (default 100)\n"
    "  --flips N      alias flips under load (default 1000)\n"
    "  --threads T    submitting threads under load (default 4)\n"
    "  --batch N      tasks per submit under load, 1..64 (default 1)\n"
    "  --window N     tasks each submitting thread keeps in flight (default 256, at least --batch)\n"
    "  --only-load 1  diagnostics: skip phases 1-3 (their targets are then not measured)\n"
    "  --load-op OP   tag (default) or axpy (built-in) for the load\n"
    "  --jit 0|1      with axpy: switch to a linked generation first (default 1)\n"
    "  --hang-s S     report the phase and stats and exit 1 if the run takes longer (default 240)\n"
    "  --json FILE    result file (default bench_hotpatch.json)\n";

/// Targets.
// The warm target is the tool's debounce (a file must stay unchanged that long before it is read) plus
// 20 ms for reading, the cache hit, the link and the switch.
constexpr double kMaxColdMs = 150, kMaxWarmMs = tools::kOpsDirDebounceMs + 20.0, kMaxPauseP99Us = 500,
                 kMaxAliasExtraUs = 10, kMinLoadRate = 1e6;
/// A submitting thread keeps the gaps between completions of at least this long (shorter ones are
/// serving as usual; a switch's pause is hundreds of microseconds).
constexpr std::int64_t kGapRecordNs = 20'000;

void save(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.parent_path() / ("." + p.filename().string() + ".tmp");
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
  }
  fs::rename(tmp, p);  // rename into the directory: what editors and atomic writers do
}

double ms_since(std::int64_t t0) { return static_cast<double>(now_ns() - t0) * 1e-6; }

/// A gap between two consecutive completions one submitting thread saw (ns, host clock).
struct Gap {
  std::int64_t from, to;
};
/// The call of one generation switch, on the host clock.
struct SwitchCall {
  std::int64_t begin, end;
};

/// The pause of each switch as the submitting threads saw it: the largest gap that overlaps its call
/// (0 when none of kGapRecordNs or more did). `outside`: the largest gap that overlaps no switch.
std::vector<double> pauses_seen(const std::vector<std::vector<Gap>>& gaps, const std::vector<SwitchCall>& calls,
                                double& outside_us) {
  std::vector<double> seen(calls.size(), 0.0);
  outside_us = 0;
  for (const auto& per_thread : gaps)
    for (const Gap& g : per_thread) {
      const double us = static_cast<double>(g.to - g.from) * 1e-3;
      bool during = false;
      for (std::size_t i = 0; i < calls.size(); ++i)
        if (g.from < calls[i].end && g.to > calls[i].begin) {
          seen[i] = std::max(seen[i], us);
          during = true;
        }
      if (!during) outside_us = std::max(outside_us, us);
    }
  return seen;
}

int run(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  const int device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  const int reps = static_cast<int>(f.integer("--reps", 20, 2, 1000));
  const int switches = static_cast<int>(f.integer("--switches", 100, 0, 10000));
  const int flips = static_cast<int>(f.integer("--flips", 1000, 0, 1000000));
  const int hang_s = static_cast<int>(f.integer("--hang-s", 240, 1, 100000));
  const unsigned threads = static_cast<unsigned>(f.integer("--threads", 4, 1, 64));
  const size_t batch_size = static_cast<size_t>(f.integer("--batch", 1, 1, 64));
  const size_t window = static_cast<size_t>(f.integer("--window", 256, static_cast<std::int64_t>(batch_size), 1 << 16));
  // Diagnostics: --only-load 1 skips phases 1-3; --load-op axpy loads with the built-in axpy (y += x,
  // x = 1) instead of the tag operators, on the boot image unless --jit 1 first switches to a linked one.
  const bool only_load = f.integer("--only-load", 0, 0, 1) != 0;
  const std::string load_op = f.text("--load-op", "tag");
  const bool jit_first = f.integer("--jit", 1, 0, 1) != 0;
  const std::string json = f.text("--json", "bench_hotpatch.json");
  f.finish();

  DeviceContext dev(device);
  // A fresh compile cache and operator directory: "cold" means cold.
  const fs::path root = fs::temp_directory_path() / ("gpuos-bench-hotpatch-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "cache");
  fs::create_directories(root / "ops");
  ::setenv("GPUOS_CACHE_DIR", (root / "cache").c_str(), 1);
  Stream s;
  constexpr size_t kLoadPerThread = 1u << 22;
  DeviceBuffer probe(4096 * 4), load_out(size_t(threads) * kLoadPerThread * 4);
  const bool axpy_load = load_op == "axpy";
  DeviceBuffer ones(axpy_load ? size_t(threads) * kLoadPerThread * 4 : 4);
  if (axpy_load) {
    std::vector<float> one(size_t(threads) * kLoadPerThread, 1.0f);
    s.upload(ones.ptr(), one.data(), one.size() * 4);
  }
  std::printf("bench_hotpatch on %s (driver %d, %s)\n", dev.name.c_str(), dev.driver_version, gpuos_build_info());

  std::vector<double> first_compile_ms, cold_ms, warm_ms, alias_rt_us, nop_rt_us, pause_us, build_ms;
  std::vector<double> stop_us, load_us, launch_us, unload_us;  // the pause's phases
  std::vector<double> overlap_us;                              // the load's part before the pause
  std::vector<SwitchCall> calls;                               // each switch's call, host clock
  std::vector<std::vector<Gap>> gaps(threads);                 // per submitting thread
  std::uint32_t retired_max = 0;
  std::uint64_t lost = 0, doubled = 0, wrong = 0, load_tasks = 0, completed = 0, submitted = 0, failed = 0;
  double load_rate = 0, load_seconds = 0;
  std::uint64_t launches = 0;
  DeviceInfo info{};
  guarded("gpuos", [&] {
    Runtime rt(Options().with_device(device));
    info = rt.device_info();
    const fs::path file = root / "ops" / "tag.cu";
    std::vector<float> zero(4096, 0.0f);
    s.upload(probe.ptr(), zero.data(), zero.size() * 4);
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
      std::printf("HANG in phase '%s' after %d s\n", phase.load(), hang_s);
      std::fflush(stdout);
      const Stats st = rt.stats();
      std::printf("  submitted %llu completed %llu failed %llu heartbeat %llu launches %llu\n",
                  (unsigned long long)st.submitted, (unsigned long long)st.completed,
                  (unsigned long long)st.failed, (unsigned long long)st.heartbeat, (unsigned long long)st.launches);
      std::printf("  load phase: switches done %d, alias flips done %d\n", switches_done.load(), flips_done.load());
      std::fflush(stdout);
      std::printf("%s", rt.diagnose().c_str());
      std::fflush(stdout);
      std::fprintf(stderr, "bench_hotpatch: error: hung in phase '%s'\n", phase.load());
      std::_Exit(kExitError);
    });
    struct Join {
      std::atomic<bool>& f;
      std::thread& t;
      ~Join() { f.store(true); t.join(); }
    } join{finished, watchdog};
    unsigned version = 1;
    if (!only_load) {
      // 1. save -> first task on the new code, through the tool's operator directory.
      {
        gpuos::OpsDir ops(rt, (root / "ops").string(), tools::kOpsDirDebounceMs);
        int slot = 0;
        // One save: ms from the rename to the checked result of a task on the new code.
        auto save_and_serve = [&](unsigned v) {
          const std::uint64_t reloads = ops.stats().loads;
          const std::uint64_t failures = ops.stats().failures;
          const std::int64_t t0 = now_ns();
          save(file, tag_source("tag", v));
          if (!common::wait_until([&] { return ops.stats().loads != reloads || ops.stats().failures != failures; },
                                  common::Deadline::after(std::chrono::seconds(30)), common::kCompletionBackoff))
            throw std::runtime_error("the operator directory did not load a saved file within 30 s");
          if (ops.stats().failures != failures) throw std::runtime_error("a saved operator file did not load");
          const Ticket t = rt.submit(Task::make(rt.op_id("tag"), 1, TagArgs{probe.as<float>(slot), 0}));
          rt.wait(t);
          float got = 0;
          s.download(&got, probe.ptr() + size_t(slot) * 4, 4);
          ++slot;
          const double ms = ms_since(t0);
          if (got != static_cast<float>(v)) throw std::runtime_error("a task ran the wrong version");
          return ms;
        };
        first_compile_ms.push_back(save_and_serve(version));
        for (int i = 0; i < reps; ++i) cold_ms.push_back(save_and_serve(version += 2));
        // Warm: alternate between two contents built above.
        for (int i = 0; i < reps; ++i) warm_ms.push_back(save_and_serve(i % 2 ? version : version - 2));
      }
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
      std::printf("phase 3 done\n");
    }
    phase = "switches under load";
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
    std::printf("load: %s tasks, batch %zu, %zu in flight per thread, generation %llu\n", load_op.c_str(), batch_size,
                window, static_cast<unsigned long long>(rt.generation().number));
    const Stats before = rt.stats();
    std::atomic<bool> stop{false};
    std::vector<size_t> counts(threads, 0);
    std::vector<std::string> errors(threads);
    std::vector<std::thread> th;
    const std::int64_t l0 = now_ns();
    for (unsigned t = 0; t < threads; ++t)
      th.emplace_back([&, t] {
        try {
          std::vector<Task> batch(batch_size);
          std::deque<Ticket> in_flight;
          std::int64_t last_seen = now_ns();
          // Every completion this thread sees, in ticket order; a long gap since the previous one is kept.
          auto seen = [&] {
            const std::int64_t now = now_ns();
            if (now - last_seen >= kGapRecordNs) gaps[t].push_back({last_seen, now});
            last_seen = now;
            in_flight.pop_front();
          };
          size_t k = 0;
          float* base = load_out.as<float>(size_t(t) * kLoadPerThread);
          while (!stop.load(std::memory_order_relaxed) && k + batch_size <= kLoadPerThread) {
            if (in_flight.size() + batch_size <= window) {
              for (size_t b = 0; b < batch_size; ++b) {
                const size_t e = k + b;
                batch[b] = axpy_load ? ops::axpy(base + e, 1.0f, ones.as<float>(size_t(t) * kLoadPerThread + e), 1)
                                     : Task::make(e % 2 ? alias_id : direct_id, 1, TagArgs{base + e, 0});
              }
              const Ticket first = batch_size == 1 ? rt.submit(batch[0]) : rt.submit_batch(batch);
              for (size_t b = 0; b < batch_size; ++b) in_flight.push_back(first + b);
              k += batch_size;
            }
            while (!in_flight.empty() && rt.wait(in_flight.front(), std::chrono::nanoseconds(0))) seen();
          }
          while (!in_flight.empty()) {
            rt.wait(in_flight.front());
            seen();
          }
          counts[t] = k;
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    std::thread flipper([&] {
      guarded("alias flips", [&] {
        for (int i = 0; i < flips && !stop.load(); ++i) {
          (i % 2) ? rt.alias_rollback("tagx") : rt.alias_set("tagx", "tag_b");
          flips_done.store(i + 1);
          std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
      });
    });
    // Generation switches: tag alternates between versions 1 and 5 (each a new generation; built once,
    // then from the cache). Odd versions: a doubled task shows an even value.
    for (int i = 0; i < switches; ++i) {
      const std::int64_t begin = now_ns();
      const auto g = rt.load_operator_source(file.string(), tag_source("tag", i % 2 ? 1 : 5));
      calls.push_back({begin, now_ns()});
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
    for (const std::string& e : errors)
      if (!e.empty()) throw std::runtime_error("a submitting thread failed: " + e);
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

  double outside_us = 0;
  const std::vector<double> seen_us = pauses_seen(gaps, calls, outside_us);
  const auto unseen = static_cast<std::uint64_t>(std::count(seen_us.begin(), seen_us.end(), 0.0));
  const auto first = LatencySummary::of(first_compile_ms), cold = LatencySummary::of(cold_ms),
             warm = LatencySummary::of(warm_ms), pause = LatencySummary::of(pause_us),
             seen = LatencySummary::of(seen_us), alias = LatencySummary::of(alias_rt_us),
             nop = LatencySummary::of(nop_rt_us), build = LatencySummary::of(build_ms);
  const double alias_extra = alias.p50 - nop.p50;
  std::printf("save -> first task on new code, through the tool's operator directory (debounce %u ms): first "
              "compile of the process %.1f ms\n",
              tools::kOpsDirDebounceMs, first.p50);
  std::printf("  cold (compile + link): p50 %.1f ms, p99 %.1f ms\n", cold.p50, cold.p99);
  std::printf("  warm (cached):         p50 %.1f ms, p99 %.1f ms\n", warm.p50, warm.p99);
  std::printf("generation switch pause under load, as the submitting threads saw it (per switch, the largest gap "
              "between two completions one thread saw during the switch's call): p50 %.0f us, p99 %.0f us, max %.0f "
              "us over %zu switches\n",
              seen.p50, seen.p99, seen.max, seen_us.size());
  if (unseen)
    std::printf("  %llu switches with no gap of %lld us or more seen during their call\n",
                static_cast<unsigned long long>(unseen), static_cast<long long>(kGapRecordNs / 1000));
  std::printf("  the runtime's own figure (stop requested .. relaunched kernel serving): p50 %.0f us, p99 %.0f us, "
              "max %.0f us\n",
              pause.p50, pause.p99, pause.max);
  std::printf("  largest gap between completions outside the switches: %.0f us (the host's noise)\n", outside_us);
  {
    const auto st = LatencySummary::of(stop_us), ld = LatencySummary::of(load_us), la = LatencySummary::of(launch_us);
    const auto un = LatencySummary::of(unload_us), ov = LatencySummary::of(overlap_us);
    std::printf("  phases: stop p50 %.0f / p99 %.0f us, load p50 %.0f / p99 %.0f us, unload p50 %.0f / p99 %.0f us, "
                "launch p50 %.0f / p99 %.0f us\n",
                st.p50, st.p99, ld.p50, ld.p99, un.p50, un.p99, la.p50, la.p99);
    std::printf("  before the pause, the load overlapped serving for p50 %.0f us; up to %u retired images kept "
                "loaded\n",
                ov.p50, retired_max);
  }
  std::printf("  build of those generations: p50 %.1f ms\n", build.p50);
  std::printf("alias switch round trip p50 %.1f us, p99 %.1f us; nop task p50 %.1f us\n", alias.p50, alias.p99,
              nop.p50);
  std::printf("load: %d generation switches, %d alias flips, %llu tasks in %.2f s\n", switches, flips,
              static_cast<unsigned long long>(load_tasks), load_seconds);

  Verdicts v("bench_hotpatch");
  const std::string skipped = "--only-load 1 skipped this phase";
  if (cold_ms.empty()) {
    v.not_measured("save -> new code, cold, p50 ms", "<= " + fmt("%g", kMaxColdMs), skipped);
    v.not_measured("save -> new code, warm, p50 ms", "<= " + fmt("%g", kMaxWarmMs), skipped);
  } else {
    v.target("save -> new code, cold, p50 ms", cold.p50, "<= " + fmt("%g", kMaxColdMs), cold.p50 <= kMaxColdMs,
             "debounce " + std::to_string(tools::kOpsDirDebounceMs) + " ms included", "%.1f");
    v.target("save -> new code, warm, p50 ms", warm.p50, "<= " + fmt("%g", kMaxWarmMs), warm.p50 <= kMaxWarmMs,
             "debounce " + std::to_string(tools::kOpsDirDebounceMs) + " ms included", "%.1f");
  }
  if (seen_us.empty())
    v.not_measured("switch pause under load as the submitters saw it, p99 us", "<= " + fmt("%g", kMaxPauseP99Us),
                   "--switches 0");
  else
    v.target("switch pause under load as the submitters saw it, p99 us", seen.p99, "<= " + fmt("%g", kMaxPauseP99Us),
             seen.p99 <= kMaxPauseP99Us, "the runtime's own figure p99 " + fmt("%.0f", pause.p99) + " us", "%.0f");
  if (alias_rt_us.empty())
    v.not_measured("alias switch round trip - nop round trip, p50 us", "<= " + fmt("%g", kMaxAliasExtraUs), skipped);
  else
    v.target("alias switch round trip - nop round trip, p50 us", alias_extra, "<= " + fmt("%g", kMaxAliasExtraUs),
             alias_extra <= kMaxAliasExtraUs, "", "%.1f");
  v.target("M tasks/s completed under load", load_rate * 1e-6, ">= " + fmt("%g", kMinLoadRate * 1e-6),
           load_rate >= kMinLoadRate, "", "%.2f");
  v.check("every task under load ran exactly once, on a version it may run", lost == 0 && doubled == 0 && wrong == 0,
          "lost " + std::to_string(lost) + ", duplicated " + std::to_string(doubled) + ", wrong " +
              std::to_string(wrong));
  v.check("completed == submitted, none failed", completed == submitted && failed == 0,
          "completed " + std::to_string(completed) + " of " + std::to_string(submitted) + ", failed " +
              std::to_string(failed));

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_hotpatch", dev);
  write_grid(j, info);
  j.field("reps", reps).field("debounce_ms", tools::kOpsDirDebounceMs).field("save_through", "tools::OpsDir");
  j.field("kernel_object", std::getenv("GPUOS_KERNEL_LTO") ? "lto-ir" : "sass");
  first.write(j, "first_compile_of_process_ms", false);
  cold.write(j, "save_to_new_code_cold_ms", false);
  warm.write(j, "save_to_new_code_warm_ms", false);
  seen.write(j, "switch_gap_observed_us", false);
  j.field("switches_unseen", unseen).field("gap_outside_switches_max_us", outside_us);
  j.field("gap_record_min_us", static_cast<double>(kGapRecordNs) * 1e-3);
  pause.write(j, "switch_pause_us", false);  // the runtime's own figure
  LatencySummary::of(stop_us).write(j, "switch_stop_us", false);
  LatencySummary::of(load_us).write(j, "switch_load_us", false);
  LatencySummary::of(launch_us).write(j, "switch_launch_us", false);
  LatencySummary::of(unload_us).write(j, "switch_unload_us", false);
  LatencySummary::of(overlap_us).write(j, "switch_load_overlap_us", false);
  j.array("switch_gap_observed_us_raw", seen_us).array("switch_pause_us_raw", pause_us);
  j.field("retired_images_max", static_cast<std::uint64_t>(retired_max));
  build.write(j, "switch_build_ms", false);
  alias.write(j, "alias_round_trip_us", false);
  nop.write(j, "nop_round_trip_us", false);
  j.begin_object("load")
      .field("generation_switches", switches)
      .field("alias_flips", flips)
      .field("threads", threads)
      .field("batch", static_cast<std::uint64_t>(batch_size))
      .field("window", static_cast<std::uint64_t>(window))
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
      .field("cold_p50_ms", cold.p50).field("cold_pass", !cold_ms.empty() && cold.p50 <= kMaxColdMs)
      .field("warm_p50_ms", warm.p50).field("warm_pass", !warm_ms.empty() && warm.p50 <= kMaxWarmMs)
      .field("pause_observed_p99_us", seen.p99).field("pause_runtime_p99_us", pause.p99)
      .field("pause_pass", !seen_us.empty() && seen.p99 <= kMaxPauseP99Us)
      .field("alias_extra_us", alias_extra).field("alias_pass", !alias_rt_us.empty() && alias_extra <= kMaxAliasExtraUs)
      .field("load_mtasks_per_s", load_rate * 1e-6).field("load_pass", v.checks_passed() && load_rate >= kMinLoadRate)
      .end_object();
  return v.conclude(j, json);
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_hotpatch", gpuos::bench::run, argc, argv); }
