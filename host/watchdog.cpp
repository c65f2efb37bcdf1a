#include "host/watchdog.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>

#include "host/device.hpp"
#include "host/driver.hpp"

namespace gpuos::detail {

// ---- deadlines ------------------------------------------------------------------------------------------
Deadlines::Deadlines(std::uint32_t runtime_ms, std::uint32_t scale) : runtime_ms_(runtime_ms), scale_(scale) {
  for (auto& m : op_ms_) m.store(0, std::memory_order_relaxed);
}

std::uint32_t Deadlines::scaled(std::uint32_t ms) const {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(std::uint64_t{ms} * scale_, UINT32_MAX));
}

void Deadlines::set_op(std::uint32_t op, std::uint32_t ms) {
  op_ms_[op % GPUOS_MAX_OPS].store(ms, std::memory_order_relaxed);
}

void Deadlines::set_task(std::uint64_t ticket, std::uint32_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  task_ms_[ticket] = ms;
  have_tasks_.store(true, std::memory_order_release);
}

std::uint32_t Deadlines::of(std::uint64_t ticket, std::uint32_t op) const {
  if (have_tasks_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = task_ms_.find(ticket); it != task_ms_.end()) return scaled(it->second);
  }
  const std::uint32_t o = op_ms_[op % GPUOS_MAX_OPS].load(std::memory_order_relaxed);
  return scaled(o != 0 ? o : runtime_ms_);
}

void Deadlines::forget_below(std::uint64_t retired) {
  if (!have_tasks_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(task_ms_, [&](const auto& kv) { return kv.first < retired; });
  have_tasks_.store(!task_ms_.empty(), std::memory_order_release);
}

std::uint32_t Deadlines::longest() const {
  std::uint32_t m = runtime_ms_;
  for (const auto& o : op_ms_) m = std::max(m, o.load(std::memory_order_relaxed));
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& kv : task_ms_) m = std::max(m, kv.second);
  return scaled(m);
}

namespace {

bool busy(const abi::BlockWork& w) { return (w.call & abi::kWorkBusy) != 0; }
bool same_call(const abi::BlockWork& a, const abi::BlockWork& b) {
  return a.ticket == b.ticket && a.tile == b.tile && a.call == b.call;
}
long long ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

}  // namespace

// ---- what the blocks run ------------------------------------------------------------------------------
void BlockWatch::update(const std::uint16_t* sm, const abi::BlockWork* work, std::uint32_t n, Clock::time_point now) {
  sm_.assign(sm, sm + n);
  seen_.resize(n);
  for (std::uint32_t b = 0; b < n; ++b) {
    const abi::BlockWork& w = work[b];
    if (!busy(w) || !busy(seen_[b].work) || !same_call(w, seen_[b].work)) seen_[b] = Seen{w, now};
  }
}

std::string BlockWatch::describe(std::uint32_t block, const Seen& s, Clock::time_point now,
                                 const std::function<std::string(std::uint32_t)>& op_name) const {
  const std::uint32_t op = s.work.call & 0xffffu;
  std::string d = "block " + std::to_string(block);
  if (block < sm_.size() && sm_[block] != 0xffffu) d += " (SM " + std::to_string(sm_[block]) + ")";
  const std::string name = op_name(op);
  d += " runs task " + std::to_string(s.work.ticket) + ", operator " +
       (name.empty() ? std::to_string(op) : "'" + name + "' (id " + std::to_string(op) + ")") + ", ";
  d += s.work.tile == abi::kWorkFinish ? std::string("its finish function") : "tile " + std::to_string(s.work.tile);
  d += ", for " + std::to_string(ms_between(s.since, now)) + " ms";
  return d;
}

std::string BlockWatch::overdue(const Deadlines& deadlines, Clock::time_point now,
                                const std::function<std::string(std::uint32_t)>& op_name) const {
  for (std::uint32_t b = 0; b < seen_.size(); ++b) {
    const Seen& s = seen_[b];
    if (!busy(s.work)) continue;
    const std::uint32_t limit = deadlines.of(s.work.ticket, s.work.call & 0xffffu);
    if (limit != 0 && ms_between(s.since, now) > limit)
      return describe(b, s, now, op_name) + ", past its deadline of " + std::to_string(limit) + " ms";
  }
  return {};
}

