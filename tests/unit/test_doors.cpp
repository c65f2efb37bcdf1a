// Stream doorbells without a GPU (host/doors.hpp): threads take the streams' place, each executing its
// rings in order (write flag = 0, write req = 1, wait for the flag), and a device thread takes the
// device's, completing each submitted "task" a little later.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "host/doors.hpp"

using gpuos::detail::Doors;
using namespace std::chrono_literals;

namespace {

struct Words {
  std::vector<std::uint32_t> req, flag;
  explicit Words(std::uint32_t n) : req(n, 0), flag(n, 0) {}
  Doors::Memory memory() { return Doors::Memory{req.data(), flag.data(), static_cast<std::uint32_t>(req.size())}; }
};

/// The device's part: completes submitted tasks a little later, in the order they were submitted.
class Device {
 public:
  Device() : thread_([this] { run(); }) {}
  ~Device() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  /// A task submitted now: the Done its ring's work returns.
  Doors::Done submit() {
    auto done = std::make_shared<std::atomic<bool>>(false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      q_.push_back(done);
    }
    cv_.notify_one();
    return [done] { return done->load(); };
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !q_.empty(); });
      if (q_.empty()) return;
      auto t = q_.front();
      q_.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(2us);
      t->store(true);
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<std::atomic<bool>>> q_;
  bool stop_ = false;
  std::thread thread_;
};

/// A stream's part: executes its rings in order, each as the memory operations would.
class Stream {
 public:
  explicit Stream(Doors& d) : doors_(d), thread_([this] { run(); }) {}
  ~Stream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void ring(std::uint32_t door) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      q_.push_back(door);
    }
    cv_.notify_one();
  }
  void hold(bool h) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = h;
    }
    cv_.notify_one();
  }
  std::uint64_t passed() const { return passed_.load(); }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || (!held_ && !q_.empty()); });
      if (stop_ && (held_ || q_.empty())) return;
      const std::uint32_t door = q_.front();
      q_.pop_front();
      lock.unlock();
      __atomic_store_n(doors_.flag(door), 0u, __ATOMIC_RELEASE);
      __atomic_store_n(doors_.req(door), 1u, __ATOMIC_RELEASE);
      while (__atomic_load_n(doors_.flag(door), __ATOMIC_ACQUIRE) != Doors::kSignaled) std::this_thread::yield();
      ++passed_;
      lock.lock();
    }
  }
  Doors& doors_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::uint32_t> q_;
  bool stop_ = false, held_ = false;
  std::atomic<std::uint64_t> passed_{0};
  std::thread thread_;
};

void no_check() {}

bool wait_for(const std::function<bool()>& done) {
  for (int i = 0; i < 20000 && !done(); ++i) std::this_thread::sleep_for(500us);
  return done();
}

}  // namespace

TEST_CASE("doors: every ring of four streams is answered once, in its stream's order, with doors reused") {
  constexpr int kStreams = 4, kRings = 3000;
  Words w(300);  // fewer doors than rings: each is reused many times
  auto doors = Doors::start(w.memory(), 200us);
  Device dev;
  std::vector<std::vector<int>> order(kStreams);
  std::mutex order_mu;
  {
    std::vector<std::unique_ptr<Stream>> streams;
    for (int s = 0; s < kStreams; ++s) streams.push_back(std::make_unique<Stream>(*doors));
    std::vector<std::thread> submitters;
    for (int s = 0; s < kStreams; ++s)
      submitters.emplace_back([&, s] {
        for (int k = 0; k < kRings; ++k) {
          const std::uint32_t d = doors->open(streams[s].get(), false, [&, s, k] {
            {
              std::lock_guard<std::mutex> lock(order_mu);
              order[s].push_back(k);
            }
            return dev.submit();
          }, no_check);
          streams[s]->ring(d);
          doors->arm(d);
        }
      });
    for (auto& t : submitters) t.join();
    for (int s = 0; s < kStreams; ++s) {
      Stream& st = *streams[s];
      CHECK(wait_for([&] { return st.passed() == kRings; }));
    }
  }
  for (int s = 0; s < kStreams; ++s) {
    REQUIRE(order[s].size() == kRings);
    bool in_order = true;
    for (int k = 0; k < kRings; ++k) in_order = in_order && order[s][k] == k;
    CHECK(in_order);
  }
  CHECK(doors->failures() == 0);
  doors->detach();
}

TEST_CASE("doors: a captured door is answered at every replay of its graph") {
  // Never freed: once detached with a captured door, the poller reads these words until the process ends.
  Words& w = *new Words(8);
  auto doors = Doors::start(w.memory(), 200us);
  Device dev;
  std::atomic<int> runs{0};
  const std::uint32_t d = doors->open(&w, true, [&] {
    ++runs;
    return dev.submit();
  }, no_check);
  doors->arm(d);
  {
    Stream replays(*doors);
    for (int i = 0; i < 500; ++i) replays.ring(d);
    CHECK(wait_for([&] { return replays.passed() == 500; }));
  }
  CHECK(runs.load() == 500);
  CHECK(doors->failures() == 0);
  doors->detach();  // the poller goes on answering the captured door with its flag alone
  {
    Stream late(*doors);
    for (int i = 0; i < 3; ++i) late.ring(d);
    CHECK(wait_for([&] { return late.passed() == 3; }));
  }
  CHECK(runs.load() == 500);
  CHECK(doors->failures() == 3);
}

