// Dual slot: two versions of an operator under two names, one alias flipping between them with
// alias_set / alias_rollback while threads keep submitting through the alias. The switch is a task in
// the queue: every task before it runs the old slot, every task after it the new one, with no quiesce
// (the kernel is never relaunched).
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/switch/switch_util.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

TEST_CASE("dual slot: 400 alias flips and rollbacks under load from 4 threads: ordered cuts, no relaunch") {
  constexpr unsigned kThreads = 4;
  constexpr size_t kPerThread = 1u << 20;
  test::DeviceBuffer out(kThreads * kPerThread);
  out.upload(std::vector<float>(kThreads * kPerThread, 0.0f));
  Runtime rt(Options().with_residency(0, 0));  // launches counted: no quiesce during the flips
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
    std::this_thread::sleep_for(5ms);
    for (int i = 0; i < 200; ++i) {
      cuts.push_back({rt.alias_set("tag", "tag_b"), 2});
      std::this_thread::sleep_for(500us);
      cuts.push_back({rt.alias_rollback("tag"), 1});
      std::this_thread::sleep_for(500us);
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
