// Stream-ordered submission (gpuos_submit_on_stream): a task runs after the stream's earlier work and
// before its later work, a CUDA graph capture of the stream replays it, and a stream the runtime can no
// longer serve goes on without it.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "host/cu_check.hpp"
#include "host/driver.hpp"
#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;
using detail::drv;

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("tasks on a stream run in its order, between the stream's own operations") {
  constexpr std::size_t n = 4096;
  const int kSteps = static_cast<int>(test::scaled(300, 128));  // more than the 64 a stream may hold at once
  test::DeviceBuffer x(n), y(n), snaps(n * kSteps);
  y.upload(std::vector<float>(n, 0.0f));
  support::Stream s;
  Runtime rt(Options().with_sm_budget(16));
  for (int k = 1; k <= kSteps; ++k) {
    // x = k, then y += x (gpuos), then a copy of y: each must see the one before, with no host wait.
    GPUOS_CU_TRY(drv().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(x.get()), bits_of(static_cast<float>(k)), n, s.get()));
    rt.submit_on_stream(ops::axpy(y.get(), 1.0f, x.get(), n), s.get());
    GPUOS_CU_TRY(drv().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(snaps.get() + (k - 1) * n),
                                         reinterpret_cast<CUdeviceptr>(y.get()), n * sizeof(float), s.get()));
  }
  s.sync();
  const std::vector<float> h = snaps.download();
  std::size_t wrong = 0;
  for (int k = 1; k <= kSteps; ++k)
    for (std::size_t i = 0; i < n; ++i) wrong += h[(k - 1) * n + i] != static_cast<float>(k * (k + 1) / 2);
  CHECK(wrong == 0);
  CHECK(rt.stats().failed == 0);
  const std::string report = rt.diagnose();
  INFO(report);
  CHECK(report.find("invariant violated") == std::string::npos);
  CHECK(report.find("stream-ordered tasks not run") == std::string::npos);
}

TEST_CASE("threads submitting on one stream at once: every task runs once, and the stream waits for each") {
  // Each thread's tasks add 1 to their own slice of y, on a stream all threads share, many more than a
  // stream holds at once: a stream's doors are freed in its order, so one opened out of order with its
  // ring would be reused (a task lost, or a stream waiting for ever).
  constexpr std::size_t n = 4096;
  constexpr int kThreads = 4;
  const int kTasks = static_cast<int>(test::scaled(400, 128));
  test::DeviceBuffer y(n * kThreads), one(n);
  y.upload(std::vector<float>(n * kThreads, 0.0f));
  one.upload(std::vector<float>(n, 1.0f));
  support::Stream s;
  Runtime rt(Options().with_sm_budget(16));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < kTasks; ++k) rt.submit_on_stream(ops::axpy(y.get() + t * n, 1.0f, one.get(), n), s.get());
    });
  for (std::thread& th : threads) th.join();
  s.sync();
  const std::vector<float> h = y.download();
  CHECK(std::count(h.begin(), h.end(), static_cast<float>(kTasks)) == static_cast<long>(n * kThreads));
  CHECK(rt.stats().failed == 0);
  const std::string report = rt.diagnose();
  INFO(report);
  CHECK(report.find("stream-ordered tasks not run") == std::string::npos);
}

