// The watchdog: an operator call past its deadline fails every pending task with GPUOS_ERR_HUNG, named
// (task, operator, tile, block, SM), and the kernel is ended so that destroy returns; deadlines per
// task and per operator; a shutdown that cannot drain gives up. A hung runtime ends the kernel with a
// fault, which takes the process's context with it: each case runs in a process of its own (meson's
// tests and scripts/gpu_run.sh select one case per run; names without commas, which doctest's filters
// would split).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// `spin`: tile `stuck` never returns. `dwell`: each tile busy-waits `ns` (a legitimately long call).
constexpr const char* kSource = R"(
#include "gpuos/op.cuh"
struct SpinArgs { unsigned int stuck; unsigned int pad; };
__device__ void spin_tile(const SpinArgs& a, const gpuos::TileCtx& c) {
  if (c.tile == a.stuck)
    for (;;) __nanosleep(100000);
}
GPUOS_OPERATOR(spin, SpinArgs, spin_tile)

struct DwellArgs { unsigned long long ns; };
__device__ void dwell_tile(const DwellArgs& a, const gpuos::TileCtx&) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(10000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < a.ns);
}
GPUOS_OPERATOR(dwell, DwellArgs, dwell_tile)
)";

struct SpinArgs {
  uint32_t stuck, pad;
};
struct DwellArgs {
  uint64_t ns;
};

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// Waits for `ticket`, which a hung call holds, and checks that it failed with GPUOS_ERR_HUNG promptly
/// (deadline 200 ms, seen every 5 ms: well before the wait's own timeout); returns the error's text.
std::string wait_hung(gpuos_runtime* raw, uint64_t ticket, const char* what) {
  const auto t0 = Clock::now();
  const gpuos_status s = gpuos_wait(raw, ticket, 10'000'000'000);
  const double waited = ms_since(t0);
  const std::string why = gpuos_last_error();
  MESSAGE(what << " failed after " << waited << " ms: " << why);
  CHECK(s == GPUOS_ERR_HUNG);
  CHECK(waited < 1000);
  return why;
}

}  // namespace

