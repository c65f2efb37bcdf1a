// Shared by the switch suites: a tagging operator whose result says which version ran, submitting
// threads that record each task's ticket, and the check that every task ran exactly once on the version
// its ticket falls under.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"
#include "tools/tag_operator.hpp"

namespace gpuos::test {

/// The tagging operator (tools/tag_operator.hpp). Versions here are powers of two, so a task run twice
/// (2 * version) or never (0) cannot pass for another version.
using tools::tag_source;
using tools::TagArgs;

/// Threads that submit tag tasks to op id `op()` (re-read before each submit) until stopped or full.
class Load {
 public:
  Load(Runtime& rt, DeviceBuffer& out, unsigned threads, size_t per_thread, std::atomic<uint32_t>& op)
      : tickets_(threads, std::vector<uint64_t>(per_thread)), counts_(threads) {
    for (unsigned i = 0; i < threads; ++i)
      th_.emplace_back([&, i, per_thread] {
        size_t k = 0;
        for (; k < per_thread && !stop_.load(std::memory_order_relaxed); ++k) {
          const TagArgs a{out.get() + i * per_thread + k, 0};
          const Task task = Task::make(op.load(std::memory_order_acquire), 1, a);
          std::optional<Ticket> t;
          while (!(t = rt.try_submit(task))) {  // a full queue must not keep stop() from returning
            if (stop_.load()) return;
            std::this_thread::yield();
          }
          tickets_[i][k] = *t;
          counts_[i].store(k + 1, std::memory_order_release);
        }
      });
  }
  ~Load() { stop(); }
  void stop() {
    stop_.store(true);
    for (auto& t : th_)
      if (t.joinable()) t.join();
  }
  uint64_t submitted() const {
    uint64_t n = 0;
    for (const auto& c : counts_) n += c.load();
    return n;
  }
  const std::vector<std::vector<uint64_t>>& tickets() const { return tickets_; }
  size_t count(unsigned t) const { return counts_[t].load(); }

 private:
  std::vector<std::vector<uint64_t>> tickets_;
  std::vector<std::atomic<size_t>> counts_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> th_;
};

/// `cuts`: (first ticket, version) in increasing ticket order; a task with ticket t must hold the
/// version of the last cut <= t. Returns the number of tasks checked.
inline size_t check_cuts(const Load& load, const std::vector<float>& out, size_t per_thread,
                         const std::vector<std::pair<uint64_t, unsigned>>& cuts) {
  size_t checked = 0, wrong = 0, per_cut_seen = 0;
  std::vector<size_t> seen(cuts.size(), 0);
  for (size_t i = 0; i < load.tickets().size(); ++i) {
    for (size_t k = 0; k < load.count(static_cast<unsigned>(i)); ++k) {
      const uint64_t t = load.tickets()[i][k];
      auto it = std::upper_bound(cuts.begin(), cuts.end(), t,
                                 [](uint64_t v, const std::pair<uint64_t, unsigned>& c) { return v < c.first; });
      REQUIRE(it != cuts.begin());
      --it;
      const float want = static_cast<float>(it->second);
      const float got = out[i * per_thread + k];
      if (got != want) {
        if (wrong < 5) MESSAGE("ticket " << t << ": got " << got << ", expected version " << want);
        ++wrong;
      }
      ++seen[static_cast<size_t>(it - cuts.begin())];
      ++checked;
    }
  }
  for (size_t c : seen) per_cut_seen += c > 0;
  CHECK(wrong == 0);
  // Every switch happened under load: tasks on both sides of each cut.
  CHECK(per_cut_seen == cuts.size());
  return checked;
}

}  // namespace gpuos::test
