// Sharing the GPU with other CUDA code in the process (gpuos_options slice_us, park_us): the driver
// calls that wait for an idle device (a context synchronization, a free, a module load) return while
// gpuos serves load, and an idle runtime leaves the GPU and comes back for the next task. The limits
// here are watchdogs (a call that never returns ends the process with the runtime's report), not speed
// checks: what the calls cost is measured by bench/bench_sharing.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "host/cu_check.hpp"
#include "host/driver.hpp"
#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

namespace {

/// Runs `f` on a thread of its own with the primary context current; returns its time in ms. A call
/// still running after `limit` fails the test with the runtime's report and ends the process (a thread
/// blocked in the driver cannot be joined).
double returns_within(Runtime& rt, const char* what, std::chrono::seconds limit, const std::function<void()>& f) {
  std::packaged_task<double()> task([&] {
    test::use_device();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  });
  std::future<double> done = task.get_future();
  std::thread th(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    FAIL_CHECK(what << " did not return within " << limit.count() << " s; runtime state:\n" << rt.diagnose());
    std::fflush(nullptr);
    std::_Exit(1);
  }
  th.join();
  const double ms = done.get();
  MESSAGE(what << ": " << ms << " ms");
  return ms;
}

/// Waits until gpuos_diagnose says the kernel is parked (the monitor's park after park_us idle).
bool parked_within(Runtime& rt, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (rt.diagnose().find("state=parked") != std::string::npos) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

}  // namespace

TEST_CASE("an idle runtime leaves the GPU and comes back for the next task") {
  constexpr size_t n = 4096;
  test::DeviceBuffer x(n), y(n);
  x.upload(std::vector<float>(n, 1.0f));
  y.upload(std::vector<float>(n, 0.0f));
  Runtime rt(Options().with_residency(0, 500));
  for (int round = 1; round <= 5; ++round) {
    REQUIRE(parked_within(rt, 5000ms));
    const uint64_t launches = rt.stats().launches;
    // Off the GPU: a context synchronization does not wait for anything of gpuos.
    returns_within(rt, "cuCtxSynchronize while parked", 30s, [] { GPUOS_CU_TRY(detail::drv().cuCtxSynchronize(nullptr)); });
    // The next task launches the kernel again and runs.
    const Ticket t = rt.submit(ops::axpy(y.get(), 1.0f, x.get(), n));
    REQUIRE(rt.wait(t, 30s));
    CHECK(rt.stats().launches == launches + 1);
    const std::vector<float> h = y.download();
    CHECK(std::count(h.begin(), h.end(), static_cast<float>(round)) == static_cast<long>(n));
  }
  // A suspend while parked keeps it off the GPU; a task submitted meanwhile waits for the resume.
  REQUIRE(parked_within(rt, 5000ms));
  rt.suspend();
  const Ticket t = rt.submit(ops::axpy(y.get(), 1.0f, x.get(), n));
  CHECK_FALSE(rt.wait(t, 100ms));
  CHECK(rt.diagnose().find("state=suspended") != std::string::npos);
  rt.resume();
  REQUIRE(rt.wait(t, 30s));
  const std::vector<float> h = y.download();
  CHECK(std::count(h.begin(), h.end(), 6.0f) == static_cast<long>(n));
  const std::string report = rt.diagnose();
  INFO(report);
  CHECK(report.find("invariant violated") == std::string::npos);
}

TEST_CASE("driver calls that wait for an idle device return while gpuos serves load; no task lost") {
  constexpr size_t kPerBatch = 64, kCounters = 1 << 22;
  test::ExactlyOnce once(kCounters);
  support::DeviceBuffer out(256 * sizeof(std::uint32_t));
  Runtime rt(Options().with_sm_budget(16));  // the default slice and park
  std::atomic<bool> stop{false};
  std::atomic<size_t> next{0};
  std::atomic<bool> timed_out{false};
  std::thread load([&] {
    // Batches of tasks, each counter incremented once, until told to stop or the counters run out.
    std::vector<Task> batch;
    while (!stop.load() && next.load() + kPerBatch <= kCounters) {
      batch.clear();
      for (size_t i = 0; i < kPerBatch; ++i) batch.push_back(once.task(next.load() + i));
      const Ticket first = rt.submit_batch(batch);
      if (!rt.wait(first + kPerBatch - 1, 60s)) {
        timed_out.store(true);
        return;
      }
      next += kPerBatch;
    }
  });
  std::this_thread::sleep_for(20ms);
  // Whether a batch completed since `before`, waiting up to `grace` for one. Under a sanitizer
  // (GPUOS_TEST_SCALE > 1) batches complete hundreds of times slower: the grace is what 20 ms becomes
  // there, none at full speed.
  const auto grace = test::slowed(20ms) - 20ms;
  auto progressed = [&](size_t before) {
    const auto until = std::chrono::steady_clock::now() + grace;
    while (next.load() <= before && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
    return next.load() > before;
  };
  size_t before = next.load();
  returns_within(rt, "cuCtxSynchronize under load", 60s, [] { GPUOS_CU_TRY(detail::drv().cuCtxSynchronize(nullptr)); });
  returns_within(rt, "cuMemAlloc + cuMemFree of 1 MiB under load", 60s, [] {
    CUdeviceptr p = 0;
    GPUOS_CU_TRY(detail::drv().cuMemAlloc(&p, 1 << 20));
    GPUOS_CU_TRY(detail::drv().cuMemFree(p));
  });
  returns_within(rt, "cuMemAlloc + cuMemFree of 1 GiB under load", 60s, [] {
    CUdeviceptr p = 0;
    GPUOS_CU_TRY(detail::drv().cuMemAlloc(&p, 1ull << 30));
    GPUOS_CU_TRY(detail::drv().cuMemFree(p));
  });
  std::vector<std::uint32_t> got(256);
  returns_within(rt, "a module load, its kernel's launch and a stream sync under load", 60s, [&] {
    support::Stream s;
    support::run_fresh_module(s, out.ptr(), 0xC0FFEE);
    s.download(got.data(), out.ptr(), 256 * sizeof(std::uint32_t));
  });
  CHECK(std::count(got.begin(), got.end(), 0xC0FFEEu) == 256);
  CHECK(progressed(before));  // gpuos kept completing tasks meanwhile
  before = next.load();
  std::this_thread::sleep_for(20ms);
  CHECK(progressed(before));
  stop.store(true);
  load.join();
  CHECK_FALSE(timed_out.load());
  REQUIRE(test::drain_or_report(rt, 30s));
  const std::string report = rt.diagnose();
  INFO(report);
  CHECK(report.find("invariant violated") == std::string::npos);
  CHECK(rt.stats().launches > 1);  // slices ended under load
  // Every counter submitted was incremented exactly once, the rest never.
  const size_t submitted = next.load();
  const test::ExactlyOnce::Counts c = once.count();
  CHECK(c.never == kCounters - submitted);
  CHECK(c.twice == 0);
  CHECK(c.other == 0);
}
