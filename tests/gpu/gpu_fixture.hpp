// Shared pieces of the GPU suites: device buffers and copies (tools/cuda_support.hpp: the runtime's own
// driver loader, a non-blocking stream that never waits for the resident kernel), data, and the waits
// that report the runtime's state when they time out. Buffers must outlive the Runtime (declare them
// first): freeing device memory needs an idle device.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "gpuos/gpuos.hpp"
#include "tools/cuda_support.hpp"

namespace gpuos::test {

using support::copy_to_device;
using support::copy_to_host;
using support::use_device;

/// A device array of floats (tools/cuda_support.hpp): declare it before the Runtime, so it outlives it.
class DeviceBuffer : public support::DeviceArray<float> {
 public:
  explicit DeviceBuffer(std::size_t floats) : DeviceArray((use_device(), floats)) {}
};

/// An environment variable set for a scope (a runtime reads its configuration when it is created).
struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~ScopedEnv() { ::unsetenv(name); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

/// Deterministic random floats in [-1, 1).
std::vector<float> random_floats(std::size_t n, std::uint64_t seed);

/// n counters, each incremented by one task (y[e] += 1 through axpy): a task lost, run twice or run
/// with the wrong argument shows in count(). Declare it before the Runtime (its buffers outlive it).
class ExactlyOnce {
 public:
  explicit ExactlyOnce(std::size_t n) : y_(n), ones_(n) {
    ones_.upload(std::vector<float>(n, 1.0f));
    y_.upload(std::vector<float>(n, 0.0f));
  }
  std::size_t size() const { return y_.size(); }
  /// The task that increments counter e.
  Task task(std::size_t e) const { return ops::axpy(y_.get() + e, 1.0f, ones_.get() + e, 1); }
  struct Counts {
    std::size_t never = 0, twice = 0, other = 0;
  };
  Counts count() const {
    Counts c;
    for (float v : y_.download()) {
      c.never += v == 0.0f;
      c.twice += v == 2.0f;
      c.other += v != 0.0f && v != 1.0f && v != 2.0f;
    }
    return c;
  }

 private:
  DeviceBuffer y_, ones_;
};

/// A long loop's count divided by GPUOS_TEST_SCALE (a whole number >= 1; 1 when unset), and at least
/// `at_least`. Under compute-sanitizer the kernel runs two to three orders of magnitude slower:
/// scripts/gpu_run.sh's sanitize part sets the scale so that the suites finish, each case still checking
/// what it checks on fewer tasks. Ends the process on a value that is not such a number.
std::size_t scaled(std::size_t n, std::size_t at_least = 1);
/// `d` multiplied by GPUOS_TEST_SCALE: how long something that takes `d` at full speed may take in the
/// same run.
std::chrono::milliseconds slowed(std::chrono::milliseconds d);
/// GPUOS_TEST_SCALE (1 when unset).
std::size_t scale();
/// A pause of `d` that goes on while `done()` is false, up to `d` times the scale in all: exactly `d` at
/// full speed; under a sanitizer, where what it waits for (a load's next tasks, a refusal) comes orders
/// of magnitude later, until that has happened.
template <class Done>
void pause_until(std::chrono::microseconds d, Done done) {
  const auto end = std::chrono::steady_clock::now() + d * static_cast<std::chrono::microseconds::rep>(scale());
  std::this_thread::sleep_for(d);
  while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

/// Tasks of operator `op` the runtime counted as completed (its row of list_ops).
inline std::uint64_t completed_of(const Runtime& rt, std::uint32_t op) {
  for (const Runtime::OpInfo& o : rt.list_ops())
    if (o.id == op) return o.completed;
  FAIL_CHECK("no operator with id " << op << " in list_ops");
  return 0;
}

/// Drains with a deadline (`limit` at full speed: slowed() by GPUOS_TEST_SCALE); on timeout fails with
/// the runtime's state report (gpuos_diagnose), twice, 200 ms apart, so the report shows what still moves.
inline bool drain_or_report(Runtime& rt, std::chrono::milliseconds limit) {
  if (rt.drain(slowed(limit))) return true;
  const auto g = rt.generation();
  FAIL_CHECK("drain timed out (generation " << g.number << " from ticket " << g.first_ticket
                                           << "); runtime state:\n" << rt.diagnose());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  FAIL_CHECK("200 ms later:\n" << rt.diagnose());
  return false;
}

/// Waits until `running` (submitting threads count it down) reaches 0. Submitters block while the ring
/// is full, so if tasks stop completing they never finish: then fails with the runtime's state report
/// and ends the process, since the blocked threads cannot be joined. `limit` at full speed, as
/// drain_or_report's.
inline void await_submitters(Runtime& rt, const std::atomic<int>& running, std::chrono::milliseconds limit) {
  limit = slowed(limit);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (running.load() != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (running.load() == 0) return;
  FAIL_CHECK("submitters did not finish within " << limit.count() << " ms (tasks stopped completing); runtime state:\n"
                                                 << rt.diagnose());
  std::_Exit(1);
}


/// After a runtime faulted or hung (its kernel ended with a fault): the next runtime in this process
/// either works or is refused promptly with GPUOS_ERR_DEVICE_FAULT (the driver decides; recovering means
/// restarting the process).
void check_next_boot();

}  // namespace gpuos::test