std::string BlockWatch::report(const Deadlines& deadlines, Clock::time_point now,
                               const std::function<std::string(std::uint32_t)>& op_name) const {
  std::string lines;
  std::uint32_t idle = 0;
  for (std::uint32_t b = 0; b < seen_.size(); ++b) {
    if (!busy(seen_[b].work)) {
      ++idle;
      continue;
    }
    const std::uint32_t limit = deadlines.of(seen_[b].work.ticket, seen_[b].work.call & 0xffffu);
    lines += "  " + describe(b, seen_[b], now, op_name) +
             (limit ? " (deadline " + std::to_string(limit) + " ms)" : std::string(" (no deadline)")) + "\n";
  }
  return std::to_string(seen_.size() - idle) + " in an operator call, " + std::to_string(idle) + " between calls\n" + lines;
}

// ---- the watchdog ---------------------------------------------------------------------------------------
Watchdog::Watchdog(CUcontext ctx, ResidentKernel& kernel, RunState& run, Deadlines& deadlines,
                   std::function<std::string(std::uint32_t)> op_name)
    : ctx_(ctx), kernel_(kernel), run_(run), deadlines_(deadlines), op_name_(std::move(op_name)) {}

void Watchdog::start() {
  stop_.store(false);
  thread_ = std::thread([this] { loop(); });
}

void Watchdog::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_ && driver_loaded() && !run_.faulted()) drv().cuStreamDestroy(stream_);
  stream_ = nullptr;
}

bool Watchdog::give_up(const std::string& why) {
  if (!run_.set_fault(why, GPUOS_ERR_HUNG)) return false;
  kernel_.abort();
  return true;
}

bool Watchdog::sample(Clock::time_point now) {
  const std::uint32_t grid = std::min<std::uint32_t>(kernel_.grid(), abi::kMaxBlockTable);
  const CUdeviceptr ds = kernel_.device_state();
  if (grid == 0 || ds == 0) return false;
  if (!stream_ && drv().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return false;
  sm_.resize(grid);
  work_.resize(grid);
  if (drv().cuMemcpyDtoHAsync(sm_.data(), ds + offsetof(abi::DeviceState, block_sm), sizeof(sm_[0]) * grid, stream_) !=
          CUDA_SUCCESS ||
      drv().cuMemcpyDtoHAsync(work_.data(), ds + offsetof(abi::DeviceState, work), sizeof(work_[0]) * grid, stream_) !=
          CUDA_SUCCESS ||
      drv().cuStreamSynchronize(stream_) != CUDA_SUCCESS)
    return false;
  watch_.update(sm_.data(), work_.data(), grid, now);
  return true;
}

void Watchdog::loop() {
  std::optional<CtxScope> scope;
  try {
    scope.emplace(ctx_);
  } catch (const std::exception&) {
    return;  // the monitor reports a context this thread cannot use
  }
  while (!stop_.load()) {
    std::this_thread::sleep_for(kPeriod);
    if (run_.faulted()) continue;
    const SubmitQueue& q = kernel_.queue();
    const std::uint64_t retired = q.retired();
    deadlines_.forget_below(retired);
    if (q.issued() == retired) continue;  // nothing in flight: nothing can be running
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const Clock::time_point now = Clock::now();
      if (sample(now)) why = watch_.overdue(deadlines_, now, op_name_);
    }
    if (!why.empty())
      give_up("the watchdog: " + why + "; the runtime stopped serving, every pending task failed and the kernel was "
              "ended (restart the process to use the GPU again)");
  }
}

std::string Watchdog::report() {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = Clock::now();
  bool fresh = false;
  if (!run_.faulted()) {
    try {
      CtxScope scope(ctx_);
      fresh = sample(now);
    } catch (const std::exception&) {
    }
  }
  if (!watch_.seen()) return "blocks: not seen yet\n";
  return std::string("blocks") + (fresh ? "" : " (as last seen)") + ": " + watch_.report(deadlines_, now, op_name_);
}

}  // namespace gpuos::detail