TEST_CASE("doors: work that cannot submit, and detached doors, release their streams and are counted") {
  Words w(16);
  auto doors = Doors::start(w.memory(), 0us);  // no spin: every scan after the first sleeps
  Stream s(*doors);
  const std::uint32_t a = doors->open(&s, false, []() -> Doors::Done { throw gpuos::common::Failure(GPUOS_ERR_UNAVAILABLE, "closed"); }, no_check);
  s.ring(a);
  doors->arm(a);
  const std::uint32_t b = doors->open(&s, false, [] { return Doors::Done(); }, no_check);
  s.ring(b);
  doors->arm(b);
  CHECK(wait_for([&] { return s.passed() == 2; }));
  CHECK(doors->failures() == 2);
  std::atomic<int> runs{0};
  s.hold(true);
  const std::uint32_t c = doors->open(&s, false, [&] {
    ++runs;
    return Doors::Done([] { return true; });
  }, no_check);
  s.ring(c);
  doors->arm(c);
  doors->detach();  // watched: the poller answers it once its stream rings
  s.hold(false);
  CHECK(wait_for([&] { return s.passed() == 3; }));
  CHECK(runs.load() == 0);
  CHECK(doors->failures() == 3);
}

TEST_CASE("doors: a stream holds at most kMaxInFlight rings not answered; the wait can be given up") {
  Words w(200);
  auto doors = Doors::start(w.memory(), 200us);
  Device dev;
  Stream s(*doors);
  s.hold(true);
  auto open_one = [&](const std::function<void()>& check) {
    const std::uint32_t d = doors->open(&s, false, [&] { return dev.submit(); }, check);
    s.ring(d);
    doors->arm(d);
  };
  for (std::uint32_t i = 0; i < Doors::kMaxInFlight; ++i) open_one(no_check);
  int checks = 0;
  CHECK_THROWS_AS(open_one([&] {
    if (++checks == 5) throw gpuos::common::Failure(GPUOS_ERR_UNAVAILABLE, "closed");
  }), gpuos::common::Failure);
  CHECK(checks == 5);
  std::atomic<bool> opened{false};
  std::thread late([&] {
    open_one(no_check);
    opened = true;
  });
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(opened.load());
  s.hold(false);
  late.join();
  CHECK(opened.load());
  CHECK(wait_for([&] { return s.passed() == Doors::kMaxInFlight + 1; }));
  CHECK(doors->failures() == 0);
  doors->detach();
}

TEST_CASE("doors: a ring that could not be put on its stream gives its door back") {
  Words w(2);
  auto doors = Doors::start(w.memory(), 0us);
  int dummy = 0;
  const std::uint32_t a = doors->open(&dummy, false, [] { return Doors::Done([] { return true; }); }, no_check);
  const std::uint32_t b = doors->open(&dummy, false, [] { return Doors::Done([] { return true; }); }, no_check);
  CHECK(a != b);
  CHECK_THROWS_AS(doors->open(&dummy, false, [] { return Doors::Done([] { return true; }); }, no_check), gpuos::common::Failure);
  doors->cancel(b);
  const std::uint32_t c = doors->open(&dummy, false, [] { return Doors::Done([] { return true; }); }, no_check);
  CHECK(c == b);
  doors->cancel(c);
  doors->cancel(a);
  doors->detach();
}

TEST_CASE("doors: a stream waits until what its ring submitted is done, and a Done that throws releases it") {
  Words w(80);
  auto doors = Doors::start(w.memory(), 200us);
  Stream s(*doors);
  constexpr int kRings = 200;
  std::vector<std::atomic<bool>> completed(kRings);
  std::atomic<int> early{0};
  for (int k = 0; k < kRings; ++k) {
    const std::uint32_t d = doors->open(&s, false, [&, k]() -> Doors::Done {
      // The "task" completes on another thread a little later; until then the stream must wait.
      std::thread([&, k] {
        std::this_thread::sleep_for(20us);
        completed[k] = true;
      }).detach();
      if (k == kRings - 1) return [] () -> bool { throw gpuos::common::Failure(GPUOS_ERR_DEVICE_FAULT, "faulted"); };
      return [&, k] {
        if (k > 0 && !completed[k - 1].load()) ++early;  // the stream's previous ring was released early
        return completed[k].load();
      };
    }, no_check);
    s.ring(d);
    doors->arm(d);
  }
  CHECK(wait_for([&] { return s.passed() == kRings; }));
  CHECK(early.load() == 0);
  CHECK(wait_for([&] { return completed[kRings - 1].load(); }));
  CHECK(doors->failures() == 0);
  doors->detach();
}