TEST_CASE("a stream captured into a CUDA graph runs the task at every replay, in order") {
  constexpr std::size_t n = 4096;
  constexpr int kReplays = 20;
  test::DeviceBuffer x(n), y(n), z(n);
  y.upload(std::vector<float>(n, 0.0f));
  z.upload(std::vector<float>(n, -1.0f));
  support::Stream s;
  Runtime rt(Options().with_sm_budget(16));
  GPUOS_CU_TRY(drv().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
  GPUOS_CU_TRY(drv().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(x.get()), bits_of(1.0f), n, s.get()));
  rt.submit_on_stream(ops::axpy(y.get(), 2.0f, x.get(), n), s.get());
  GPUOS_CU_TRY(drv().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(z.get()), reinterpret_cast<CUdeviceptr>(y.get()),
                                       n * sizeof(float), s.get()));
  CUgraph g = nullptr;
  GPUOS_CU_TRY(drv().cuStreamEndCapture(s.get(), &g));
  CUgraphExec ge = nullptr;
  GPUOS_CU_TRY(drv().cuGraphInstantiateWithFlags(&ge, g, 0));
  CHECK(rt.stats().submitted == 0);  // captured, not run
  for (int r = 0; r < kReplays; ++r) GPUOS_CU_TRY(drv().cuGraphLaunch(ge, s.get()));
  s.sync();
  const std::vector<float> hy = y.download(), hz = z.download();
  CHECK(std::count(hy.begin(), hy.end(), 2.0f * kReplays) == static_cast<long>(n));
  CHECK(std::count(hz.begin(), hz.end(), 2.0f * kReplays) == static_cast<long>(n));
  REQUIRE(test::drain_or_report(rt, 30s));
  CHECK(rt.stats().failed == 0);
  GPUOS_CU_TRY(drv().cuGraphExecDestroy(ge));
  GPUOS_CU_TRY(drv().cuGraphDestroy(g));
}

TEST_CASE("a stream that reaches its tasks after the runtime shut down goes on without them") {
  constexpr std::size_t n = 4096;
  test::DeviceBuffer y(n), x(n);
  y.upload(std::vector<float>(n, 0.0f));
  x.upload(std::vector<float>(n, 1.0f));
  support::MappedHost gate(64);
  support::Stream s;
  Runtime rt(Options().with_sm_budget(16));
  // The stream is held at a gate the host opens later; the tasks wait behind it.
  GPUOS_CU_TRY(drv().cuStreamWaitValue32(s.get(), gate.device<std::uint32_t>(), 1, CU_STREAM_WAIT_VALUE_EQ));
  for (int i = 0; i < 3; ++i) rt.submit_on_stream(ops::axpy(y.get(), 1.0f, x.get(), n), s.get());
  // A task that would fail validation is refused at once.
  CHECK_THROWS_AS(rt.submit_on_stream(Task::make(GPUOS_OP_AXPY, 1, std::uint32_t{7}), s.get()), Error);
  // Shut down (not destroyed: freeing device memory would wait for the held stream).
  rt.shutdown();
  __atomic_store_n(gate.host<std::uint32_t>(), 1u, __ATOMIC_RELEASE);
  const auto t0 = std::chrono::steady_clock::now();
  s.sync();  // returns: the doors' poller releases the stream
  CHECK(std::chrono::steady_clock::now() - t0 < 30s);
  const std::vector<float> h = y.download();
  CHECK(std::count(h.begin(), h.end(), 0.0f) == static_cast<long>(n));  // none ran
  CHECK(rt.diagnose().find("stream-ordered tasks not run (their stream reached them after the runtime closed or faulted): 3") !=
        std::string::npos);
}

