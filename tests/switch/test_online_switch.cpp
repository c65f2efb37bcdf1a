// Hot-patching by generation: an operator overwritten in place while threads keep submitting. Every
// task runs exactly once, on the old code if its ticket is below the new generation's first ticket and
// on the new code otherwise; completed == submitted. The same for multi-tile tasks, sums with a finish
// function and batches: every tile and every finish once, on its ticket's generation. Broken sources
// never replace a working version; removal retires an operator after its tasks; a generation rollback
// is a relaunch. Under GPUOS_TEST_SCALE the switches are fewer, the load's pace lower and the time
// bounds longer (switch_util.hpp).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/switch/switch_util.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

TEST_CASE("online switch: an operator overwritten 6 times under load from 4 threads: clean cuts, none lost or doubled") {
  constexpr unsigned kThreads = 4;
  // Room for ~1.6 s of load at ~5 M tasks/s: the six builds (100-200 ms each) and their 10 ms gaps must
  // all land while the load runs (every cut is checked to have tasks on both sides). Not scaled: where
  // the kernel keeps up (memcheck, synccheck) the load runs as fast and as long as at full scale.
  constexpr size_t kPerThread = 1u << 21;
  const unsigned kSwitches = static_cast<unsigned>(test::scaled(6, 3));  // to versions 2, 4, ..., 2^kSwitches
  test::DeviceBuffer out(kThreads * kPerThread);
  out.upload(std::vector<float>(kThreads * kPerThread, 0.0f));
  std::vector<std::pair<uint64_t, unsigned>> cuts;
  uint64_t submitted = 0;
  std::vector<float> h;
  {
    // Launches counted: the switches' alone (no slice).
    Runtime rt(test::scaled_queue(Options().with_residency(0, 0)));
    const auto g1 = rt.load_operator_source("tag.cu", test::tag_source("tag", 1));
    CHECK(g1.number == 1);
    CHECK(g1.changed == 1);
    std::atomic<uint32_t> op{rt.op_id("tag")};
    CHECK(op.load() >= GPUOS_BUILTIN_OP_COUNT);
    cuts.push_back({0, 1});
    test::Load load(rt, out, kThreads, kPerThread, op);
    test::pause_under_load(load, 20ms);
    for (unsigned i = 1; i <= kSwitches; ++i) {
      const unsigned v = 1u << i;
      const auto g = rt.load_operator_source("tag.cu", test::tag_source("tag", v));
      CHECK(g.changed == 1);
      CHECK(rt.op_id("tag") == op.load());  // replaced in place: same id
      MESSAGE("version " << v << ": generation " << g.number << ", first ticket " << g.first_ticket << ", build "
                         << g.build_ns / 1e6 << " ms, pause " << g.pause_ns / 1e3 << " us");
      cuts.push_back({g.first_ticket, v});
      test::pause_under_load(load, 10ms);
    }
    load.stop();
    REQUIRE(test::drain_or_report(rt, 20s));
    const Stats s = rt.stats();
    submitted = load.submitted();
    CHECK(s.submitted == submitted);
    CHECK(s.completed == s.submitted);
    CHECK(s.failed == 0);
    CHECK(s.launches == 1 + 1 + kSwitches);  // boot, version 1, the replacements (six at full scale)
    h = out.download();
    const size_t checked = test::check_cuts(load, h, kPerThread, cuts);
    CHECK(checked == submitted);
    MESSAGE(submitted << " tasks over " << cuts.size() << " versions");
  }
  for (size_t i = 1; i < cuts.size(); ++i) CHECK(cuts[i].first >= cuts[i - 1].first);
}

