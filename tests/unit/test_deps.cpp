// The device's dependency protocol (kernel/deps.hpp) run on the CPU with threads, as the device runs
// it: an in-order front end arms tickets in a small ring and registers their waits; workers complete
// tasks (closing the waiter list before the completion record), notify waiters and run whatever became
// ready; the host retires tickets in order, and a retired ticket's record is reused by a later one.
// Checked for every task: it ran once, after every ticket it waits for had completed, and a task with a
// failed ancestor did not run and carries a failed ancestor as its cause.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "kernel/deps.hpp"

using namespace gpuos;
using namespace gpuos::abi;

namespace {

struct Sim {
  static constexpr uint32_t kCap = 64;  // ring and device queue
  static constexpr uint64_t kMask = kCap - 1;
  uint64_t n;
  std::vector<std::vector<uint64_t>> deps;  // per ticket
  std::vector<std::vector<char>> weak;      // per dependency: it only orders the task
  std::vector<char> fails;                  // the task itself fails when run
  std::vector<TaskRecord> dq = std::vector<TaskRecord>(kCap);
  // Observations.
  std::vector<std::atomic<int>> ran, finished, completed;  // finished: its work is done (tiles, or none)
  std::vector<std::atomic<uint64_t>> cause_seen;  // cause a task completed with (0: ok)
  std::atomic<uint64_t> completed_upto{0};         // retired watermark (host)
  std::atomic<bool> violation{false};
  // Ready queue between the front end / completers and the workers (the board's role).
  std::mutex mu;
  std::condition_variable cv;
  std::deque<uint64_t> ready;
  std::atomic<uint64_t> done_count{0};

  explicit Sim(uint64_t n_) : n(n_), deps(n_), weak(n_), fails(n_), ran(n_), finished(n_), completed(n_), cause_seen(n_) {
    std::memset(static_cast<void*>(dq.data()), 0, dq.size() * sizeof(TaskRecord));
  }

  void push_ready(uint64_t t) {
    {
      std::lock_guard<std::mutex> l(mu);
      ready.push_back(t);
    }
    cv.notify_one();
  }

  /// A worker completes ticket t (ran or not) with `cause`.
  void complete(uint64_t t, uint64_t cause) {
    TaskRecord& r = dq[t & kMask];
    finished[t].store(1);  // its last tile
    const uint32_t head = deps::close_waiters(r, t, cause);  // before the "completion record"
    cause_seen[t].store(cause);
    deps::for_each_waiter(dq.data(), head, [&](uint32_t index, uint32_t j) {
      TaskRecord& w = dq[index];
      if (deps::dep_done(w, deps::inherited(w, j, cause))) push_ready(w.ticket);
    });
    completed[t].fetch_add(1);  // the completion record: the host may retire t and reuse its record now
    done_count.fetch_add(1);
  }

