#include "host/stream_submit.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <shared_mutex>
#include <string>

#include "host/cu_check.hpp"
#include "host/device.hpp"
#include "host/driver.hpp"

namespace gpuos::detail {
namespace {

constexpr std::uint32_t kSignaled = 0x3f800000u;  // 1.0f, as the signal task's fill writes it

}  // namespace

struct StreamSubmitter::Shared {
  // Held shared by host functions while they submit, exclusively to detach the runtime.
  std::shared_mutex live_mu;
  Submitter* submitter = nullptr;  // null once the runtime is gone
  // The flags (mapped pinned memory; under unified addressing the device address is the host one).
  std::uint32_t* flags = nullptr;
  // Under mu:
  std::mutex mu;
  std::condition_variable ran_cv;
  std::vector<std::uint32_t> free;  // flags not in use
  struct PerStream {
    std::uint64_t enqueued = 0, ran = 0;  // host functions put on the stream (not captured) / run
    std::int64_t newest = -1;             // the flag of the newest of them
  };
  std::map<CUstream, PerStream> streams;
  std::atomic<std::uint64_t> failures{0};
};

namespace {

/// One stream-ordered task: what its host function needs.
struct Call {
  std::shared_ptr<StreamSubmitter::Shared> shared;
  StreamSubmitter::Work work;
  CUstream stream = nullptr;
  std::uint32_t flag = 0;
  std::int64_t release = -1;  // the flag of the stream's previous task: its wait has passed when this runs
  bool captured = false;      // recorded in a graph: runs at every replay, never freed
};

void store_flag(std::uint32_t* f, std::uint32_t v) { __atomic_store_n(f, v, __ATOMIC_RELEASE); }

/// The host function (a driver thread, the stream's earlier work done): no CUDA call may be made here.
void CUDA_CB run_call(void* data) {
  Call* c = static_cast<Call*>(data);
  const std::shared_ptr<StreamSubmitter::Shared> keep = c->shared;  // c may be freed below
  StreamSubmitter::Shared& s = *keep;
  std::uint32_t* flag = s.flags + c->flag;
  store_flag(flag, 0);  // a replay's previous pass, or the flag's previous task, left it signaled
  bool submitted = false;
  {
    std::shared_lock<std::shared_mutex> lock(s.live_mu);
    if (s.submitter) {
      try {
        const StreamSubmitter::Issued done = c->work(*s.submitter);
        s.submitter->signal_after(done.first, done.n, reinterpret_cast<float*>(flag));
        submitted = true;
      } catch (...) {
        // Closed or faulted since the task was put on the stream: it does not run (counted below).
      }
    }
  }
  if (!submitted) {
    s.failures.fetch_add(1, std::memory_order_relaxed);
    store_flag(flag, kSignaled);  // the stream goes on
  }
  if (c->captured) return;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (c->release >= 0) s.free.push_back(static_cast<std::uint32_t>(c->release));
    ++s.streams[c->stream].ran;
  }
  s.ran_cv.notify_all();
  delete c;
}

}  // namespace

StreamSubmitter::StreamSubmitter(CUcontext ctx, Submitter& submitter, RunState& run)
    : ctx_(ctx), run_(run), shared_(std::make_shared<Shared>()) {
  shared_->submitter = &submitter;
  // The flags are allocated before the kernel's first launch (Runtime's constructor), not at the first
  // stream-ordered submission: memory allocated while a kernel runs is not known to that launch under
  // compute-sanitizer's memcheck, which then reports the signal's write as out of bounds.
  void* p = nullptr;
  GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, kFlags * sizeof(std::uint32_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  std::memset(p, 0, kFlags * sizeof(std::uint32_t));
  shared_->flags = static_cast<std::uint32_t*>(p);
  for (std::uint32_t i = kFlags; i-- > 0;) shared_->free.push_back(i);
}

StreamSubmitter::~StreamSubmitter() {
  std::unique_lock<std::shared_mutex> lock(shared_->live_mu);
  shared_->submitter = nullptr;
  // The flags stay allocated: a stream may still be about to read its newest one (nothing tells when a
  // stream has passed a wait), and a captured graph may be replayed at any time. 32 KiB per runtime.
}

std::uint64_t StreamSubmitter::failures() const { return shared_->failures.load(std::memory_order_relaxed); }

namespace {
/// Tasks with their argument bytes, owned: a host function submits them later.
struct OwnedTasks {
  std::vector<gpuos_task> tasks;
  std::vector<std::vector<unsigned char>> args;
  OwnedTasks(const gpuos_task* t, std::size_t n) : tasks(t, t + n), args(n) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto* a = static_cast<const unsigned char*>(t[i].args);
      if (a) args[i].assign(a, a + t[i].arg_bytes);
    }
  }
  /// The tasks, pointing at the owned bytes (call where the copy will stay: the host function's).
  const gpuos_task* get() {
    for (std::size_t i = 0; i < tasks.size(); ++i) tasks[i].args = args[i].empty() ? nullptr : args[i].data();
    return tasks.data();
  }
};
}  // namespace

