// The host side of the ring protocol, driven by a CPU thread that consumes slots the way the device's
// front end does (in ticket order, by stamp) and writes completion records. This checks the host's
// half: reservation, back-pressure, publication, reaping, failure memory. The device's half is checked
// by the GPU suites.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "common/atomic16.hpp"
#include "host/submit_queue.hpp"

using namespace gpuos;
using namespace gpuos::detail;

namespace {

struct Rings {
  explicit Rings(uint32_t log2)
      : log2(log2),
        ring(static_cast<abi::Slot*>(std::aligned_alloc(128, sizeof(abi::Slot) << log2))),
        comp(static_cast<abi::Completion*>(std::aligned_alloc(64, sizeof(abi::Completion) << log2))) {
    std::memset(ring, 0, sizeof(abi::Slot) << log2);
    std::memset(comp, 0, sizeof(abi::Completion) << log2);
  }
  ~Rings() {
    std::free(ring);
    std::free(comp);
  }
  uint32_t log2;
  abi::Slot* ring;
  abi::Completion* comp;
};

abi::Payload payload_for(uint64_t t) {
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = static_cast<uint16_t>(t % 7);
  p.arg_bytes = 8;
  p.tiles = 1;
  std::memcpy(p.args, &t, sizeof(t));
  return p;
}

/// Consumes tickets in order like the front end; completes each with `status_of(t)`.
class FakeFrontEnd {
 public:
  FakeFrontEnd(Rings& r, uint32_t (*status_of)(uint64_t)) : r_(r), status_of_(status_of) {}
  ~FakeFrontEnd() { stop(); }
  void start() {
    th_ = std::thread([this] { loop(); });
  }
  void stop() {
    stop_ = true;
    if (th_.joinable()) th_.join();
  }
  uint64_t consumed() const { return head_.load(); }
  std::atomic<uint64_t> mismatches{0};

 private:
  void loop() {
    const uint64_t mask = (1ull << r_.log2) - 1;
    while (!stop_) {
      const uint64_t t = head_.load();
      abi::Slot s;
      // Chunk by chunk, like the device: a chunk of a later lap has another stamp, then not ready.
      for (uint32_t i = 0; i < abi::kSlotChunks; ++i) load16(&s.c[i], &r_.ring[t & mask].c[i]);
      abi::Payload p;
      if (!abi::decode_slot(s, abi::stamp_of(t, r_.log2), p)) {
        std::this_thread::yield();
        continue;
      }
      uint64_t inside = 0;
      std::memcpy(&inside, p.args, sizeof(inside));
      if (inside != t || p.op != t % 7) mismatches++;
      abi::Completion c{t + 1, status_of_(t), static_cast<uint32_t>(t)};
      // One 16-byte store, like the device's completion write.
      store16(&r_.comp[t & mask], &c);
      head_.store(t + 1);
    }
  }
  Rings& r_;
  uint32_t (*status_of_)(uint64_t);
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> head_{0};
  std::thread th_;
};

uint32_t all_ok(uint64_t) { return abi::kTaskOk; }
uint32_t every_97th_fails(uint64_t t) { return t % 97 == 5 ? abi::kTaskBadArgs : abi::kTaskOk; }

}  // namespace

TEST_CASE("the ring refuses a ticket beyond capacity until the oldest retires") {
  Rings r(6);
  SubmitQueue q(r.ring, r.comp, 6);
  uint64_t first = 0;
  for (uint64_t i = 0; i < 64; ++i) {
    REQUIRE(q.try_reserve(1, first));
    CHECK(first == i);
    q.publish(first, payload_for(first));
  }
  CHECK_FALSE(q.try_reserve(1, first));  // full: back-pressure, nothing issued
  CHECK(q.issued() == 64);
  CHECK_FALSE(q.try_reserve(0, first));

  FakeFrontEnd fe(r, all_ok);
  fe.start();
  while (q.reap() < 64) std::this_thread::yield();
  REQUIRE(q.try_reserve(64, first));  // a whole lap fits again
  CHECK(first == 64);
  for (uint64_t t = 64; t < 128; ++t) q.publish(t, payload_for(t));
  while (q.reap() < 128) std::this_thread::yield();
  fe.stop();
  CHECK(fe.mismatches == 0);
  CHECK(q.completed_of_op(0) + q.completed_of_op(1) + q.completed_of_op(2) + q.completed_of_op(3) +
            q.completed_of_op(4) + q.completed_of_op(5) + q.completed_of_op(6) ==
        128);
}

