#include "host/monitor.hpp"

#include <optional>
#include <string>

#include "host/driver.hpp"

namespace gpuos::detail {

Monitor::Monitor(CUcontext ctx, ResidentKernel& kernel, RunState& run, std::function<std::uint64_t()> activity)
    : ctx_(ctx), kernel_(kernel), run_(run), activity_(std::move(activity)) {}

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
    c->stop(30.0);
    c->images().unload_retired();
    c->launch();
  } catch (const std::exception& e) {
    run_.set_fault(std::string("unloading retired generations while idle: ") + e.what());
  }
}

void Monitor::loop() {
  if (drv().cuCtxSetCurrent(ctx_) != CUDA_SUCCESS) return;
  using Clock = std::chrono::steady_clock;
  auto next_check = Clock::now();
  std::uint64_t seen_issued = ~0ull, seen_activity = 0;
  auto quiet_since = Clock::now();
  SubmitQueue& q = kernel_.queue();
  while (!stop_.load()) {
    q.reap();
    const auto now = Clock::now();
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
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace gpuos::detail