TEST_CASE("online switch: multi-tile tasks, sums with a finish function and batches across 4 switches under load from 4 threads: every tile and finish once, on its ticket's version") {
  constexpr unsigned kThreads = 4;
  // Paced: at most 8 M tiles a second per thread (~13 k tasks). The pools last 3 s at that pace even if
  // every task were a tile-recording one (half are); the four builds (100-200 ms each) and their 10 ms
  // gaps must all land while the load runs (every cut is checked to have tasks on both sides). Under
  // GPUOS_TEST_SCALE: the pace divided by the scale, and again by as much as the tasks' largest tile
  // count is (scaled_max_tiles: about as many tasks a pause as at full scale, of fewer tiles); the pools
  // last 3 s at the pace before that second cut.
  const double kTilesPerSecond = static_cast<double>(test::scaled(8'000'000));
  const unsigned kSwitches = static_cast<unsigned>(test::scaled(4, 2));  // to versions 2, 4, ..., 2^kSwitches
  test::MultiTileBuffers buf(kThreads, test::MultiTileBuffers::records_for(kTilesPerSecond, 3.0),
                             test::scaled(size_t{1} << 18, size_t{1} << 14));
  test::Cuts cuts;
  // Launches counted: the switches' alone (no slice).
  Runtime rt(test::scaled_queue(Options().with_residency(0, 0)));
  const uint32_t grid = static_cast<uint32_t>(rt.device_info().grid_blocks);
  const uint32_t max_tiles = test::scaled_max_tiles(grid);
  const double tiles_per_second = kTilesPerSecond * max_tiles / test::MultiTileBuffers::kMaxTiles;
  rt.load_operator_source("mt.cu", test::multi_tile_source("mt", 1));
  const uint32_t tiles_op = rt.op_id("mt_tiles"), sum_op = rt.op_id("mt_sum");
  cuts.push_back({0, 1});
  test::MultiTileLoad load(rt, buf, tiles_op, sum_op, tiles_per_second, max_tiles);
  test::pause_under_load(load, 20ms);
  for (unsigned i = 1; i <= kSwitches; ++i) {
    const unsigned v = 1u << i;
    const auto g = rt.load_operator_source("mt.cu", test::multi_tile_source("mt", v));
    CHECK(g.changed == 1);
    CHECK(rt.op_id("mt_tiles") == tiles_op);  // replaced in place: same ids
    CHECK(rt.op_id("mt_sum") == sum_op);
    MESSAGE("version " << v << ": generation " << g.number << ", first ticket " << g.first_ticket << ", build "
                       << g.build_ns / 1e6 << " ms, pause " << g.pause_ns / 1e3 << " us");
    cuts.push_back({g.first_ticket, v});
    test::pause_under_load(load, 10ms);
  }
  load.stop();
  CHECK(load.error() == "");
  CHECK_FALSE(load.ran_out());
  REQUIRE(test::drain_or_report(rt, 30s));
  const Stats s = rt.stats();
  CHECK(s.submitted == load.submitted());
  CHECK(s.completed == s.submitted);
  CHECK(s.failed == 0);
  CHECK(s.launches == 1 + 1 + kSwitches);  // boot, version 1, the replacements (four at full scale)
  CHECK(test::completed_of(rt, tiles_op) == load.submitted_of(false));
  CHECK(test::completed_of(rt, sum_op) == load.submitted_of(true));
  const test::MultiTileReport r = test::check_multi_tile(load, buf, cuts, cuts, grid);
  CHECK(r.tasks == load.submitted());
  MESSAGE(r.tasks << " tasks (" << r.batched << " from batches, " << r.over_grid << " of at least twice the grid of "
                  << grid << " blocks), " << r.tiles << " tiles (at most " << max_tiles << " a task), over "
                  << cuts.size() << " versions");
}

