// Booting, the round trip, stats, many submitting threads, back-pressure and timeouts.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

TEST_CASE("boot, run a nop, shut down") {
  Runtime rt(Options().with_residency(0, 0));  // launches counted: the boot's alone (no slice, no park)
  const DeviceInfo d = rt.device_info();
  CHECK(d.grid_blocks >= 2);
  CHECK(d.block_threads == 256);
  const Ticket t = rt.submit(ops::nop());
  CHECK(rt.wait(t, 5s));
  const Stats s = rt.stats();
  CHECK(s.submitted == 1);
  CHECK(s.completed == 1);
  CHECK(test::completed_of(rt, GPUOS_OP_NOP) == 1);
  CHECK(s.launches == 1);
}

TEST_CASE("the heartbeat moves while the kernel runs") {
  Runtime rt(Options().with_residency(0, 0));  // idle, but resident: no park
  const uint64_t h0 = rt.stats().heartbeat;
  std::this_thread::sleep_for(test::slowed(50ms));
  const uint64_t h1 = rt.stats().heartbeat;
  CHECK(h1 > h0);
}

TEST_CASE("eight threads submit concurrently: every task runs exactly once") {
  constexpr int kThreads = 8;
  const int kPerThread = static_cast<int>(test::scaled(20000));
  const size_t n = size_t(kThreads) * kPerThread;
  test::ExactlyOnce once(n);
  {
    Runtime rt;
    std::vector<std::thread> th;
    for (int i = 0; i < kThreads; ++i)
      th.emplace_back([&, i] {
        for (int k = 0; k < kPerThread; ++k) rt.submit(once.task(size_t(i) * kPerThread + k));
      });
    for (auto& t : th) t.join();
    CHECK(rt.drain(test::slowed(30s)));
    const Stats s = rt.stats();
    CHECK(s.submitted == n);
    CHECK(s.completed == n);
    CHECK(test::completed_of(rt, GPUOS_OP_AXPY) == n);
    CHECK(s.queue_depth == 0);
  }
  const test::ExactlyOnce::Counts c = once.count();
  CHECK(c.never == 0);
  CHECK(c.twice == 0);
  CHECK(c.other == 0);
}

TEST_CASE("four threads submit batches of 64: every task runs exactly once") {
  constexpr int kThreads = 4, kBatch = 64;
  const int kBatches = static_cast<int>(test::scaled(400));
  const size_t per_thread = size_t(kBatches) * kBatch, n = kThreads * per_thread;
  test::DeviceBuffer y(n), ones(n);
  ones.upload(std::vector<float>(n, 1.0f));
  y.upload(std::vector<float>(n, 0.0f));
  {
    Runtime rt;
    std::atomic<int> running{kThreads};
    std::vector<std::thread> th;
    for (int i = 0; i < kThreads; ++i) {
      th.emplace_back([&, i] {
        std::vector<Task> batch(kBatch);
        for (int b = 0; b < kBatches; ++b) {
          for (int k = 0; k < kBatch; ++k) {
            const size_t e = i * per_thread + size_t(b) * kBatch + k;
            batch[k] = ops::axpy(y.get() + e, 1.0f, ones.get() + e, 1);
          }
          rt.submit_batch(batch);
        }
        running--;
      });
    }
    test::await_submitters(rt, running, 30s);
    for (auto& t : th) t.join();
    CHECK(test::drain_or_report(rt, 10s));
    const Stats s = rt.stats();
    CHECK(s.completed == n);
  }
  const std::vector<float> h = y.download();
  size_t wrong = 0;
  for (float v : h) wrong += v != 1.0f;
  CHECK(wrong == 0);
}

TEST_CASE("a full queue gives back-pressure, not a drop") {
  Options o;
  o.queue_capacity = 64;
  Runtime rt(o);
  rt.suspend();  // nothing is consumed while suspended
  std::vector<Ticket> ts;
  for (int i = 0; i < 64; ++i) {
    auto t = rt.try_submit(ops::nop());
    REQUIRE(t.has_value());
    ts.push_back(*t);
  }
  CHECK_FALSE(rt.try_submit(ops::nop()).has_value());
  CHECK(rt.stats().submitted == 64);
  CHECK_FALSE(rt.wait(ts.front(), 10ms));  // pending: a timeout, not an error
  // A blocking submit waits for room, and gets it once the kernel runs again.
  std::atomic<bool> done{false};
  std::thread blocked([&] {
    rt.submit(ops::nop());
    done = true;
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(done.load());
  rt.resume();
  blocked.join();
  CHECK(done.load());
  CHECK(rt.drain(10s));
  CHECK(rt.stats().completed == 65);
}

TEST_CASE("batches get consecutive tickets") {
  Runtime rt;
  std::vector<Task> batch(1000, ops::nop());
  const Ticket first = rt.submit_batch(batch);
  // Tasks complete out of order: `completed` counts a ticket once every ticket before it is done too,
  // which the waits for all of them guarantee (one for the last alone does not: under a sanitizer,
  // earlier ones were seen still running).
  for (Ticket t = first; t < first + 1000; ++t) REQUIRE(rt.wait(t, 10s));
  CHECK(rt.stats().completed >= first + 1000);
}
