// The runtime behind the C ABI: a thin facade over the components, one per gpuos_runtime handle.
//
//   ImageSet        the loaded device images (current, previous, retired)
//   ResidentKernel  the kernel's memory, launches, stops, suspend/resume, stop-time checks
//   OpRegistry      operator names, ids, aliases, the accept table (pure)
//   Submitter       validation, admission, back-pressure, waits and drains
//   StreamSubmitter tasks in a CUDA stream's order (doorbells rung by the stream, answered by a thread)
//   HeapClient      the device heap's memory and the host's requests
//   Generations     compile, plan, link and switch; aliases
//   Graphs          task graphs' instances and launches
//   Monitor         reaping, fault watch, idle unloads, residency (slices, parking)
//   Watchdog        what every block runs; deadlines on operator calls; giving up on a hung kernel
//   RunState        fault and closing flags, shared by all
//
// Lock order, outer first: close_mutex_ (here); a stream's turn (StreamSubmitter: one submission on a
// stream at a time, from its door's opening to its ring); Generations' lock; the StreamSubmitter's
// detach lock (held shared by its doors' work while it submits); a graph instance's lock; the Submitter's
// ordering lock; a lane's lock; the resident kernel's control lock; then the leaf locks (the doors'
// lock among them),
// which are never held while taking another (except that the SubmitQueue's reap lock, itself only ever
// try-locked, takes its failure lock, and Graphs' registry lock takes the reap lock): RunState's, Graphs'
// registry lock, the SubmitQueue's reap and failure locks, the resident kernel's diagnostics lock,
// HeapClient's reply lock, the SubmitQueue's wake lock, the watchdog's lock (it takes the deadlines' lock
// inside, and Generations' lock only with a try-lock), the deadlines' lock. The monitor takes the control
// lock only with a try-lock.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

#include "common/config.hpp"
#include "gpuos/gpuos.h"
#include "host/device.hpp"
#include "host/op_registry.hpp"
#include "host/run_state.hpp"

namespace gpuos::detail {

class ImageSet;
class ResidentKernel;
class Submitter;
class StreamSubmitter;
class HeapClient;
class Generations;
class Graphs;
class GraphInstance;
class Monitor;
class Deadlines;
class Watchdog;
struct Lane;

class Runtime {
 public:
  explicit Runtime(const gpuos_options& o);
  ~Runtime();  // drains, stops, frees; never throws
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// blocking=false: returns false (nothing submitted) when the ring is full.
  bool submit(const gpuos_task* tasks, std::size_t n, bool blocking, std::uint64_t& first);
  /// A task that runs after the tickets after[0..n) and the lane's previous task (lane may be null).
  std::uint64_t submit_after(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane);
  /// Tasks that run in `stream`'s order (gpuos_submit_on_stream, gpuos_submit_batch_on_stream).
  void submit_on_stream(const gpuos_task* tasks, std::size_t n, CUstream stream);
  /// A task after tickets and a lane, in `stream`'s order (gpuos_submit_after_on_stream).
  void submit_after_on_stream(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane,
                              CUstream stream);
  /// A launch of graph instance `e` in `stream`'s order (gpuos_graph_launch_on_stream).
  void graph_launch_on_stream(GraphInstance* e, CUstream stream);
  /// Task graphs' instances and launches.
  Graphs& graphs() { return *graphs_; }
  /// GPUOS_OK, GPUOS_ERR_TIMEOUT, GPUOS_ERR_TASK_FAILED (message in `why`) or GPUOS_ERR_DEVICE_FAULT.
  gpuos_status wait(std::uint64_t ticket, std::int64_t timeout_ns, std::string& why);
  gpuos_status drain(std::int64_t timeout_ns, std::string& why);
  gpuos_stats stats();
  gpuos_device_info device_info() const;
  void suspend();
  void resume();
  /// Plain-text report of the internal state (gpuos_diagnose).
  std::string diagnose();
  /// The statistics as Prometheus text (gpuos_metrics).
  std::string metrics();
  /// Stream-ordered tasks that did not run: the runtime closed or faulted before their stream reached them.
  std::uint64_t stream_failures() const;
  /// Stops accepting tasks, drains, stops the kernel. Idempotent. Waits and stats keep working. The drain
  /// gives up once no task has completed for GPUOS_DRAIN_STALL ms (or the longest deadline, if longer):
  /// the watchdog then gives up on the runtime (GPUOS_ERR_HUNG).
  void close();
  /// close(), then frees everything (the kernel's memory only once it has ended). Idempotent; never throws.
  void shutdown() noexcept;
  /// After shutdown: why the kernel could not be ended ("" when it was, or never ran); its memory and
  /// the primary context were then left as they are.
  const std::string& abandoned() const { return abandoned_; }
  /// The watchdog's deadline for operator `op` (gpuos_set_op_deadline).
  void set_op_deadline(std::uint32_t op, std::uint32_t ms);

  // Operators loaded at run time (contracts in gpuos/gpuos.h).
  gpuos_generation load_operator(const std::string& source_name, const std::string* text);
  gpuos_generation load_operators(const std::vector<std::string>& paths, std::vector<std::string>& errors);
  gpuos_generation remove_operator_source(const std::string& source_name);
  std::uint32_t op_id(const std::string& name);
  std::uint64_t alias_set(const std::string& alias, const std::string& target);
  std::uint64_t alias_rollback(const std::string& alias);
  gpuos_generation rollback_generation();
  gpuos_generation generation();
  std::vector<gpuos_op_info> list_ops();

  // The device heap.
  void* heap_alloc(std::uint64_t bytes, std::uint64_t align);
  void heap_free(void* p);
  gpuos_heap_stats heap_stats();
  bool heap_check(std::string& why);

 private:
  /// close(): waits for every submitted task, giving up (the watchdog's give_up) after the stall bound.
  void drain_or_give_up();

  // In construction order.
  gpuos_options opts_;
  common::Config cfg_;
  DeviceChoice dev_;
  CUcontext ctx_ = nullptr;
  RunState run_;
  OpRegistry registry_;
  std::unique_ptr<Deadlines> deadlines_;
  std::unique_ptr<ImageSet> images_;
  std::unique_ptr<ResidentKernel> kernel_;
  std::unique_ptr<Submitter> submitter_;
  std::unique_ptr<StreamSubmitter> streams_;
  std::unique_ptr<HeapClient> heap_;
  std::unique_ptr<Generations> gens_;
  std::unique_ptr<Graphs> graphs_;
  std::unique_ptr<Monitor> monitor_;
  std::unique_ptr<Watchdog> watchdog_;

  std::mutex close_mutex_;
  bool closed_ = false;
  std::string abandoned_;
};

}  // namespace gpuos::detail
