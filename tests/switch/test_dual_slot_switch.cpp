// Dual slot: two versions of an operator under two names, one alias flipping between them with
// alias_set / alias_rollback while threads keep submitting through the alias. The switch is a task in
// the queue: every task before it runs the old slot, every task after it the new one, with no quiesce
// (the kernel is never relaunched). The same for multi-tile tasks, sums with a finish function and
// batches through two aliases: every tile and every finish once, on its ticket's slot. Under
// GPUOS_TEST_SCALE the flips are fewer and the load's pace lower (switch_util.hpp).
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/switch/switch_util.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

TEST_CASE("dual slot: 400 alias flips and rollbacks under load from 4 threads: ordered cuts, no relaunch") {
  constexpr unsigned kThreads = 4;
  // Room for the load at full speed: not scaled, since where the kernel keeps up (memcheck, synccheck)
  // the pauses last as long as at full scale.
  constexpr size_t kPerThread = 1u << 20;
  const int kFlips = static_cast<int>(test::scaled(200, 4));  // flips, and as many rollbacks
  test::DeviceBuffer out(kThreads * kPerThread);
  out.upload(std::vector<float>(kThreads * kPerThread, 0.0f));
  // Launches counted: no quiesce during the flips.
  Runtime rt(test::scaled_queue(Options().with_residency(0, 0)));
  rt.load_operator_source("tag_a.cu", test::tag_source("tag_a", 1));
  rt.load_operator_source("tag_b.cu", test::tag_source("tag_b", 2));
  // The boot image is retired now; a suspend unloads it, so no idle-time unload (a relaunch) can
  // happen during the flips.
  rt.suspend();
  rt.resume();
  const uint64_t launches = rt.stats().launches;
  std::vector<std::pair<uint64_t, unsigned>> cuts;
  cuts.push_back({rt.alias_set("tag", "tag_a"), 1});
  std::atomic<uint32_t> op{rt.op_id("tag")};
  CHECK(op.load() != rt.op_id("tag_a"));
  CHECK(op.load() != rt.op_id("tag_b"));
  {
    test::Load load(rt, out, kThreads, kPerThread, op);
    test::pause_under_load(load, 5ms);
    for (int i = 0; i < kFlips; ++i) {
      cuts.push_back({rt.alias_set("tag", "tag_b"), 2});
      test::pause_under_load(load, 500us);
      cuts.push_back({rt.alias_rollback("tag"), 1});
      test::pause_under_load(load, 500us);
    }
    load.stop();
    REQUIRE(test::drain_or_report(rt, 20s));
    const Stats s = rt.stats();
    CHECK(s.completed == s.submitted);
    CHECK(s.failed == 0);
    CHECK(s.submitted == load.submitted() + cuts.size());  // tasks + control tasks
    CHECK(s.launches == launches);                        // no quiesce
    const std::vector<float> h = out.download();
    // A task exactly at a cut ticket is the control task itself; tasks lie strictly between cuts.
    const size_t checked = test::check_cuts(load, h, kPerThread, cuts);
    CHECK(checked == load.submitted());
    MESSAGE(checked << " tasks, " << cuts.size() << " alias switches");
  }
}