TEST_CASE("online switch: a broken source never replaces the working version; its error is reported until fixed") {
  test::DeviceBuffer out(1024);
  out.upload(std::vector<float>(1024, 0.0f));
  Runtime rt;
  rt.load_operator_source("tag.cu", test::tag_source("tag", 1));
  const uint32_t op = rt.op_id("tag");
  const std::vector<std::pair<std::string, std::string>> broken = {
      {"syntax error", "#include \"gpuos/op.cuh\"\nstruct A { float* out; unsigned long long p; };\n"
                       "__device__ void tag_tile(const A& a, const gpuos::TileCtx&) { *a.out += 2.0f }\n"
                       "GPUOS_OPERATOR(tag, A, tag_tile)\n"},
      {"wrong signature", "#include \"gpuos/op.cuh\"\nstruct A { float* out; unsigned long long p; };\n"
                          "__device__ void tag_tile(A a, const gpuos::TileCtx&) { *a.out += 2.0f; }\n"
                          "GPUOS_OPERATOR(tag, A, tag_tile)\n"},
      {"no operator", "#include \"gpuos/op.cuh\"\n__device__ void f() {}\n"},
      {"unknown include", "#include \"gpuos/op.cuh\"\n#include \"no_such_header.cuh\"\n"},
      {"empty", ""},
      {"binary", std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10)},
      {"built-in name", "#include \"gpuos/op.cuh\"\nstruct A { float* out; unsigned long long p; };\n"
                        "__device__ void t(const A& a, const gpuos::TileCtx&) {}\nGPUOS_OPERATOR(add, A, t)\n"},
  };
  for (const auto& [what, src] : broken) {
    CAPTURE(what);
    try {
      rt.load_operator_source("tag.cu", src);
      FAIL("a broken source loaded");
    } catch (const Error& e) {
      CHECK(e.status() == GPUOS_ERR_INVALID_ARG);
      CHECK(std::string(e.what()).find("tag.cu") != std::string::npos);
      if (what == "syntax error") CHECK(std::string(e.what()).find("tag.cu:3") != std::string::npos);
      CHECK(std::string(e.what()).find("keeps serving") != std::string::npos);
    }
    // Still served by version 1, and the status says why the new one is not.
    CHECK(rt.op_id("tag") == op);
    bool reported = false;
    for (const auto& r : rt.list_ops())
      if (std::string(r.name) == "tag") reported = r.error[0] != '\0';
    CHECK(reported);
  }
  // A second source declaring the same name is refused; the first keeps it.
  CHECK_THROWS_AS(rt.load_operator_source("other.cu", test::tag_source("tag", 8)), Error);
  const uint64_t t = rt.submit(Task::make(op, 1, test::TagArgs{out.get(), 0}));
  CHECK(rt.wait(t, test::slowed(10s)));
  CHECK(out.download(1)[0] == 1.0f);
  // Fixed: the error clears, version 4 serves.
  const auto g = rt.load_operator_source("tag.cu", test::tag_source("tag", 4));
  CHECK(g.changed == 1);
  for (const auto& r : rt.list_ops())
    if (std::string(r.name) == "tag") CHECK(r.error[0] == '\0');
  const uint64_t t2 = rt.submit(Task::make(op, 1, test::TagArgs{out.get() + 1, 0}));
  CHECK(rt.wait(t2, test::slowed(10s)));
  CHECK(out.download(2)[1] == 4.0f);
  // Same content again: nothing to do.
  CHECK(rt.load_operator_source("tag.cu", test::tag_source("tag", 4)).changed == 0);
}

TEST_CASE("online switch: removal retires an operator after its tasks; rollback returns to the previous generation") {
  const size_t n = test::scaled(20000, 512);
  test::DeviceBuffer out(n);
  out.upload(std::vector<float>(n, 0.0f));
  Runtime rt;
  rt.load_operator_source("tag.cu", test::tag_source("tag", 1));
  const uint32_t op = rt.op_id("tag");
  for (size_t i = 0; i < n / 2; ++i) rt.submit(Task::make(op, 1, test::TagArgs{out.get() + i, 0}));
  rt.remove_operator_source("tag.cu");
  CHECK_THROWS_AS(rt.op_id("tag"), Error);
  CHECK_THROWS_AS(rt.submit(Task::make(op, 1, test::TagArgs{out.get(), 0})), Error);
  REQUIRE(test::drain_or_report(rt, 20s));
  CHECK(rt.stats().failed == 0);
  std::vector<float> h = out.download();
  size_t ones = 0;
  for (size_t i = 0; i < n / 2; ++i) ones += h[i] == 1.0f;
  CHECK(ones == n / 2);
  // Rollback: the generation that still had the operator, without a compile.
  const auto g = rt.rollback_generation();
  CHECK(g.build_ns == 0);
  CHECK(rt.op_id("tag") == op);
  for (size_t i = n / 2; i < n; ++i) rt.submit(Task::make(op, 1, test::TagArgs{out.get() + i, 0}));
  REQUIRE(test::drain_or_report(rt, 20s));
  h = out.download();
  ones = 0;
  for (size_t i = 0; i < n; ++i) ones += h[i] == 1.0f;
  CHECK(ones == n);
  CHECK(rt.stats().failed == 0);
}

