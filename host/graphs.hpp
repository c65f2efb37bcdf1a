// Task graphs on the device: instances of a graph (its nodes' records, successor lists and ready lists
// in one block of the device heap, written by one copy), their argument updates, and launches: one
// ticket each, which runs the whole graph inside the resident kernel (kernel/scheduler.cu, graph_start)
// and completes with its last node.
//
// A launch carries its updates (GraphDelta: a node's arguments set since the last launch, and the slot of
// an alias the node names as of the launch's ticket) in the staging ring (mapped pinned memory), applied
// on the device before any node runs. Launches of one instance run one after the other: each waits for
// the one before (order only: a failed launch does not fail the next).
//
// An instance's memory goes back to the heap only once the kernel has been relaunched after the
// instance was destroyed: until then a block of the kernel may still hold a stale pointer into it (a
// board value it read), which a relaunch clears. When the heap cannot serve an instantiation while such
// memory waits, the kernel is stopped and relaunched at once (a pause like a generation switch's).
//
// Locking: each instance's lock serializes its updates, launches and destruction; the registry lock
// guards the set of instances and the staging ring. Graph launches hold the Submitter's ordering lock
// (with alias switches) while they enqueue. Lock order: an instance's lock, the Submitter's ordering
// lock, the registry lock; the resident kernel's control lock only with none of them held.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda.h>

#include "common/config.hpp"
#include "host/graph.hpp"
#include "host/op_registry.hpp"
#include "host/staging.hpp"
#include "host/submitter.hpp"

namespace gpuos::detail {

class HeapClient;
class ResidentKernel;

/// An instance of a graph (the C ABI's gpuos_graph_exec).
class GraphInstance;

class Graphs {
 public:
  /// Allocates the staging ring (GPUOS_GRAPH_STAGING) and a copy stream in `ctx`: before the kernel's
  /// first launch.
  /// `grid`: the resident kernel's grid now (an instance is placed on its worker blocks).
  Graphs(CUcontext ctx, const common::Config& cfg, Submitter& sub, ResidentKernel& kernel, HeapClient* heap,
         const AcceptTable& accept, std::function<std::uint32_t()> grid);
  ~Graphs();
  Graphs(const Graphs&) = delete;
  Graphs& operator=(const Graphs&) = delete;

  /// Checks `g` (every node's operator accepted with its argument size; no cycle) and uploads an instance
  /// of it. Throws Failure: GPUOS_ERR_INVALID_ARG, GPUOS_ERR_OUT_OF_MEMORY (the device heap),
  /// GPUOS_ERR_UNAVAILABLE (no heap, or the runtime suspended).
  GraphInstance* instantiate(const Graph& g);
  /// The node's arguments for the next launches (same size as the node's).
  void set_args(GraphInstance* e, std::uint32_t node, const void* args, std::uint32_t arg_bytes);
  /// Enqueues a launch of `e` after every ticket of after[0..n) (and the lane's previous task); returns
  /// its ticket.
  std::uint64_t launch(GraphInstance* e, const std::uint64_t* after, std::size_t n, Lane* lane);
  /// Throws Failure(GPUOS_ERR_INVALID_ARG) unless `e` is a live instance of this runtime.
  void check_instance(const GraphInstance* e) { (void)find(e); }
  /// Waits for e's launches, then releases it (its memory once safe). Throws Failure if `e` is not an
  /// instance of this runtime, and GPUOS_ERR_TIMEOUT when its last launch has not completed within
  /// GPUOS_DRAIN_STALL (nothing changes either way: the instance stays usable).
  void destroy(GraphInstance* e);

  /// At shutdown (no kernel runs): the staging ring's memory, the copy stream. Instances' device memory
  /// goes with the heap.
  void free_memory() noexcept;

 private:
  /// The live instance `e` (kept alive by the caller's reference while it waits for its lock); throws
  /// Failure(GPUOS_ERR_INVALID_ARG) unless `e` is one of this runtime's.
  std::shared_ptr<GraphInstance> find(const GraphInstance* e);
  /// Gives the memory of destroyed instances back to the heap once the kernel has been relaunched since;
  /// force: relaunch it now if some is still held.
  void recycle(bool force);
  void* heap_alloc(std::uint64_t bytes);
  /// Room in the staging ring for `bytes`, waiting for launches to retire (the registry lock held by the
  /// caller's lock `l`, released while waiting).
  std::uint64_t take_staging(std::uint64_t bytes);

  CUcontext ctx_;
  Submitter& sub_;
  ResidentKernel& kernel_;
  HeapClient* heap_;
  const AcceptTable& accept_;
  const std::function<std::uint32_t()> grid_;
  const bool placed_;  // GPUOS_GRAPH_PLACED
  const std::chrono::milliseconds destroy_wait_;  // GPUOS_DRAIN_STALL: destroy's longest wait for a launch
  CUstream copy_ = nullptr;
  unsigned char* staging_mem_ = nullptr;  // mapped pinned; the device reads it at the same address

  std::mutex mu_;  // the registry: instances_, held_, staging_
  std::map<const GraphInstance*, std::shared_ptr<GraphInstance>> instances_;
  struct Held {
    void* block;
    std::uint64_t launches;  // the kernel's launches when it was destroyed
  };
  std::vector<Held> held_;
  StagingRing staging_;
};

}  // namespace gpuos::detail
