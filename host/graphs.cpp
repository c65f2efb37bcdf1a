#include "host/graphs.hpp"

#include <cstring>
#include <optional>
#include <utility>

#include "common/error.hpp"
#include "common/wait.hpp"
#include "host/cu_check.hpp"
#include "host/device.hpp"
#include "host/driver.hpp"
#include "host/graph_image.hpp"
#include "host/heap_client.hpp"
#include "host/resident.hpp"

namespace gpuos::detail {

class GraphInstance {
 public:
  std::mutex mu;               // its updates, launches and destruction
  bool dead = false;           // destroyed (a launch that waited for the lock is refused)
  void* block = nullptr;       // its device memory (GraphExec first)
  std::vector<abi::Payload> payloads;  // the host's view: operator ids as named, arguments as set
  std::vector<std::uint16_t> sent_op;  // the operator slot the device holds for each node
  std::vector<std::uint32_t> dirty;    // nodes whose arguments changed since the last launch
  std::vector<char> is_dirty;
  std::vector<std::uint32_t> alias_nodes;  // nodes that name an alias
  std::uint64_t checked_version = 0;       // the accept table's version the operators were checked at
  std::optional<std::uint64_t> last;       // the latest launch's ticket
  std::uint64_t launches = 0;
};

namespace {

std::string node_label(std::uint32_t v) { return "graph node " + std::to_string(v); }

/// Every node's operator is accepted with the node's argument size.
void check_operators(const AcceptTable& accept, const std::vector<abi::Payload>& payloads) {
  for (std::uint32_t v = 0; v < payloads.size(); ++v) {
    const abi::Payload& p = payloads[v];
    if (p.op == GPUOS_OP_HEAP_CTL)
      fail(GPUOS_ERR_INVALID_ARG, node_label(v) + ": operator id " + std::to_string(p.op) +
                                      " is reserved for the runtime's heap requests");
    const std::optional<std::uint32_t> want = accept.arg_bytes(p.op);
    if (!want) fail(GPUOS_ERR_INVALID_ARG, node_label(v) + ": no live operator has id " + std::to_string(p.op));
    if (*want != p.arg_bytes)
      fail(GPUOS_ERR_INVALID_ARG, node_label(v) + ": operator " + std::to_string(p.op) + " takes " +
                                      std::to_string(*want) + " bytes of arguments, the node has " +
                                      std::to_string(p.arg_bytes));
  }
}

}  // namespace

Graphs::Graphs(CUcontext ctx, const common::Config& cfg, Submitter& sub, ResidentKernel& kernel, HeapClient* heap,
               const AcceptTable& accept, std::function<std::uint32_t()> grid)
    : ctx_(ctx),
      sub_(sub),
      kernel_(kernel),
      heap_(heap),
      accept_(accept),
      grid_(std::move(grid)),
      placed_(cfg.graph_placed),
      destroy_wait_(std::chrono::milliseconds(cfg.drain_stall_ms)),
      staging_(cfg.graph_staging) {
  CtxScope scope(ctx_);
  try {
    GPUOS_CU_TRY(drv().cuStreamCreate(&copy_, CU_STREAM_NON_BLOCKING));
    void* p = nullptr;
    GPUOS_CU_TRY(drv().cuMemHostAlloc(&p, staging_.size(), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    staging_mem_ = static_cast<unsigned char*>(p);
  } catch (...) {
    free_memory();
    throw;
  }
}

Graphs::~Graphs() { free_memory(); }

void Graphs::free_memory() noexcept {
  if (!driver_loaded()) return;
  if (staging_mem_) drv().cuMemFreeHost(staging_mem_);
  if (copy_) drv().cuStreamDestroy(copy_);
  staging_mem_ = nullptr;
  copy_ = nullptr;
}

std::shared_ptr<GraphInstance> Graphs::find(const GraphInstance* e) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = instances_.find(e);
  if (!e || it == instances_.end()) fail(GPUOS_ERR_INVALID_ARG, "not a graph instance of this runtime (destroyed?)");
  return it->second;
}

void Graphs::recycle(bool force) {
  std::vector<void*> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_.empty()) return;
    if (force) {
      // Nothing holds them once the kernel has stopped: stop it and relaunch it now.
    } else {
      const std::uint64_t now = kernel_.launches();
      std::erase_if(held_, [&](const Held& h) {
        if (h.launches >= now) return false;
        ready.push_back(h.block);
        return true;
      });
    }
  }
  if (force) {
    {
      auto c = kernel_.control();
      if (c.running()) {
        c.stop();
        c.launch();
      }
    }
    recycle(false);
    return;
  }
  for (void* b : ready) heap_->free(sub_, kernel_, b);
}

