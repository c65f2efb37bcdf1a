#include "host/doors.hpp"

#include <algorithm>
#include <string>

#include "common/error.hpp"
#include "common/wait.hpp"

namespace gpuos::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::microseconds kNap{50};        // between scans once quiet for `spin`
constexpr std::chrono::microseconds kDetachedNap{1000};  // the same once detached (nothing runs)

}  // namespace

void Doors::ring_ops(CUdeviceptr req, CUdeviceptr flag, CUstreamBatchMemOpParams (&ops)[3]) {
  ops[0] = ops[1] = ops[2] = CUstreamBatchMemOpParams{};
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = flag;
  ops[0].writeValue.value = 0;
  ops[0].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[1].writeValue.address = req;
  ops[1].writeValue.value = 1;
  ops[1].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
  ops[2].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[2].waitValue.address = flag;
  ops[2].waitValue.value = kSignaled;
  ops[2].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
}

std::shared_ptr<Doors> Doors::start(Memory m, std::chrono::microseconds spin) {
  std::shared_ptr<Doors> d(new Doors(m, spin));
  // The thread holds the doors: once detached with doors still watched it outlives every other owner.
  d->thread_ = std::thread([keep = d] { keep->poll(); });
  return d;
}

Doors::Doors(Memory m, std::chrono::microseconds spin) : mem_(m), spin_(spin), doors_(m.count) {
  free_.reserve(m.count);
  for (std::uint32_t i = m.count; i-- > 0;) free_.push_back(i);
}

Doors::~Doors() {
  // Runs on the poller thread when it was the last owner (detached, its last door answered).
  if (thread_.joinable()) thread_.detach();
}

std::uint32_t Doors::open(const void* stream, bool captured, Work work, const std::function<void()>& check) {
  std::unique_lock<std::mutex> lock(mu_);
  PerStream& ps = streams_[stream];
  if (!captured)
    while (ps.opened - ps.answered >= kMaxInFlight) {
      room_cv_.wait_for(lock, std::chrono::milliseconds(1));
      lock.unlock();  // check() may take other locks (RunState's, to read a fault's reason)
      check();
      lock.lock();
    }
  if (free_.empty())
    fail(GPUOS_ERR_QUEUE_FULL, "stream-ordered submission: " + std::to_string(mem_.count) +
                                   " tasks are on streams or captured in graphs already");
  const std::uint32_t i = free_.back();
  free_.pop_back();
  Door& d = doors_[i];
  d.work = std::move(work);
  d.stream = stream;
  d.captured = captured;
  d.release = -1;
  if (!captured) {
    d.release = ps.newest;
    ps.newest = i;
    ++ps.opened;
  }
  return i;
}

void Doors::arm(std::uint32_t door) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    watched_.push_back(door);
    ++version_;
    ++arms_;
  }
  wake_cv_.notify_one();
}

void Doors::cancel(std::uint32_t door) {
  std::lock_guard<std::mutex> lock(mu_);
  Door& d = doors_[door];
  if (!d.captured) {
    PerStream& ps = streams_[d.stream];
    ps.newest = d.release;
    --ps.opened;
  }
  d.work = nullptr;
  free_.push_back(door);
  room_cv_.notify_all();
}

void Doors::detach() {
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    detached_.store(true, std::memory_order_release);
    idle = watched_.empty();
  }
  wake_cv_.notify_one();
  if (idle)
    thread_.join();  // the poller sees no door and ends
  else
    thread_.detach();  // it answers what is watched (captured doors: for ever), with the flag alone
}

Doors::Done Doors::answer(std::uint32_t door) {
  Door& d = doors_[door];
  Work once;  // an uncaptured door's work, taken out of the door (which may be reused from here on)
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!d.captured) {
      watched_.erase(std::find(watched_.begin(), watched_.end(), door));
      ++version_;
      PerStream& ps = streams_[d.stream];
      ++ps.answered;
      if (d.release >= 0) free_.push_back(static_cast<std::uint32_t>(d.release));  // its wait has passed
      once = std::move(d.work);
      d.work = nullptr;
    }
  }
  if (!d.captured) room_cv_.notify_all();
  // A captured door's work never changes and only this thread calls it.
  const Work& w = d.captured ? d.work : once;
  Done done;
  if (!detached_.load(std::memory_order_acquire) && w) {
    try {
      done = w();
    } catch (...) {
      done = nullptr;
    }
  }
  if (!done) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    __atomic_store_n(mem_.flag + door, kSignaled, __ATOMIC_RELEASE);  // the stream goes on
  }
  return done;
}

void Doors::poll() {
  std::vector<std::uint32_t> scan;
  std::vector<std::pair<std::uint32_t, Done>> waiting;  // answered doors whose flag the poller writes
  std::uint64_t seen = ~0ull, arms_seen = 0;
  Clock::time_point busy = Clock::now();  // the last door armed or answered
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (watched_.empty() && waiting.empty()) {
        if (detached_.load(std::memory_order_relaxed)) return;
        wake_cv_.wait(lock, [&] { return !watched_.empty() || detached_.load(std::memory_order_relaxed); });
        if (watched_.empty()) continue;
      }
      if (arms_ != arms_seen) {
        arms_seen = arms_;
        busy = Clock::now();  // its stream may ring it soon
      }
      if (version_ != seen) {
        scan = watched_;
        seen = version_;
      }
    }
    bool found = false;
    for (const std::uint32_t door : scan) {
      if (__atomic_load_n(mem_.req + door, __ATOMIC_ACQUIRE) == 0) continue;
      // Cleared before the answer: the next ring of a captured door can only follow this one's signal.
      __atomic_store_n(mem_.req + door, 0u, __ATOMIC_RELAXED);
      if (Done d = answer(door)) waiting.emplace_back(door, std::move(d));
      found = true;
    }
    for (std::size_t i = 0; i < waiting.size();) {
      bool settled = true;
      try {
        settled = waiting[i].second();
      } catch (...) {
      }
      if (!settled) {
        ++i;
        continue;
      }
      __atomic_store_n(mem_.flag + waiting[i].first, kSignaled, __ATOMIC_RELEASE);
      waiting[i] = std::move(waiting.back());
      waiting.pop_back();
      found = true;
    }
    const Clock::time_point now = Clock::now();
    if (found) {
      busy = now;
    } else if (now - busy < spin_) {
      for (int i = 0; i < 16; ++i) common::cpu_relax();
    } else {
      const bool detached = detached_.load(std::memory_order_relaxed);
      std::unique_lock<std::mutex> lock(mu_);
      wake_cv_.wait_for(lock, detached ? kDetachedNap : kNap, [&] { return arms_ != arms_seen || detached_.load(std::memory_order_relaxed) != detached; });
    }
  }
}

}  // namespace gpuos::detail
