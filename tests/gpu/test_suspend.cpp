// Suspend/resume under load: workers finish their current task, the kernel exits, a relaunch continues
// with the queued tasks; none lost, none run twice.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

TEST_CASE("50 suspend/resume cycles while 4 threads submit: every task exactly once") {
  constexpr int kThreads = 4;
  const int kPerThread = static_cast<int>(test::scaled(50000)), kCycles = static_cast<int>(test::scaled(50, 3));
  const size_t n = size_t(kThreads) * kPerThread;
  test::ExactlyOnce once(n);
  uint64_t launches = 0;
  {
    Runtime rt(Options().with_residency(0, 0));  // launches counted: the resumes' alone (no slice)
    std::atomic<int> running{kThreads};
    std::vector<std::thread> th;
    for (int i = 0; i < kThreads; ++i)
      th.emplace_back([&, i] {
        for (int k = 0; k < kPerThread; ++k) rt.submit(once.task(size_t(i) * kPerThread + k));
        running--;
      });
    for (int cycles = 0; cycles < kCycles; ++cycles) {
      std::this_thread::sleep_for(2ms);
      rt.suspend();
      rt.resume();
    }
    test::await_submitters(rt, running, 60s);
    for (auto& t : th) t.join();
    CHECK(test::drain_or_report(rt, 30s));
    const std::string report = rt.diagnose();
    INFO(report);
    CHECK(report.find("invariant violated") == std::string::npos);
    const Stats s = rt.stats();
    CHECK(s.submitted == n);
    CHECK(s.completed == n);
    launches = s.launches;
  }
  CHECK(launches == kCycles + 1);
  const test::ExactlyOnce::Counts c = once.count();
  CHECK(c.never == 0);
  CHECK(c.twice == 0);
  CHECK(c.other == 0);
}

TEST_CASE("a suspend while a large multi-tile task runs: it finishes once, exactly") {
  const size_t n = test::scaled(64u << 20, 1u << 20);  // at least 256 tiles of 4,096 elements
  test::DeviceBuffer a(n), y(n);
  const auto ha = test::random_floats(n, 5);
  a.upload(ha);
  {
    Runtime rt;
    CHECK(rt.wait(rt.submit(ops::fill(y.get(), 0.0f, n)), test::slowed(10s)));
    for (int r = 0; r < 8; ++r) {
      // Tasks on one buffer must not overlap (tasks are unordered): wait for each.
      const Ticket t = rt.submit(ops::axpy(y.get(), 1.0f, a.get(), n));
      if (r % 2 == 1) {
        rt.suspend();  // lands while the tiles are being run
        rt.resume();
      }
      CHECK(rt.wait(t, test::slowed(30s)));
    }
  }
  const auto h = y.download();
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    float want = 0.0f;
    for (int r = 0; r < 8; ++r) want = std::fma(1.0f, ha[i], want);
    bad += h[i] != want;
  }
  CHECK(bad == 0);
}