void* Graphs::heap_alloc(std::uint64_t bytes) {
  recycle(false);
  try {
    return heap_->alloc(sub_, kernel_, bytes, alignof(abi::TaskRecord));
  } catch (const common::Failure& f) {
    bool held = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held = !held_.empty();
    }
    if (f.status() != GPUOS_ERR_OUT_OF_MEMORY || !held) throw;
  }
  recycle(true);
  return heap_->alloc(sub_, kernel_, bytes, alignof(abi::TaskRecord));
}

GraphInstance* Graphs::instantiate(const Graph& g) {
  if (!heap_ || !heap_->control())
    fail(GPUOS_ERR_UNAVAILABLE, "task graphs live in the device heap: this runtime has none (gpuos_options.heap_bytes = 0)");
  const GraphPlan plan = plan_graph(g);
  auto e = std::make_shared<GraphInstance>();
  const std::uint32_t n = g.size();
  e->payloads.reserve(n);
  for (std::uint32_t v = 0; v < n; ++v) e->payloads.push_back(g.node(v));
  e->checked_version = accept_.version();
  check_operators(accept_, e->payloads);
  // The slots as of now; each launch resolves its alias nodes again, in ticket order.
  std::vector<abi::Payload> resolved = e->payloads;
  e->sent_op.resize(n);
  e->is_dirty.assign(n, 0);
  for (std::uint32_t v = 0; v < n; ++v) {
    const std::uint32_t slot = sub_.slot_of(e->payloads[v].op);
    if (slot != e->payloads[v].op) e->alias_nodes.push_back(v);
    resolved[v].op = static_cast<std::uint16_t>(slot);
    e->sent_op[v] = static_cast<std::uint16_t>(slot);
  }
  // Placed on the worker blocks (all but the front end's) of the grid as it is now; a launch on a grid
  // with fewer workers than the placement's roles runs unplaced.
  std::optional<Placement> place;
  if (const std::uint32_t grid = grid_(); placed_ && grid > 1) {
    std::vector<std::uint32_t> tiles(n);
    for (std::uint32_t v = 0; v < n; ++v) tiles[v] = e->payloads[v].tiles;
    place = place_graph(plan, tiles, grid - 1);
    // On one role (a chain of one-tile nodes, a single node) a placement gains nothing: unplaced, such a
    // chain runs as one block's continuations, with no count per node (an H100, runs of the same day:
    // 1.37 us a step against 1.61 placed; a 1-node graph's round trip 15.4 us against 18.0).
    if (place->roles <= 1) place.reset();
  }
  const Placement* pl = place ? &*place : nullptr;
  const GraphLayout layout = graph_layout(plan, pl);
  e->block = heap_alloc(layout.bytes);
  try {
    const std::vector<unsigned char> image = graph_image(plan, resolved, reinterpret_cast<std::uint64_t>(e->block), pl);
    CtxScope scope(ctx_);
    GPUOS_CU_TRY(drv().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(e->block), image.data(), image.size(), copy_));
    GPUOS_CU_TRY(drv().cuStreamSynchronize(copy_));
  } catch (...) {
    heap_->free(sub_, kernel_, e->block);
    throw;
  }
  GraphInstance* raw = e.get();
  std::lock_guard<std::mutex> lock(mu_);
  instances_.emplace(raw, std::move(e));
  return raw;
}

void Graphs::set_args(GraphInstance* raw, std::uint32_t node, const void* args, std::uint32_t arg_bytes) {
  const std::shared_ptr<GraphInstance> e = find(raw);
  std::lock_guard<std::mutex> il(e->mu);
  if (e->dead) fail(GPUOS_ERR_INVALID_ARG, "the graph instance was destroyed");
  if (node >= e->payloads.size())
    fail(GPUOS_ERR_INVALID_ARG, node_label(node) + " does not exist (the graph has " +
                                    std::to_string(e->payloads.size()) + " nodes)");
  abi::Payload& p = e->payloads[node];
  if (arg_bytes != p.arg_bytes)
    fail(GPUOS_ERR_INVALID_ARG, node_label(node) + " takes " + std::to_string(p.arg_bytes) +
                                    " bytes of arguments, got " + std::to_string(arg_bytes));
  if (arg_bytes && !args) fail(GPUOS_ERR_INVALID_ARG, "args is NULL");
  if (arg_bytes) std::memcpy(p.args, args, arg_bytes);
  if (!e->is_dirty[node]) {
    e->is_dirty[node] = 1;
    e->dirty.push_back(node);
  }
}

std::uint64_t Graphs::take_staging(std::uint64_t bytes) {
  if (bytes > staging_.size())
    fail(GPUOS_ERR_INVALID_ARG, "a launch's updates take " + std::to_string(bytes) + " bytes, more than the " +
                                    std::to_string(staging_.size()) + "-byte staging ring (GPUOS_GRAPH_STAGING)");
  for (;;) {
    std::optional<std::uint64_t> oldest;
    {
      std::lock_guard<std::mutex> lock(mu_);
      staging_.reclaim(kernel_.queue().reap());
      if (const auto at = staging_.take(bytes)) return *at;
      oldest = staging_.oldest();
    }
    // Room comes back as older launches retire.
    sub_.wait_completed(*oldest + 1, common::Deadline::never(), "waiting for room in the graph staging ring");
  }
}