TEST_CASE("online switch: old images are retired, then unloaded once the runtime is idle; tasks meanwhile run") {
  const size_t n = test::scaled(4096, 256);
  test::DeviceBuffer out(n);
  out.upload(std::vector<float>(n, 0.0f));
  // Launches counted: the switches' and the idle unload's alone (no slice; no park, which would unload
  // the retired images without a relaunch).
  Runtime rt(Options().with_residency(0, 0));
  // A thread keeps the runtime busy, so no idle-time unload happens during the switches (compiles).
  test::BusyNops busy(rt);
  // Each load is a generation; the image before the previous one is retired (still loaded).
  std::vector<uint32_t> retired;
  for (unsigned v = 1; v <= 4; ++v) {
    const auto g = rt.load_operator_source("tag.cu", test::tag_source("tag", v));
    CHECK(g.changed == 1);
    CHECK(g.unload_ns == 0);  // far below the bound: nothing unloaded inside the pause
    retired.push_back(g.retired);
  }
  CHECK(busy.stop());
  CHECK(retired == std::vector<uint32_t>{0, 1, 2, 3});
  // Idle: the monitor stops the kernel, unloads them and relaunches.
  const uint64_t launches = rt.stats().launches;
  CHECK(launches == 1 + 4);
  const auto deadline = std::chrono::steady_clock::now() + test::slowed(10s);
  while (rt.stats().launches == launches && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  CHECK(rt.stats().launches == launches + 1);
  // The next switch retires exactly one image: the others are gone.
  const auto g = rt.load_operator_source("tag.cu", test::tag_source("tag", 5));
  CHECK(g.retired == 1);
  // And the runtime serves as before, on the newest code.
  const uint32_t op = rt.op_id("tag");
  for (size_t i = 0; i < n; ++i) rt.submit(Task::make(op, 1, test::TagArgs{out.get() + i, 0}));
  REQUIRE(test::drain_or_report(rt, 20s));
  const std::vector<float> h = out.download();
  size_t fives = 0;
  for (float v : h) fives += v == 5.0f;
  CHECK(fives == n);
  CHECK(rt.stats().failed == 0);
}

TEST_CASE("online switch: a shutdown while the idle unload of retired images has the kernel stopped: no error, no hang") {
  // The monitor unloads retired images once the runtime has been idle ~20 ms: it stops the kernel,
  // unloads them one by one (~0.25 ms each on an H100) and relaunches. A shutdown landing in that
  // window must neither relaunch the kernel a second time (an error: "not suspended") nor free memory
  // under a running kernel (a wait for ever). Sweep the shutdown across the window. Under
  // GPUOS_TEST_SCALE fewer loads (each a generation switch), so fewer retired images.
  const unsigned kLoads = static_cast<unsigned>(test::scaled(80, 8));
  for (int delay_ms : {21, 25, 30, 36}) {
    CAPTURE(delay_ms);
    Runtime rt(Options().with_residency(0, 0));  // the idle unload's window, not a park's
    test::BusyNops busy(rt);  // no idle unload during the switches
    uint32_t retired = 0;
    for (unsigned i = 0; i < kLoads; ++i)
      retired = rt.load_operator_source("tag.cu", test::tag_source("tag", i % 2 ? 3 : 1)).retired;
    CHECK(busy.stop());
    CHECK(retired >= kLoads / 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_NOTHROW(rt.shutdown());
    CHECK(std::chrono::steady_clock::now() - t0 < test::slowed(10s));
    const std::string d = rt.diagnose();
    CHECK_MESSAGE(d.find("state=faulted") == std::string::npos, d);
  }
}

TEST_CASE("online switch: while a generation builds, names, the operator list and metrics answer from the one serving") {
  // A build compiles and links for 0.1 s to seconds (GPUOS_INLINE_OPERATORS); an inference server's
  // lookups and its metrics endpoint must not wait for it.
  Runtime rt(test::scaled_queue(Options()));
  rt.load_operator_source("tag.cu", test::tag_source("tag", 1));
  const uint32_t id = rt.op_id("tag");
  const uint64_t serving = rt.generation().number;
  std::atomic<bool> building{true};
  std::thread loader([&] {
    // A source never seen in this process: compiled by NVRTC, then linked.
    rt.load_operator_source("tag.cu", test::tag_source("tag", 2) + "// " + std::to_string(std::rand()) + "\n");
    building = false;
  });
  size_t answered = 0;  // calls that returned while the build was still running
  while (building) {
    CHECK(rt.op_id("tag") == id);
    const auto ops = rt.list_ops();
    const std::string m = rt.metrics();
    if (building) {
      ++answered;
      const uint64_t n = rt.generation().number;  // the new one once it switched in, before the flag
      CHECK((n == serving || n == serving + 1));
      CHECK(!ops.empty());
      CHECK(m.find("gpuos_") != std::string::npos);
    }
  }
  loader.join();
  MESSAGE(answered << " lookups, lists and metrics answered during the build");
  CHECK(answered >= 3);  // one call that waited for the build would be the last to return during it
  CHECK(rt.generation().number == serving + 1);
  CHECK(rt.op_id("tag") == id);
}