TEST_CASE("watchdog: a hung tile fails every pending task with GPUOS_ERR_HUNG and names it; destroy returns") {
  Runtime rt(Options().with_deadline(200));
  gpuos_runtime* const raw = rt.handle();
  rt.load_operator_source("watchdog_ops.cu", kSource);
  const uint32_t spin = rt.op_id("spin");
  const Ticket hung = rt.submit(Task::make(spin, 8, SpinArgs{5, 0}));
  std::vector<Ticket> behind;
  for (int i = 0; i < 200; ++i) behind.push_back(rt.submit(ops::nop()));
  const std::string why = wait_hung(raw, hung, "hung task");
  CHECK(has(why, "task " + std::to_string(hung)));
  CHECK(has(why, "operator 'spin' (id " + std::to_string(spin) + ")"));
  CHECK(has(why, "tile 5"));
  CHECK(has(why, "block "));
  CHECK(has(why, "(SM "));
  CHECK(has(why, "past its deadline of 200 ms"));
  // Every task behind it completed before or fails with the same cause; none hangs.
  size_t ok = 0, failed = 0;
  for (Ticket t : behind) {
    const gpuos_status w = gpuos_wait(raw, t, 1'000'000'000);
    ok += w == GPUOS_OK;
    failed += w == GPUOS_ERR_HUNG;
  }
  CHECK(ok + failed == behind.size());
  uint64_t k = 0;
  gpuos_task nop{GPUOS_OP_NOP, 1, nullptr, 0, 0};
  CHECK(gpuos_submit(raw, &nop, &k) == GPUOS_ERR_HUNG);
  const std::string report = rt.diagnose();
  INFO(report);
  CHECK(has(report, "spin"));
  CHECK(has(report, "tile 5"));
  const auto t1 = Clock::now();
  CHECK(gpuos_destroy(rt.release()) == GPUOS_OK);  // the kernel was ended: everything freed, the context reset
  const double destroyed = ms_since(t1);
  MESSAGE("destroy took " << destroyed << " ms");
  CHECK(destroyed < 3000);
  test::check_next_boot();
}

TEST_CASE("watchdog: deadlines per task and per operator; long calls within theirs run and diagnose shows them") {
  Runtime rt(Options().with_deadline(100));
  gpuos_runtime* const raw = rt.handle();
  rt.load_operator_source("watchdog_ops.cu", kSource);
  const uint32_t dwell = rt.op_id("dwell");
  // 300 ms calls: past the runtime's 100 ms, within the task's 2 s.
  CHECK(rt.wait(rt.submit(Task::make(dwell, 4, DwellArgs{300'000'000}).with_deadline(2000)), 10s));
  // Within the operator's 1 s.
  rt.set_op_deadline(dwell, 1000);
  CHECK(rt.wait(rt.submit(Task::make(dwell, 1, DwellArgs{300'000'000})), 10s));
  // What the blocks run, while they run it.
  const Ticket long_one = rt.submit(Task::make(dwell, 1, DwellArgs{600'000'000}));
  std::this_thread::sleep_for(300ms);
  const std::string report = rt.diagnose();
  INFO(report);
  CHECK(has(report, "1 in an operator call"));
  CHECK(has(report, "task " + std::to_string(long_one) + ", operator 'dwell'"));
  CHECK(has(report, "(deadline 1000 ms)"));
  CHECK(rt.wait(long_one, 10s));
  // Bad deadlines are refused, and change nothing.
  CHECK(gpuos_set_op_deadline(raw, dwell, 5) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_set_op_deadline(raw, 4000, 100) == GPUOS_ERR_INVALID_ARG);
  rt.alias_set("dwell_alias", "dwell");
  CHECK(gpuos_set_op_deadline(raw, rt.op_id("dwell_alias"), 100) == GPUOS_ERR_INVALID_ARG);
  CHECK(has(gpuos_last_error(), "alias"));
  gpuos_task bad = Task::make(dwell, 1, DwellArgs{1}).with_deadline(5).c();
  uint64_t k = 0;
  CHECK(gpuos_submit(raw, &bad, &k) == GPUOS_ERR_INVALID_ARG);
  // A task's own deadline wins over its operator's, both ways: 150 ms calls under a 100 ms task deadline.
  const auto t0 = Clock::now();
  const Ticket cut = rt.submit(Task::make(dwell, 1, DwellArgs{150'000'000}).with_deadline(100));
  CHECK(gpuos_wait(raw, cut, 10'000'000'000) == GPUOS_ERR_HUNG);
  MESSAGE("cut after " << ms_since(t0) << " ms: " << std::string(gpuos_last_error()));
  CHECK(has(gpuos_last_error(), "past its deadline of 100 ms"));
  CHECK(gpuos_destroy(rt.release()) == GPUOS_OK);
}

/// `n` graph nodes in a chain (node v after node v - 1), each a task of one tile: links of one block's run.
gpuos_graph_exec* chain_instance(gpuos_runtime* raw, const std::vector<Task>& nodes) {
  Graph g;
  for (const Task& t : nodes) g.add(t);
  for (uint32_t v = 1; v < nodes.size(); ++v) g.edge(v - 1, v);
  gpuos_graph_exec* e = nullptr;
  REQUIRE(gpuos_graph_instantiate(raw, g.handle(), &e) == GPUOS_OK);
  return e;
}

TEST_CASE("watchdog: a hung link of a chain graph fails its launch with GPUOS_ERR_HUNG and names its operator") {
  Runtime rt(Options().with_deadline(200));
  gpuos_runtime* const raw = rt.handle();
  rt.load_operator_source("watchdog_ops.cu", kSource);
  const uint32_t spin = rt.op_id("spin");
  // 12 nops, a spin that never returns, 3 nops: one block runs them as links, the nops inlined.
  std::vector<Task> nodes(12, ops::nop());
  nodes.push_back(Task::make(spin, 1, SpinArgs{0, 0}));
  nodes.insert(nodes.end(), 3, ops::nop());
  gpuos_graph_exec* e = chain_instance(raw, nodes);
  uint64_t launch = 0;
  REQUIRE(gpuos_graph_launch(raw, e, nullptr, 0, nullptr, &launch) == GPUOS_OK);
  const std::string why = wait_hung(raw, launch, "the launch of a hung link");
  CHECK(has(why, "task " + std::to_string(launch)));
  CHECK(has(why, "operator 'spin' (id " + std::to_string(spin) + ")"));
  CHECK(has(why, "past its deadline of 200 ms"));
  const gpuos_status d = gpuos_graph_exec_destroy(raw, e);
  CHECK((d == GPUOS_OK || d == GPUOS_ERR_HUNG));
  CHECK(gpuos_destroy(rt.release()) == GPUOS_OK);
  test::check_next_boot();
}

TEST_CASE("watchdog: a chain of long links each within its deadline runs to its end") {
  Runtime rt(Options().with_deadline(200));
  gpuos_runtime* const raw = rt.handle();
  rt.load_operator_source("watchdog_ops.cu", kSource);
  // 8 links of 60 ms: the run takes 480 ms, past the deadline, and no link does.
  const std::vector<Task> nodes(8, Task::make(rt.op_id("dwell"), 1, DwellArgs{60'000'000}));
  gpuos_graph_exec* e = chain_instance(raw, nodes);
  for (int i = 0; i < 2; ++i) {
    uint64_t launch = 0;
    REQUIRE(gpuos_graph_launch(raw, e, nullptr, 0, nullptr, &launch) == GPUOS_OK);
    CHECK(gpuos_wait(raw, launch, 10'000'000'000) == GPUOS_OK);
  }
  CHECK(gpuos_graph_exec_destroy(raw, e) == GPUOS_OK);
  CHECK(rt.stats().failed == 0);
  CHECK(gpuos_destroy(rt.release()) == GPUOS_OK);
}

/// A runtime with no watchdog deadline, GPUOS_DRAIN_STALL at `stall_ms`, and the test's operators.
Runtime without_deadline(const char* stall_ms) {
  Runtime rt = [&] {
    const test::ScopedEnv stall("GPUOS_DRAIN_STALL", stall_ms);
    return Runtime(Options().with_deadline(0));
  }();
  rt.load_operator_source("watchdog_ops.cu", kSource);
  return rt;
}

TEST_CASE("watchdog: with no deadline a shutdown that cannot drain gives up after GPUOS_DRAIN_STALL") {
  Runtime rt = without_deadline("500");
  gpuos_runtime* const raw = rt.handle();
  const Ticket hung = rt.submit(Task::make(rt.op_id("spin"), 1, SpinArgs{0, 0}));
  // No deadline: the task stays pending.
  CHECK(gpuos_wait(raw, hung, 300'000'000) == GPUOS_ERR_TIMEOUT);
  const auto t0 = Clock::now();
  CHECK(gpuos_shutdown(raw) == GPUOS_OK);
  const double took = ms_since(t0);
  MESSAGE("shutdown gave up after " << took << " ms");
  CHECK(took < 3000);
  CHECK(gpuos_wait(raw, hung, 0) == GPUOS_ERR_HUNG);
  const std::string why = gpuos_last_error();
  INFO(why);
  CHECK(has(why, "shutdown: no task completed for 500 ms"));
  CHECK(has(why, "operator 'spin'"));
  CHECK(gpuos_destroy(rt.release()) == GPUOS_OK);
}

TEST_CASE("watchdog: with no deadline destroying a graph instance whose launch hangs gives up after GPUOS_DRAIN_STALL") {
  Runtime rt = without_deadline("300");
  gpuos_runtime* const raw = rt.handle();
  Graph g;
  g.add(Task::make(rt.op_id("spin"), 1, SpinArgs{0, 0}));
  gpuos_graph_exec* e = nullptr;
  REQUIRE(gpuos_graph_instantiate(raw, g.handle(), &e) == GPUOS_OK);
  uint64_t launch = 0;
  REQUIRE(gpuos_graph_launch(raw, e, nullptr, 0, nullptr, &launch) == GPUOS_OK);
  CHECK(gpuos_wait(raw, launch, 100'000'000) == GPUOS_ERR_TIMEOUT);  // no deadline: it stays pending
  const auto t0 = Clock::now();
  CHECK(gpuos_graph_exec_destroy(raw, e) == GPUOS_ERR_TIMEOUT);
  const double took = ms_since(t0);
  MESSAGE("the instance's destroy gave up after " << took << " ms");
  CHECK(took >= 290);
  CHECK(took < 3000);
  CHECK(has(gpuos_last_error(), "has not completed in 300 ms"));
  // The instance was kept: it is still this runtime's (a second destroy is not refused as unknown).
  CHECK(gpuos_graph_exec_destroy(raw, e) == GPUOS_ERR_TIMEOUT);
  // Shutdown's drain gives up too, and destroy returns; the instance goes with the runtime.
  CHECK(gpuos_shutdown(raw) == GPUOS_OK);
  CHECK(gpuos_wait(raw, launch, 0) == GPUOS_ERR_HUNG);
  CHECK(gpuos_destroy(rt.release()) == GPUOS_OK);
}