void StreamSubmitter::submit(const gpuos_task* tasks, std::size_t n, CUstream stream) {
  if (n == 0) fail(GPUOS_ERR_INVALID_ARG, "stream-ordered submission of no task");
  {
    std::shared_lock<std::shared_mutex> lock(shared_->live_mu);
    for (std::size_t i = 0; i < n; ++i) shared_->submitter->validate(tasks[i]);  // refused here, not later
  }
  submit(
      [owned = OwnedTasks(tasks, n)](Submitter& sub) mutable {
        std::uint64_t first = 0;
        sub.submit(owned.get(), owned.tasks.size(), true, first);
        return Issued{first, owned.tasks.size()};
      },
      stream);
}

void StreamSubmitter::submit_after(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane,
                                   CUstream stream) {
  {
    std::shared_lock<std::shared_mutex> lock(shared_->live_mu);
    shared_->submitter->validate(task);
    shared_->submitter->check_issued(after, n);
  }
  submit(
      [owned = OwnedTasks(&task, 1), deps = std::vector<std::uint64_t>(after, after + n), lane](Submitter& sub) mutable {
        return Issued{sub.submit_after(*owned.get(), deps.data(), deps.size(), lane), 1};
      },
      stream);
}

void StreamSubmitter::submit(Work work, CUstream stream) {
  run_.check_open();
  run_.check_usable();
  Shared& s = *shared_;
  CtxScope scope(ctx_);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  GPUOS_CU_TRY(drv().cuStreamIsCapturing(stream, &capture));
  auto c = std::make_unique<Call>();
  c->shared = shared_;
  c->work = std::move(work);
  c->stream = stream;
  c->captured = capture == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    Shared::PerStream& ps = s.streams[stream];
    if (!c->captured)
      while (ps.enqueued - ps.ran >= kMaxInFlight) {
        s.ran_cv.wait_for(lock, std::chrono::milliseconds(1));
        run_.check_usable();
      }
    if (s.free.empty())
      fail(GPUOS_ERR_QUEUE_FULL, "stream-ordered submission: " + std::to_string(kFlags) +
                                     " tasks are on streams or captured in graphs already");
    c->flag = s.free.back();
    s.free.pop_back();
    if (!c->captured) {
      c->release = ps.newest;
      ps.newest = c->flag;
      ++ps.enqueued;
    }
  }
  const CUdeviceptr flag = reinterpret_cast<CUdeviceptr>(s.flags + c->flag);
  Call* call = c.get();
  const CUresult r = drv().cuLaunchHostFunc(stream, run_call, call);
  if (r != CUDA_SUCCESS) {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!call->captured) {
      Shared::PerStream& ps = s.streams[stream];
      ps.newest = call->release;
      --ps.enqueued;
    }
    s.free.push_back(call->flag);
    cu_check(r, "cuLaunchHostFunc (stream-ordered submission)", __FILE__, __LINE__);
  }
  (void)c.release();  // the host function's now (a captured one's for good)
  GPUOS_CU_TRY(drv().cuStreamWaitValue32(stream, flag, kSignaled, CU_STREAM_WAIT_VALUE_EQ));
}

}  // namespace gpuos::detail