TEST_CASE("a graph launched on a stream runs in its order, directly and captured") {
  constexpr std::size_t n = 4096;
  constexpr int kSteps = 50, kReplays = 10;
  test::DeviceBuffer x(n), y(n), z(n), snaps(n * kSteps);
  y.upload(std::vector<float>(n, 0.0f));
  z.upload(std::vector<float>(n, 0.0f));
  support::Stream s;
  Runtime rt(Options().with_sm_budget(16));
  // Two dependent nodes: y += x, then z += y.
  Graph g;
  const std::uint32_t a = g.add(ops::axpy(y.get(), 1.0f, x.get(), n));
  const std::uint32_t b = g.add(ops::axpy(z.get(), 1.0f, y.get(), n));
  g.edge(a, b);
  GraphExec ge(rt, g);
  float want_y = 0, want_z = 0;
  for (int k = 1; k <= kSteps; ++k) {
    GPUOS_CU_TRY(drv().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(x.get()), bits_of(static_cast<float>(k)), n, s.get()));
    ge.launch_on_stream(s.get());
    GPUOS_CU_TRY(drv().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(snaps.get() + (k - 1) * n),
                                         reinterpret_cast<CUdeviceptr>(z.get()), n * sizeof(float), s.get()));
  }
  s.sync();
  std::vector<float> want(kSteps);
  for (int k = 1; k <= kSteps; ++k) {
    want_y += static_cast<float>(k);
    want_z += want_y;
    want[k - 1] = want_z;
  }
  const std::vector<float> h = snaps.download();
  std::size_t wrong = 0;
  for (int k = 0; k < kSteps; ++k)
    for (std::size_t i = 0; i < n; ++i) wrong += h[k * n + i] != want[k];
  CHECK(wrong == 0);
  // Captured: x = 1 then the launch, replayed.
  GPUOS_CU_TRY(drv().cuStreamBeginCapture(s.get(), CU_STREAM_CAPTURE_MODE_GLOBAL));
  GPUOS_CU_TRY(drv().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(x.get()), bits_of(1.0f), n, s.get()));
  ge.launch_on_stream(s.get());
  CUgraph cg = nullptr;
  GPUOS_CU_TRY(drv().cuStreamEndCapture(s.get(), &cg));
  CUgraphExec cge = nullptr;
  GPUOS_CU_TRY(drv().cuGraphInstantiateWithFlags(&cge, cg, 0));
  for (int r = 0; r < kReplays; ++r) {
    GPUOS_CU_TRY(drv().cuGraphLaunch(cge, s.get()));
    want_y += 1.0f;
    want_z += want_y;
  }
  s.sync();
  const std::vector<float> hz = z.download();
  CHECK(std::count(hz.begin(), hz.end(), want_z) == static_cast<long>(n));
  CHECK(rt.stats().failed == 0);
  GPUOS_CU_TRY(drv().cuGraphExecDestroy(cge));
  GPUOS_CU_TRY(drv().cuGraphDestroy(cg));
}

TEST_CASE("a batch and a task after tickets on a stream: the stream's later work waits for all of them") {
  constexpr std::size_t n = 1 << 16;
  constexpr int kTasks = 40;  // more than a dependency slot holds: the signal joins them through a tree
  constexpr int kRounds = 50;
  test::DeviceBuffer x(n), ys(n * kTasks), z(n), snaps(n * kTasks * 2);
  ys.upload(std::vector<float>(n * kTasks, 0.0f));
  z.upload(std::vector<float>(n, 0.0f));
  support::Stream s;
  Runtime rt(Options().with_sm_budget(16));
  Lane lane(rt);
  std::vector<Task> batch;
  for (int i = 0; i < kTasks; ++i) batch.push_back(ops::axpy(ys.get() + i * n, 1.0f, x.get(), n));
  const Ticket before = rt.submit(ops::fill(z.get(), 5.0f, n));
  for (int k = 1; k <= kRounds; ++k) {
    GPUOS_CU_TRY(drv().cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(x.get()), bits_of(static_cast<float>(k)), n, s.get()));
    rt.submit_batch_on_stream(batch, s.get());  // every ys[i] += k
    const Ticket after[] = {before};
    rt.submit_after_on_stream(ops::axpy(z.get(), 1.0f, x.get(), n), after, &lane, s.get());  // z += k
    if (k == kRounds)
      GPUOS_CU_TRY(drv().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(snaps.get()), reinterpret_cast<CUdeviceptr>(ys.get()),
                                           n * kTasks * sizeof(float), s.get()));
  }
  s.sync();
  const float sum = static_cast<float>(kRounds * (kRounds + 1) / 2);
  const std::vector<float> h = snaps.download(n * kTasks), hz = z.download();
  CHECK(std::count(h.begin(), h.end(), sum) == static_cast<long>(n * kTasks));
  CHECK(std::count(hz.begin(), hz.end(), 5.0f + sum) == static_cast<long>(n));
  CHECK(rt.stats().failed == 0);
  std::vector<Task> none;
  CHECK_THROWS_AS(rt.submit_batch_on_stream(none, s.get()), Error);
  const Ticket never[] = {rt.stats().submitted + 1000};
  CHECK_THROWS_AS(rt.submit_after_on_stream(ops::nop(), never, nullptr, s.get()), Error);
}
