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

struct StreamSubmitter::Shared {
  // Held shared while a door's work submits, exclusively to detach the runtime.
  std::shared_mutex live_mu;
  Submitter* submitter = nullptr;  // null once the runtime is gone
};

StreamSubmitter::StreamSubmitter(CUcontext ctx, Submitter& submitter, RunState& run, std::chrono::microseconds spin)
    : ctx_(ctx), run_(run), shared_(std::make_shared<Shared>()) {
  shared_->submitter = &submitter;
  // The doors are written by streams and the host only, never by the kernel. They are never freed: a
  // stream may still be about to read a flag (nothing tells when a stream has passed a wait), and a
  // captured graph may be replayed at any time. 64 KiB per runtime.
  void* p = nullptr;
  const std::size_t bytes = 2 * std::size_t{kDoors} * sizeof(std::uint32_t);
  GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  std::memset(p, 0, bytes);
  auto* words = static_cast<std::uint32_t*>(p);
  doors_ = Doors::start(Doors::Memory{words, words + kDoors, kDoors}, spin);
}

StreamSubmitter::~StreamSubmitter() {
  {
    std::unique_lock<std::shared_mutex> lock(shared_->live_mu);
    shared_->submitter = nullptr;
  }
  doors_->detach();
}

std::uint64_t StreamSubmitter::failures() const { return doors_->failures(); }

std::mutex& StreamSubmitter::stream_turn(CUstream stream) {
  std::lock_guard<std::mutex> lock(turns_mu_);
  std::unique_ptr<std::mutex>& m = turns_[stream];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

namespace {
/// Tasks with their argument bytes, owned: a door's work submits them later.
struct OwnedTasks {
  std::vector<gpuos_task> tasks;
  std::vector<std::vector<unsigned char>> args;
  OwnedTasks(const gpuos_task* t, std::size_t n) : tasks(t, t + n), args(n) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto* a = static_cast<const unsigned char*>(t[i].args);
      if (a) args[i].assign(a, a + t[i].arg_bytes);
    }
  }
  /// The tasks, pointing at the owned bytes (call where the copy will stay: the door's work's).
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
  CtxScope scope(ctx_);
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  GPUOS_CU_TRY(drv().cuStreamIsCapturing(stream, &capture));
  const bool captured = capture == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  // The door's work runs on the poller's thread, at each ring: it must make no CUDA call. The tasks'
  // writes are released before their completion records, so the stream's later work, which follows the
  // flag, sees them.
  Doors::Work answer = [shared = shared_, work = std::move(work)]() mutable -> Doors::Done {
    std::shared_lock<std::shared_mutex> lock(shared->live_mu);
    if (!shared->submitter) return nullptr;
    const Issued issued = work(*shared->submitter);  // throws once closed or faulted: not run, counted
    return [shared, issued] {
      std::shared_lock<std::shared_mutex> lock(shared->live_mu);
      return !shared->submitter || shared->submitter->settled(issued.first, issued.n);
    };
  };
  // A stream's doors are opened in the order their rings go on it (Doors::open): two threads submitting
  // on one stream take turns from here to the ring.
  std::lock_guard<std::mutex> turn(stream_turn(stream));
  const std::uint32_t door = doors_->open(stream, captured, std::move(answer), [this] { run_.check_usable(); });
  CUstreamBatchMemOpParams ops[3];
  Doors::ring_ops(reinterpret_cast<CUdeviceptr>(doors_->req(door)), reinterpret_cast<CUdeviceptr>(doors_->flag(door)),
                  ops);
  const CUresult r = drv().cuStreamBatchMemOp(stream, 3, ops, 0);
  if (r != CUDA_SUCCESS) {
    doors_->cancel(door);
    cu_check(r, "cuStreamBatchMemOp (stream-ordered submission)", __FILE__, __LINE__);
  }
  doors_->arm(door);
}

}  // namespace gpuos::detail