  void run_task(uint64_t t) {
    TaskRecord& r = dq[t & kMask];
    const uint64_t cause = r.cause;
    if (cause == 0) {
      for (uint64_t d : deps[t])
        if (finished[d].load() == 0) violation = true;  // ran before a dependency finished
      ran[t].fetch_add(1);
      complete(t, fails[t] ? t + 1 : 0);
    } else {
      complete(t, cause);
    }
  }
};

void run_sim(uint64_t n, uint32_t workers, uint32_t window, double fail_rate, uint64_t seed) {
  Sim s(n);
  std::mt19937_64 rng(seed);
  for (uint64_t t = 0; t < n; ++t) {
    const uint32_t k = static_cast<uint32_t>(rng() % (kMaxDeps + 1));
    for (uint32_t i = 0; i < k && t > 0; ++i) {
      const uint64_t back = 1 + rng() % std::min<uint64_t>(t, window);
      const uint64_t d = t - back;
      if (std::find(s.deps[t].begin(), s.deps[t].end(), d) == s.deps[t].end()) {
        s.deps[t].push_back(d);
        s.weak[t].push_back(rng() % 4 == 0);
      }
    }
    s.fails[t] = std::uniform_real_distribution<double>(0, 1)(rng) < fail_rate;
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (uint32_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (;;) {
        uint64_t t;
        {
          std::unique_lock<std::mutex> l(s.mu);
          s.cv.wait(l, [&] { return !s.ready.empty() || stop.load(); });
          if (s.ready.empty()) return;
          t = s.ready.front();
          s.ready.pop_front();
        }
        s.run_task(t);
      }
    });
  // The host's retire watermark: tickets complete in order up to here; a record is reused only after.
  std::thread reaper([&] {
    uint64_t r = 0;
    while (r < n && !stop.load()) {
      while (r < n && s.completed[r].load() > 0) ++r;
      s.completed_upto.store(r);
      std::this_thread::yield();
    }
  });
  // A lost wake-up shows as tasks that never complete: give up after a minute, and say so.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto late = [&] { return std::chrono::steady_clock::now() > give_up; };
  // The front end: arms tickets in order, within the ring's window, and registers their waits.
  for (uint64_t t = 0; t < n && !late(); ++t) {
    while (t >= s.completed_upto.load() + Sim::kCap && !late()) std::this_thread::yield();  // ring full
    if (late()) break;
    // A dependency the host saw retired is dropped at submit (its failure, if any, becomes the cause).
    const uint64_t retired = s.completed_upto.load();
    uint64_t known_cause = 0;
    std::vector<uint64_t> live;
    uint32_t weak = 0;
    for (size_t i = 0; i < s.deps[t].size(); ++i) {
      const uint64_t d = s.deps[t][i];
      if (d >= retired) {
        if (s.weak[t][i]) weak |= 1u << live.size();
        live.push_back(d);
      } else if (s.cause_seen[d].load() && !s.weak[t][i] && !known_cause) {
        known_cause = s.cause_seen[d].load();
      }
    }
    TaskRecord& r = s.dq[t & Sim::kMask];
    r.ticket = t;
    if (deps::register_waits(s.dq.data(), Sim::kMask, t, static_cast<uint32_t>(live.size()),
                             [&](uint32_t j) { return live[j]; }, known_cause, weak))
      s.push_ready(t);
  }
  while (s.done_count.load() < n && !late()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  stop = true;
  s.cv.notify_all();
  for (auto& th : pool) th.join();
  reaper.join();
  REQUIRE_MESSAGE(s.done_count.load() == n, "tasks never completed: a wake-up was lost");

  CHECK_FALSE(s.violation.load());
  // What a task's cause must be: a failed ancestor (a task that ran and failed) through dependencies that
  // are not order-only, or none.
  std::vector<char> doomed(n, 0);  // some ancestor failed
  for (uint64_t t = 0; t < n; ++t)
    for (size_t i = 0; i < s.deps[t].size(); ++i) {
      const uint64_t d = s.deps[t][i];
      if (!s.weak[t][i]) doomed[t] |= doomed[d] || (s.fails[d] && s.ran[d].load() == 1);
    }
  uint64_t wrong = 0, ran_failed = 0;
  for (uint64_t t = 0; t < n; ++t) {
    wrong += s.completed[t].load() != 1;
    if (doomed[t]) {
      wrong += s.ran[t].load() != 0;
      const uint64_t c = s.cause_seen[t].load();
      wrong += c == 0 || c > t || !s.fails[c - 1];  // the root cause: an earlier task that failed running
    } else {
      wrong += s.ran[t].load() != 1;
      wrong += s.cause_seen[t].load() != (s.fails[t] ? t + 1 : 0);
    }
    ran_failed += s.fails[t] && s.ran[t].load();
  }
  CHECK(wrong == 0);
  if (fail_rate > 0) CHECK(ran_failed > 0);
}

}  // namespace

TEST_CASE("deps: every task runs once, after its dependencies, through record reuse, with 1 to 8 workers") {
  for (uint32_t workers : {1u, 2u, 8u}) run_sim(50000, workers, 48, 0.0, 7 + workers);
}

TEST_CASE("deps: a failed task fails its dependents with a failed ancestor as the cause; order-only links pass no failure") {
  run_sim(50000, 4, 48, 0.002, 99);
  run_sim(20000, 4, 8, 0.05, 5);  // short windows: long chains of failures
}

TEST_CASE("deps: waiter words of a former ticket read as empty and open; a closed one as complete") {
  std::vector<TaskRecord> dq(4);
  std::memset(static_cast<void*>(dq.data()), 0, dq.size() * sizeof(TaskRecord));
  const uint64_t mask = 3;
  // A ring of 4 records: ticket 7 (record 3) waits for 6 (record 2, which still holds the closed word of
  // ticket 2, a lap before) and for 5 (record 1).
  dq[2].waiters = wait_word(2, kWaitDone);
  dq[3].ticket = 7;
  uint64_t cause = 0;
  CHECK(deps::wait_for(dq.data(), mask, 7, 0, 6, cause) == deps::Wait::registered);  // 6 is open: registered
  CHECK(wait_is_for(dq[2].waiters, 6));
  CHECK((dq[2].waiters & kWaitHeadMask) == deps::link_id(3, 0) + 1);
  const uint32_t head = deps::close_waiters(dq[2], 6, 0);
  CHECK(head == deps::link_id(3, 0) + 1);
  CHECK(deps::wait_for(dq.data(), mask, 7, 1, 6, cause) == deps::Wait::satisfied);
  deps::close_waiters(dq[1], 5, 42);
  CHECK(deps::wait_for(dq.data(), mask, 7, 2, 5, cause) == deps::Wait::failed);
  CHECK(cause == 42);
}

TEST_CASE("deps: graph arrivals count up across launches") {
  uint64_t arrived = 0;
  for (int launch = 0; launch < 3; ++launch) {
    CHECK_FALSE(deps::arrive(arrived, 3));
    CHECK_FALSE(deps::arrive(arrived, 3));
    CHECK(deps::arrive(arrived, 3));  // the third predecessor of this launch, with no reset in between
  }
  CHECK(arrived == 9);
}