TEST_CASE("dual slot: multi-tile tasks, sums with a finish function and batches across 400 flips of two aliases under load from 4 threads: every tile and finish once, on its ticket's slot") {
  constexpr unsigned kThreads = 4;
  // Paced: at most 8 M tiles a second per thread (~13 k tasks); the pools last 2 s at that pace, the
  // flips take ~0.25 s. Under GPUOS_TEST_SCALE: the pace divided by the scale, and again by as much as
  // the tasks' largest tile count is (scaled_max_tiles: about as many tasks a pause as at full scale, of
  // fewer tiles); the pools last 2 s at the pace before that second cut.
  const double kTilesPerSecond = static_cast<double>(test::scaled(8'000'000));
  const int kFlips = static_cast<int>(test::scaled(100, 2));  // flips of both aliases, and as many rollbacks
  test::MultiTileBuffers buf(kThreads, test::MultiTileBuffers::records_for(kTilesPerSecond, 2.0),
                             test::scaled(size_t{1} << 18, size_t{1} << 14));
  // Launches counted: no quiesce during the flips.
  Runtime rt(test::scaled_queue(Options().with_residency(0, 0)));
  const uint32_t grid = static_cast<uint32_t>(rt.device_info().grid_blocks);
  const uint32_t max_tiles = test::scaled_max_tiles(grid);
  const double tiles_per_second = kTilesPerSecond * max_tiles / test::MultiTileBuffers::kMaxTiles;
  rt.load_operator_source("mt_a.cu", test::multi_tile_source("mt_a", 1));
  rt.load_operator_source("mt_b.cu", test::multi_tile_source("mt_b", 2));
  // The boot image is retired now; a suspend unloads it, so no idle-time unload (a relaunch) can
  // happen during the flips.
  rt.suspend();
  rt.resume();
  const uint64_t launches = rt.stats().launches;
  // One alias per operator, flipped one after the other: each has its own cuts.
  test::Cuts tile_cuts, sum_cuts;
  tile_cuts.push_back({rt.alias_set("mt_tiles", "mt_a_tiles"), 1});
  sum_cuts.push_back({rt.alias_set("mt_sum", "mt_a_sum"), 1});
  const uint32_t tiles_op = rt.op_id("mt_tiles"), sum_op = rt.op_id("mt_sum");
  CHECK(tiles_op != rt.op_id("mt_a_tiles"));
  CHECK(sum_op != rt.op_id("mt_a_sum"));
  test::MultiTileLoad load(rt, buf, tiles_op, sum_op, tiles_per_second, max_tiles);
  test::pause_under_load(load, 5ms);
  for (int i = 0; i < kFlips; ++i) {
    tile_cuts.push_back({rt.alias_set("mt_tiles", "mt_b_tiles"), 2});
    sum_cuts.push_back({rt.alias_set("mt_sum", "mt_b_sum"), 2});
    test::pause_under_load(load, 1ms);
    tile_cuts.push_back({rt.alias_rollback("mt_tiles"), 1});
    sum_cuts.push_back({rt.alias_rollback("mt_sum"), 1});
    test::pause_under_load(load, 1ms);
  }
  load.stop();
  CHECK(load.error() == "");
  CHECK_FALSE(load.ran_out());
  REQUIRE(test::drain_or_report(rt, 30s));
  const Stats s = rt.stats();
  CHECK(s.completed == s.submitted);
  CHECK(s.failed == 0);
  CHECK(s.submitted == load.submitted() + tile_cuts.size() + sum_cuts.size());  // tasks + control tasks
  CHECK(s.launches == launches);                                                 // no quiesce
  CHECK(test::completed_of(rt, tiles_op) == load.submitted_of(false));
  CHECK(test::completed_of(rt, sum_op) == load.submitted_of(true));
  const test::MultiTileReport r = test::check_multi_tile(load, buf, tile_cuts, sum_cuts, grid);
  CHECK(r.tasks == load.submitted());
  MESSAGE(r.tasks << " tasks (" << r.batched << " from batches, " << r.over_grid << " of at least twice the grid of "
                  << grid << " blocks), " << r.tiles << " tiles (at most " << max_tiles << " a task), "
                  << tile_cuts.size() + sum_cuts.size() << " alias switches");
}

TEST_CASE("dual slot: alias misuse fails clearly and changes nothing") {
  Runtime rt;
  rt.load_operator_source("tag_a.cu", test::tag_source("tag_a", 1));
  CHECK_THROWS_AS(rt.alias_set("x", "no_such_op"), Error);
  CHECK_THROWS_AS(rt.alias_rollback("x"), Error);
  rt.alias_set("x", "tag_a");
  CHECK_THROWS_AS(rt.alias_rollback("x"), Error);     // no previous target
  CHECK_THROWS_AS(rt.alias_set("x", "add"), Error);    // different argument size
  CHECK_THROWS_AS(rt.alias_set("tag_a", "tag_a"), Error);  // an operator, not an alias
  CHECK_THROWS_AS(rt.alias_set("y", "x"), Error);      // no alias chains
  CHECK_THROWS_AS(rt.remove_operator_source("tag_a.cu"), Error);  // the alias points at it
  CHECK(rt.op_id("x") >= GPUOS_BUILTIN_OP_COUNT);
}