std::uint64_t Graphs::launch(GraphInstance* raw, const std::uint64_t* after, std::size_t n, Lane* lane) {
  const std::shared_ptr<GraphInstance> e = find(raw);
  sub_.check_issued(after, n);
  std::lock_guard<std::mutex> il(e->mu);
  if (e->dead) fail(GPUOS_ERR_INVALID_ARG, "the graph instance was destroyed");
  if (const std::uint64_t v = accept_.version(); v != e->checked_version) {
    // Operators were loaded or removed since: the nodes' must still be there, with the same sizes.
    check_operators(accept_, e->payloads);
    e->checked_version = v;
  }
  std::vector<Dep> deps;
  deps.reserve(n + 1);
  for (std::size_t i = 0; i < n; ++i) deps.push_back(Dep{after[i], false});
  if (e->last) deps.push_back(Dep{*e->last, true});  // launches of one instance run in order
  return sub_.ordered([&] {
    // The updates: arguments set since the last launch, and alias nodes whose slot changed (as of now,
    // in ticket order with alias switches).
    std::vector<std::uint32_t> nodes = e->dirty;
    std::vector<std::uint16_t> ops(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) ops[i] = static_cast<std::uint16_t>(sub_.slot_of(e->payloads[nodes[i]].op));
    for (std::uint32_t v : e->alias_nodes) {
      const std::uint16_t slot = static_cast<std::uint16_t>(sub_.slot_of(e->payloads[v].op));
      if (!e->is_dirty[v] && slot != e->sent_op[v]) {
        nodes.push_back(v);
        ops.push_back(slot);
      }
    }
    abi::GraphLaunchArgs a{};
    a.exec = reinterpret_cast<std::uint64_t>(e->block);
    a.number = e->launches + 1;
    const bool staged = !nodes.empty();
    if (staged) {
      const std::uint64_t at = take_staging(nodes.size() * sizeof(abi::GraphDelta));
      auto* d = reinterpret_cast<abi::GraphDelta*>(staging_mem_ + at);
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        abi::GraphDelta x{};
        x.node = nodes[i];
        x.op = ops[i];
        std::memcpy(x.args, e->payloads[nodes[i]].args, sizeof(x.args));
        std::memcpy(&d[i], &x, sizeof(x));
      }
      a.deltas = reinterpret_cast<std::uint64_t>(d);
      a.ndeltas = static_cast<std::uint32_t>(nodes.size());
    }
    abi::Payload p;
    std::memset(&p, 0, sizeof(p));
    p.op = GPUOS_OP_GRAPH;
    p.arg_bytes = sizeof(a);
    p.tiles = 1;
    std::memcpy(p.args, &a, sizeof(a));
    std::uint64_t t = 0;
    try {
      t = sub_.enqueue_after(p, deps, lane);
    } catch (...) {
      if (staged) {
        std::lock_guard<std::mutex> lock(mu_);
        staging_.abort();
      }
      throw;
    }
    if (staged) {
      std::lock_guard<std::mutex> lock(mu_);
      staging_.commit(t);
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      e->sent_op[nodes[i]] = ops[i];
      e->is_dirty[nodes[i]] = 0;
    }
    e->dirty.clear();
    e->last = t;
    ++e->launches;
    return t;
  });
}

void Graphs::destroy(GraphInstance* raw) {
  const std::shared_ptr<GraphInstance> e = find(raw);
  std::lock_guard<std::mutex> il(e->mu);
  if (e->dead) fail(GPUOS_ERR_INVALID_ARG, "the graph instance was already destroyed");
  if (e->last) {
    // Bounded as shutdown's drain is: with no watchdog deadline a hung node would hold this for ever.
    std::string why;
    const gpuos_status s = sub_.wait(*e->last, common::Deadline::after(destroy_wait_), why);
    if (s == GPUOS_ERR_DEVICE_FAULT || s == GPUOS_ERR_HUNG) fail(s, why);  // nothing runs any more; its memory went with the device
    if (s == GPUOS_ERR_TIMEOUT)
      fail(s, "the graph instance's last launch (ticket " + std::to_string(*e->last) + ") has not completed in " +
                  std::to_string(destroy_wait_.count()) + " ms (GPUOS_DRAIN_STALL); the instance was not destroyed");
  }
  e->dead = true;
  std::lock_guard<std::mutex> lock(mu_);
  held_.push_back(Held{e->block, kernel_.launches()});
  instances_.erase(raw);
}

}  // namespace gpuos::detail
