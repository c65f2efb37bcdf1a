#include "host/monitor.hpp"

#include <optional>
#include <string>

#include "host/device.hpp"
#include "host/driver.hpp"

namespace gpuos::detail {

Monitor::Monitor(CUcontext ctx, ResidentKernel& kernel, RunState& run, std::function<std::uint64_t()> activity,
                 std::chrono::microseconds slice, std::chrono::microseconds park)
    : ctx_(ctx), kernel_(kernel), run_(run), activity_(std::move(activity)), slice_(slice), park_(park) {}

void Monitor::start() {
  stop_.store(false);
  thread_ = std::thread([this] { loop(); });
}

void Monitor::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Monitor::reclaim_retired() {
  std::optional<ResidentKernel::Control> c = kernel_.try_control();
  if (!c || c->images().retired_count() == 0 || !c->running() || run_.closing()) return;
  if (kernel_.queue().issued() != kernel_.queue().retired()) return;
  try {
    c->stop();
    c->images().unload_retired();
    c->launch();
  } catch (const std::exception& e) {
    run_.set_fault(std::string("unloading retired generations while idle: ") + e.what());
  }
}

void Monitor::end_slice() {
  std::optional<ResidentKernel::Control> c = kernel_.try_control();
  if (!c || !c->running() || run_.closing() || run_.faulted()) return;
  try {
    c->stop();
    c->launch();
  } catch (const std::exception& e) {
    run_.set_fault(std::string("relaunching the kernel after its slice: ") + e.what());
  }
}

void Monitor::park() {
  std::optional<ResidentKernel::Control> c = kernel_.try_control();
  SubmitQueue& q = kernel_.queue();
  if (!c || !c->running() || run_.closing() || run_.faulted() || q.issued() != q.retired()) return;
  // Parked before the stop: a submission from here on wakes this thread (SubmitQueue::publish), and one
  // that raced with the stop is seen by the check after it.
  q.set_parked(true);
  try {
    c->stop();
    c->images().unload_retired();  // the device is idle anyway
    if (q.issued() != q.retired()) c->launch();
  } catch (const std::exception& e) {
    q.set_parked(false);
    run_.set_fault(std::string("leaving the GPU while idle: ") + e.what());
  }
}

void Monitor::unpark() {
  std::optional<ResidentKernel::Control> c = kernel_.try_control();  // else a switch holds it: next turn
  if (!c || c->running() || !kernel_.queue().parked() || run_.faulted()) return;
  try {
    c->launch();
  } catch (const std::exception& e) {
    run_.set_fault(std::string("launching the kernel for a task submitted while it was parked: ") + e.what());
  }
}

void Monitor::loop() {
  std::optional<CtxScope> scope;  // the context, and relaxed capture mode (CtxScope) for the thread's life
  try {
    scope.emplace(ctx_);
  } catch (const std::exception& e) {
    run_.set_fault(std::string("the monitor thread cannot use the context: ") + e.what());
    return;
  }
  using Clock = std::chrono::steady_clock;
  auto next_check = Clock::now();
  std::uint64_t seen_issued = ~0ull, seen_activity = 0;
  auto quiet_since = Clock::now();
  auto resident_since = Clock::now(), busy_at = Clock::now();
  std::uint64_t seen_launches = kernel_.launches(), last_issued = kernel_.queue().issued();
  SubmitQueue& q = kernel_.queue();
  while (!stop_.load()) {
    q.reap();
    const auto now = Clock::now();
    // Residency (gpuos_options slice_us, park_us): whoever launched the kernel, its slice starts then.
    if (const std::uint64_t l = kernel_.launches(); l != seen_launches) {
      seen_launches = l;
      resident_since = now;
    }
    // Idle: nothing in flight now and nothing submitted since the last turn (a caller that submits and
    // waits one task at a time leaves the ring empty most of the time, yet is not idle).
    const std::uint64_t issued_now = q.issued();
    const bool idle = issued_now == q.retired();
    if (!idle || issued_now != last_issued) busy_at = now;
    last_issued = issued_now;
    if (q.parked()) {
      if (!idle) unpark();
    } else if (kernel_.state() == KernelState::running) {
      const bool parks = park_.count() != 0;
      if (parks && now - busy_at >= park_)
        park();
      else if (slice_.count() != 0 && now - resident_since >= slice_)
        idle && parks ? park() : end_slice();  // idle: no relaunch until there is work
    }
    if (now >= next_check) {
      next_check = now + std::chrono::milliseconds(1);
      const std::uint64_t issued = q.issued(), activity = activity_ ? activity_() : 0;
      if (issued != seen_issued || activity != seen_activity || issued != q.retired()) {
        seen_issued = issued;
        seen_activity = activity;
        quiet_since = now;
      } else if (now - quiet_since >= kIdleReclaim) {
        reclaim_retired();
        quiet_since = now;
      }
      kernel_.watch();
    }
    if (q.parked())
      q.wait_for_work(std::chrono::microseconds(100));
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace gpuos::detail