TEST_CASE("many producers, one consumer: every ticket once, in order, with its own payload") {
  Rings r(8);
  SubmitQueue q(r.ring, r.comp, 8);
  FakeFrontEnd fe(r, all_ok);
  fe.start();
  constexpr int kThreads = 4, kPerThread = 50000;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> th;
  for (int i = 0; i < kThreads; ++i) {
    th.emplace_back([&, i] {
      for (int k = 0; k < kPerThread; ++k) {
        const uint32_t n = 1 + (k % 3);  // mix of single submits and small batches
        uint64_t first;
        while (!q.try_reserve(n, first)) {
          q.reap();
          std::this_thread::yield();
        }
        for (uint32_t j = 0; j < n; ++j) {
          q.publish(first + j, payload_for(first + j));
          got[i].push_back(first + j);
        }
      }
    });
  }
  for (auto& t : th) t.join();
  const uint64_t total = q.issued();
  while (q.reap() < total) std::this_thread::yield();
  fe.stop();
  std::set<uint64_t> all;
  size_t n = 0;
  for (auto& v : got) {
    n += v.size();
    all.insert(v.begin(), v.end());
  }
  CHECK(n == total);
  CHECK(all.size() == total);  // no ticket issued twice
  CHECK(*all.rbegin() == total - 1);
  CHECK(fe.consumed() == total);
  CHECK(fe.mismatches == 0);
  SubmitQueue::Result res;
  CHECK(q.poll(0, res));
  CHECK(q.poll(total - 1, res));
}

TEST_CASE("failures are remembered after their completion record is reused") {
  Rings r(6);
  SubmitQueue q(r.ring, r.comp, 6);
  FakeFrontEnd fe(r, every_97th_fails);
  fe.start();
  for (uint64_t t = 0; t < 1000; ++t) {
    uint64_t first;
    while (!q.try_reserve(1, first)) q.reap();
    q.publish(first, payload_for(first));
  }
  while (q.reap() < 1000) std::this_thread::yield();
  fe.stop();
  uint64_t failed = 0;
  for (uint64_t t = 0; t < 1000; ++t) {
    SubmitQueue::Result res;
    REQUIRE(q.poll(t, res));
    const bool should_fail = t % 97 == 5;
    CHECK((res.status != abi::kTaskOk) == should_fail);
    failed += should_fail;
  }
  CHECK(q.failed() == failed);
}

TEST_CASE("poll says pending until the record for that exact ticket arrives") {
  Rings r(6);
  SubmitQueue q(r.ring, r.comp, 6);
  uint64_t first;
  REQUIRE(q.try_reserve(2, first));
  q.publish(0, payload_for(0));
  q.publish(1, payload_for(1));
  SubmitQueue::Result res;
  CHECK_FALSE(q.poll(0, res));
  // Complete ticket 1 first: the watermark must not pass ticket 0.
  r.comp[1] = abi::Completion{2, abi::kTaskOk, 0};
  CHECK(q.poll(1, res));
  CHECK_FALSE(q.poll(0, res));
  CHECK(q.reap() == 0);
  r.comp[0] = abi::Completion{1, abi::kTaskBadOp, 9};
  CHECK(q.poll(0, res));
  CHECK(res.status == abi::kTaskBadOp);
  CHECK(res.detail == 9);
  CHECK(q.reap() == 2);
  CHECK(q.failed() == 1);
}

TEST_CASE("a slot says more follow when a later ticket was already out at its publication") {
  Rings r(6);
  SubmitQueue q(r.ring, r.comp, 6);
  auto hints_of = [&](uint64_t t) {
    abi::Payload p;
    REQUIRE(abi::decode_slot(r.ring[t & 63], abi::stamp_of(t, 6), p));
    return p.hints;
  };
  uint64_t first = 0;
  REQUIRE(q.try_reserve(3, first));  // a batch: all but its last say more follow
  for (uint64_t t = first; t < first + 3; ++t) q.publish(t, payload_for(t));
  CHECK(hints_of(0) == abi::kHintMore);
  CHECK(hints_of(1) == abi::kHintMore);
  CHECK(hints_of(2) == 0);
  REQUIRE(q.try_reserve(1, first));  // a lone submit
  q.publish(first, payload_for(first));
  CHECK(hints_of(3) == 0);
  uint64_t a = 0, b = 0;  // two threads' submits: the first published after the second reserved
  REQUIRE(q.try_reserve(1, a));
  REQUIRE(q.try_reserve(1, b));
  q.publish(b, payload_for(b));
  q.publish(a, payload_for(a));
  CHECK(hints_of(a) == abi::kHintMore);
  CHECK(hints_of(b) == 0);
  // The hint is not part of the task: the payload's own bytes are untouched.
  abi::Payload p;
  REQUIRE(abi::decode_slot(r.ring[a & 63], abi::stamp_of(a, 6), p));
  CHECK(p.op == a % 7);
  CHECK(p.arg_bytes == 8);
}

TEST_CASE("the current watermark covers every completion a poll has seen, while another thread reaps") {
  Rings r(6);
  SubmitQueue q(r.ring, r.comp, 6);
  FakeFrontEnd fe(r, all_ok);
  fe.start();
  // Another thread reaps all the time (as the monitor and other waiters do): reap() then often finds
  // the lock taken and returns a watermark that lags.
  std::atomic<bool> stop{false};
  std::thread reaper([&] {
    while (!stop) q.reap();
  });
  uint64_t behind = 0;
  for (uint64_t t = 0; t < 20000; ++t) {
    uint64_t first;
    while (!q.try_reserve(1, first)) std::this_thread::yield();
    q.publish(first, payload_for(first));
    SubmitQueue::Result res;
    while (!q.poll(t, res)) std::this_thread::yield();
    // t and every ticket before it have completed (each was waited for in turn).
    behind += q.reap_current() < t + 1;
  }
  stop = true;
  reaper.join();
  fe.stop();
  CHECK(behind == 0);
}
