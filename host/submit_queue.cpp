#include "host/submit_queue.hpp"

#include <cstring>

#include "common/atomic16.hpp"

namespace gpuos::detail {

SubmitQueue::SubmitQueue(abi::Slot* ring, const abi::Completion* completions, uint32_t log2_capacity)
    : ring_(ring), comp_(completions), log2_(log2_capacity), mask_((1ull << log2_capacity) - 1),
      ops_(1ull << log2_capacity, 0) {}

bool SubmitQueue::try_reserve(uint32_t n, uint64_t& first) {
  uint64_t cur = tail_.load(std::memory_order_relaxed);
  for (;;) {
    if (n == 0 || cur + n > retired_.load(std::memory_order_acquire) + capacity()) return false;
    if (tail_.compare_exchange_weak(cur, cur + n, std::memory_order_acq_rel, std::memory_order_relaxed)) {
      first = cur;
      return true;
    }
  }
}

void SubmitQueue::publish(uint64_t t, const abi::Payload& p, bool internal) {
  alignas(128) abi::Slot img;
  abi::encode_slot(p, abi::stamp_of(t, log2_), img);
  // A later ticket is already out (the rest of a batch, another thread's task): say so, and the front
  // end reads more slots in its next poll instead of one.
  if (tail_.load(std::memory_order_relaxed) > t + 1)
    img.c[0].w[0] |= static_cast<uint32_t>(abi::kHintMore) << 24;  // Payload::hints, byte 3 of word 0
  ops_[t & mask_] = internal ? kInternal : p.op;
  abi::Slot& dst = ring_[t & mask_];
  for (uint32_t i = 0; i < abi::kSlotChunks; ++i) store16(&dst.c[i], &img.c[i]);
  if (parked_.load(std::memory_order_seq_cst)) {
    {
      std::lock_guard<std::mutex> lock(wake_mutex_);
      woken_ = true;
    }
    wake_cv_.notify_one();
  }
}

void SubmitQueue::wait_for_work(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  wake_cv_.wait_for(lock, timeout, [&] { return woken_; });
  woken_ = false;
}

bool SubmitQueue::read_record(uint64_t t, abi::Completion& c) const {
  load16(&c, &comp_[t & mask_]);
  return c.seq >= t + 1;
}

bool SubmitQueue::poll(uint64_t t, Result& r) const {
  abi::Completion c;
  if (t < retired_.load(std::memory_order_acquire) || (read_record(t, c) && c.seq > t + 1)) {
    // Retired (its record may be reused): only failures are remembered.
    std::lock_guard<std::mutex> lock(failures_mutex_);
    auto it = failures_.find(t);
    r = it == failures_.end() ? Result{} : it->second;
    return true;
  }
  if (c.seq != t + 1) return false;
  r = Result{c.status, c.detail};
  return true;
}

uint64_t SubmitQueue::reap() {
  std::unique_lock<std::mutex> lock(reap_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return retired();
  return reap_locked();
}

uint64_t SubmitQueue::reap_current() {
  std::lock_guard<std::mutex> lock(reap_mutex_);
  return reap_locked();
}

uint64_t SubmitQueue::reap_locked() {
  uint64_t r = retired_.load(std::memory_order_relaxed);
  const uint64_t end = tail_.load(std::memory_order_acquire);
  abi::Completion c;
  while (r < end && read_record(r, c) && c.seq == r + 1) {
    const uint16_t op = ops_[r & mask_];
    if (op < GPUOS_MAX_OPS)  // not control tasks
      per_op_completed_[op].fetch_add(1, std::memory_order_relaxed);
    if (c.status != abi::kTaskOk && op != kInternal) {
      if (op < GPUOS_MAX_OPS) per_op_failed_[op].fetch_add(1, std::memory_order_relaxed);
      failed_count_.fetch_add(1, std::memory_order_relaxed);
      std::lock_guard<std::mutex> fl(failures_mutex_);
      failures_[r] = Result{c.status, c.detail};
      if (failures_.size() > kFailureMemory) failures_.erase(failures_.begin());
    }
    ++r;
  }
  retired_.store(r, std::memory_order_release);
  return r;
}

}  // namespace gpuos::detail
