// The watchdog's judgment without a GPU: which deadline a call has, when a call counts as the same one,
// how old it is judged, and what is reported (host/watchdog.hpp: Deadlines, BlockWatch).
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "host/watchdog.hpp"

using gpuos::detail::BlockWatch;
using gpuos::detail::Deadlines;
using namespace std::chrono_literals;
namespace abi = gpuos::abi;

namespace {

abi::BlockWork busy_call(uint64_t ticket, uint32_t tile, uint32_t op, uint32_t count) {
  return abi::BlockWork{ticket, tile, ((count & 0x7fffu) << 16) | op | abi::kWorkBusy};
}
abi::BlockWork idle_after(uint32_t count) { return abi::BlockWork{0, 0, (count & 0x7fffu) << 16}; }

std::string name_of(uint32_t op) { return op == 9 ? "spin" : ""; }

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("watchdog deadlines: a task's own, else its operator's, else the runtime's") {
  Deadlines d(1000, 1);
  CHECK(d.of(5, 9) == 1000);
  d.set_op(9, 300);
  CHECK(d.of(5, 9) == 300);
  CHECK(d.of(5, 10) == 1000);
  d.set_task(5, 40);
  CHECK(d.of(5, 9) == 40);
  CHECK(d.of(6, 9) == 300);
  CHECK(d.longest() == 1000);
  d.set_op(10, 5000);
  CHECK(d.longest() == 5000);
  d.forget_below(6);  // task 5 retired
  CHECK(d.of(5, 9) == 300);
  d.set_op(9, 0);  // back to the runtime's
  CHECK(d.of(5, 9) == 1000);
  Deadlines none(0, 1);
  CHECK(none.of(1, 1) == 0);
  CHECK(none.longest() == 0);
}

TEST_CASE("watchdog deadlines: GPUOS_DEADLINE_SCALE multiplies each one read, without overflow") {
  Deadlines d(1000, 50);
  CHECK(d.of(5, 9) == 50000);
  d.set_op(9, 300);
  CHECK(d.of(5, 9) == 15000);
  d.set_task(5, 0xffffffffu);
  CHECK(d.of(5, 9) == 0xffffffffu);  // saturates
  CHECK(d.longest() == 0xffffffffu);
  Deadlines none(0, 50);
  CHECK(none.of(1, 1) == 0);  // no deadline stays none
}

TEST_CASE("watchdog judgment: the same call ages from the copy that first saw it; a new call starts over") {
  Deadlines d(100, 1);
  BlockWatch w;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint16_t> sm{3, 7};
  std::vector<abi::BlockWork> work{busy_call(42, 5, 9, 1), idle_after(0)};
  w.update(sm.data(), work.data(), 2, t0);
  CHECK(w.overdue(d, t0 + 100ms, name_of).empty());  // not past 100 ms yet (never judged early)
  w.update(sm.data(), work.data(), 2, t0 + 50ms);     // still the same call
  const std::string why = w.overdue(d, t0 + 101ms, name_of);
  INFO(why);
  CHECK(has(why, "block 0 (SM 3) runs task 42, operator 'spin' (id 9), tile 5, for 101 ms"));
  CHECK(has(why, "past its deadline of 100 ms"));
  // The block's next call with the same ticket, tile and operator (a chain's next node): a new call.
  work[0] = busy_call(42, 5, 9, 2);
  w.update(sm.data(), work.data(), 2, t0 + 101ms);
  CHECK(w.overdue(d, t0 + 150ms, name_of).empty());
  // Idle in between, then busy again with an identical record: a new call too.
  work[0] = idle_after(2);
  w.update(sm.data(), work.data(), 2, t0 + 160ms);
  work[0] = busy_call(42, 5, 9, 2);
  w.update(sm.data(), work.data(), 2, t0 + 170ms);
  CHECK(w.overdue(d, t0 + 260ms, name_of).empty());
  CHECK_FALSE(w.overdue(d, t0 + 271ms, name_of).empty());
}

TEST_CASE("watchdog judgment: no deadline, a task's longer deadline, finish functions and the report") {
  Deadlines d(0, 1);
  BlockWatch w;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint16_t> sm{0, 0xffff, 2};
  std::vector<abi::BlockWork> work{busy_call(7, abi::kWorkFinish, 9, 1), busy_call(8, 0, 11, 1), idle_after(4)};
  w.update(sm.data(), work.data(), 3, t0);
  CHECK(w.overdue(d, t0 + 1h, name_of).empty());  // no deadline anywhere
  d.set_op(11, 200);
  d.set_task(8, 1000);
  CHECK(w.overdue(d, t0 + 500ms, name_of).empty());  // task 8's own 1 s wins over its operator's 200 ms
  const std::string why = w.overdue(d, t0 + 1001ms, name_of);
  CHECK(has(why, "block 1 runs task 8, operator 11, tile 0"));  // no SM known, no name known
  const std::string r = w.report(d, t0 + 20ms, name_of);
  INFO(r);
  CHECK(has(r, "2 in an operator call, 1 between calls"));
  CHECK(has(r, "block 0 (SM 0) runs task 7, operator 'spin' (id 9), its finish function, for 20 ms (no deadline)"));
  CHECK(has(r, "(deadline 1000 ms)"));
}
