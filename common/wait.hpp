// Waiting for a condition another agent makes true (the GPU, the driver, another host thread): the
// project's spin-then-sleep loop, with a deadline. (The stream doorbells' poller, host/doors.cpp, has a
// loop of its own: it watches many doors at once, for ever, and a door armed while it sleeps wakes it.)
//
// Contract: wait_until(pred, deadline, backoff) calls pred() until it returns true (then returns true)
// or the deadline has passed (then returns false, after one last call of pred()). For the first
// `backoff.spin` it calls pred() back to back with a CPU pause between calls; after that it sleeps
// `backoff.sleep` between calls. pred() may throw; the exception propagates. A deadline of
// Deadline::never() never expires.
//
// Why spin first: the conditions waited on here usually turn true within microseconds (a completion
// record, a kernel that stops), and a sleep costs ~50 us of latency on a loaded host; why sleep later: a
// long wait must not take a core from the threads that serve.
#pragma once

#include <chrono>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace gpuos::common {

using Clock = std::chrono::steady_clock;

/// A point in time after which a wait gives up.
class Deadline {
 public:
  static Deadline never() { return Deadline(Clock::time_point::max()); }
  static Deadline after(std::chrono::nanoseconds d) {
    return d.count() < 0 ? never() : Deadline(Clock::now() + d);
  }
  /// From a timeout in ns as the C ABI takes it: negative = never, 0 = already expired.
  static Deadline from_ns(long long ns) { return ns < 0 ? never() : after(std::chrono::nanoseconds(ns)); }
  bool expired() const { return at_ != Clock::time_point::max() && Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }

 private:
  explicit Deadline(Clock::time_point t) : at_(t) {}
  Clock::time_point at_;
};

/// How a wait spends its time: spinning for `spin`, then sleeping `sleep` between checks.
struct Backoff {
  std::chrono::nanoseconds spin;
  std::chrono::microseconds sleep;
};
/// A waiter for a completion the GPU posts (waits, drains): latency first.
inline constexpr Backoff kCompletionBackoff{std::chrono::milliseconds(2), std::chrono::microseconds(20)};
/// A submitter blocked on a full ring: room comes back as fast as tasks complete.
inline constexpr Backoff kRoomBackoff{std::chrono::microseconds(20), std::chrono::microseconds(10)};
/// A control step of the runtime (a kernel's start or stop): usually tens of microseconds.
inline constexpr Backoff kControlBackoff{std::chrono::milliseconds(5), std::chrono::microseconds(20)};

/// One CPU pause in a spin loop (platform contract: a hint only, any duration).
inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

template <class Pred>
bool wait_until(Pred&& pred, const Deadline& deadline, const Backoff& backoff) {
  if (pred()) return true;
  if (deadline.expired()) return false;
  // While spinning the clock is read once every 64 checks: a check (a load of a completion record) is
  // cheaper than the clock, and a clock read between checks lengthens the time to see the condition.
  const auto spin_until = Clock::now() + backoff.spin;
  bool spinning = true;
  for (unsigned n = 1;; ++n) {
    if (spinning) {
      cpu_relax();
      if ((n & 63) == 0) {
        if (deadline.expired()) return pred();
        spinning = Clock::now() < spin_until;
      }
    } else {
      if (deadline.expired()) return pred();
      std::this_thread::sleep_for(backoff.sleep);
    }
    if (pred()) return true;
  }
}

}  // namespace gpuos::common
