// Dependencies resolved inside the resident kernel: submit_after, lanes and task graphs.
//
// Order is checked by the operator itself: `order` (loaded at run time) counts its tiles in hits[node]
// and, before that, checks that every predecessor p has all its tiles counted for this round
// (hits[p] == tiles[p] * round). A task started before a predecessor finished, a predecessor's writes
// not visible to its successor, a node run twice or not at all: each shows as a violation or a count.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "host/graph_place.hpp"
#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

namespace {

// The order operators' argument struct, in their sources and (as OrderArgs below) on the host.
const std::string kOrderArgsSource = R"(
#include "gpuos/op.cuh"

struct OrderArgs {
  const unsigned* pred_begin;  // CSR of the predecessors: preds[pred_begin[v] .. pred_begin[v + 1])
  const unsigned* preds;
  const unsigned* tiles;       // tiles of each node
  unsigned* hits;              // tiles run, per node, over every round
  unsigned* violations;
  unsigned node;
};
)";

const std::string kOrderSource = kOrderArgsSource + R"(

__device__ void order_tile(const OrderArgs& a, const gpuos::TileCtx& c) {
  if (threadIdx.x != 0) return;
  const unsigned old = atomicAdd(&a.hits[a.node], 1u);
  const unsigned round = old / c.tiles + 1;
  for (unsigned k = a.pred_begin[a.node]; k < a.pred_begin[a.node + 1]; ++k) {
    const unsigned p = a.preds[k];
    const unsigned seen = *static_cast<volatile const unsigned*>(&a.hits[p]);
    if (seen != a.tiles[p] * round) atomicAdd(a.violations, 1u);
  }
}

GPUOS_OPERATOR(order, OrderArgs, order_tile)
)";

// The same check by an operator that awaits its inputs itself (GPUOS_OP_AWAITS_INPUTS): it reads what
// does not change (its predecessors' list and tile counts) before gpuos::await_inputs and the counters
// after. An await that says "do not run" in a launch where nothing fails is a violation too. A call
// that found its first predecessor not yet complete (its count read before the await short of this
// round's) is counted in violations[1]: called before its inputs were complete.
const std::string kOrderAwaitSource = kOrderArgsSource + R"(
__device__ void order_await_tile(const OrderArgs& a, const gpuos::TileCtx& c) {
  const unsigned begin = a.pred_begin[a.node], end = a.pred_begin[a.node + 1];
  const unsigned first = begin < end ? a.preds[begin] : 0u;
  const unsigned first_tiles = begin < end ? a.tiles[first] : 0u;
  const unsigned seen = begin < end ? *static_cast<volatile const unsigned*>(&a.hits[first]) : 0u;
  if (!gpuos::await_inputs()) {
    if (threadIdx.x == 0) atomicAdd(a.violations, 1000000u);
    return;
  }
  if (threadIdx.x != 0) return;
  const unsigned old = atomicAdd(&a.hits[a.node], 1u);
  const unsigned round = old / c.tiles + 1;
  if (begin < end && seen < first_tiles * round) atomicAdd(a.violations + 1, 1u);
  for (unsigned k = begin; k < end; ++k) {
    const unsigned p = k == begin ? first : a.preds[k];
    const unsigned want = (k == begin ? first_tiles : a.tiles[p]) * round;
    if (*static_cast<volatile const unsigned*>(&a.hits[p]) != want) atomicAdd(a.violations, 1u);
  }
}

GPUOS_OPERATOR_FLAGS(order_await, OrderArgs, order_await_tile, GPUOS_OP_AWAITS_INPUTS)
)";

// A node's counter raised after ~300 us: the check's first node, so that the nodes after it are reached
// while it runs.
const std::string kOrderSlowSource = kOrderArgsSource + R"(
__device__ void order_slow_tile(const OrderArgs& a, const gpuos::TileCtx&) {
  if (threadIdx.x != 0) return;
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < 300000ull);
  atomicAdd(&a.hits[a.node], 1u);
}

GPUOS_OPERATOR(order_slow, OrderArgs, order_slow_tile)
)";

// The same check for a run of tiles top - n + 1 .. top, counted at once: a run outside the task's tiles
// is a violation, and so is one that spans two launches.
const std::string kOrderRunSource = kOrderArgsSource + R"(
__device__ void order_run(const OrderArgs& a, const gpuos::TileCtx& c, unsigned top, unsigned n) {
  if (n == 0 || n > top + 1 || top >= c.tiles) atomicAdd(a.violations, 1u);
  const unsigned old = atomicAdd(&a.hits[a.node], n);
  const unsigned round = old / c.tiles + 1;
  if ((old + n - 1) / c.tiles + 1 != round) atomicAdd(a.violations, 1u);
  for (unsigned k = a.pred_begin[a.node]; k < a.pred_begin[a.node + 1]; ++k) {
    const unsigned p = a.preds[k];
    const unsigned seen = *static_cast<volatile const unsigned*>(&a.hits[p]);
    if (seen != a.tiles[p] * round) atomicAdd(a.violations, 1u);
  }
}
)";

// By an operator given a range function (GPUOS_OPERATOR_RANGES): one call runs tiles c.tile - n + 1 ..
// c.tile; a call of more than one tile is counted in violations[1].
const std::string kOrderRangesSource = kOrderRunSource + R"(
__device__ void order_ranges(const OrderArgs& a, const gpuos::TileCtx& c, unsigned n) {
  if (threadIdx.x != 0) return;
  if (n > 1) atomicAdd(a.violations + 1, 1u);
  order_run(a, c, c.tile, n);
}

GPUOS_OPERATOR_RANGES(order_ranges, OrderArgs, order_ranges, 0u)
)";

// By an operator given a stream function (GPUOS_OPERATOR_STREAMS): a call runs its run and then every
// run gpuos::TileRuns::next hands it (every thread calls next); each such further run is counted in
// violations[1].
const std::string kOrderStreamsSource = kOrderRunSource + R"(
__device__ void order_streams(const OrderArgs& a, const gpuos::TileCtx& c, unsigned n, gpuos::TileRuns& runs) {
  unsigned top = c.tile;
  bool further = false;
  do {
    if (threadIdx.x == 0) {
      if (further) atomicAdd(a.violations + 1, 1u);
      order_run(a, c, top, n);
    }
    further = true;
  } while (runs.next(top, n));
}

GPUOS_OPERATOR_STREAMS(order_streams, OrderArgs, order_streams, 0u)
)";

struct OrderArgs {
  const unsigned* pred_begin;
  const unsigned* preds;
  const unsigned* tiles;
  unsigned* hits;
  unsigned* violations;
  unsigned node;
};

/// A DAG over nodes 0..n-1 whose edges go from lower to higher ids, with each node's tile count.
struct Dag {
  std::vector<std::vector<std::uint32_t>> preds;
  std::vector<std::uint32_t> tiles;
  std::size_t size() const { return preds.size(); }
  std::size_t edges() const {
    std::size_t e = 0;
    for (const auto& p : preds) e += p.size();
    return e;
  }
};

/// Random DAG: each node has 0..max_preds predecessors among the `window` nodes before it, and 1..max_tiles
/// tiles (uniform up to 4; beyond, one node in 8 draws from the whole range, the others 1..4: nodes larger
/// than the grid, placed launches claim those at run time).
Dag random_dag(std::size_t n, std::uint32_t max_preds, std::uint32_t window, std::uint32_t max_tiles, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Dag d;
  d.preds.resize(n);
  d.tiles.resize(n, 1);
  for (std::size_t v = 1; v < n; ++v) {
    const std::uint32_t k = std::uniform_int_distribution<std::uint32_t>(0, max_preds)(rng);
    const std::size_t lo = v > window ? v - window : 0;
    for (std::uint32_t i = 0; i < k; ++i) {
      const auto p = static_cast<std::uint32_t>(std::uniform_int_distribution<std::size_t>(lo, v - 1)(rng));
      if (std::find(d.preds[v].begin(), d.preds[v].end(), p) == d.preds[v].end()) d.preds[v].push_back(p);
    }
  }
  for (auto& t : d.tiles) {
    const bool big = max_tiles > 4 && rng() % 8 == 0;
    t = std::uniform_int_distribution<std::uint32_t>(1, big ? max_tiles : std::min(max_tiles, 4u))(rng);
  }
  return d;
}

Dag chain(std::size_t n) {
  Dag d;
  d.preds.resize(n);
  d.tiles.resize(n, 1);
  for (std::size_t v = 1; v < n; ++v) d.preds[v] = {static_cast<std::uint32_t>(v - 1)};
  return d;
}

/// The device side of the order check for one DAG: its CSR, tile counts, hit counters, violations (and
/// after them the awaiting operator's count of calls made before their inputs were complete).
/// Declare it before the Runtime (its buffers outlive it).
class OrderCheck {
 public:
  explicit OrderCheck(const Dag& d)
      : n_(d.size()), begin_(n_ + 1), preds_(std::max<std::size_t>(d.edges(), 1)), tiles_(n_), hits_(n_), viol_(2) {
    std::vector<unsigned> b(n_ + 1, 0), p;
    p.reserve(d.edges());
    for (std::size_t v = 0; v < n_; ++v) {
      for (auto q : d.preds[v]) p.push_back(q);
      b[v + 1] = static_cast<unsigned>(p.size());
    }
    if (p.empty()) p.push_back(0);
    begin_.upload(b);
    preds_.upload(p);
    tiles_.upload(std::vector<unsigned>(d.tiles.begin(), d.tiles.end()));
    reset();
    want_tiles_ = d.tiles;
  }
  void reset() {
    hits_.upload(std::vector<unsigned>(n_, 0));
    viol_.upload(std::vector<unsigned>(2, 0));
  }
  Task task(std::uint32_t op, std::uint32_t v) const {
    return Task::make(op, want_tiles_[v], OrderArgs{begin_.get(), preds_.get(), tiles_.get(), hits_.get(), viol_.get(), v});
  }
  unsigned violations() const { return viol_.download()[0]; }
  /// Calls of the awaiting operator (kOrderAwaitSource) made before their inputs were complete; calls of
  /// the range operator (kOrderRangesSource) that ran more than one tile; runs the stream operator
  /// (kOrderStreamsSource) went on with.
  unsigned early_calls() const { return viol_.download()[1]; }
  /// Nodes whose hit count is not tiles * rounds (run too often or too rarely).
  std::size_t wrong_counts(unsigned rounds) const {
    const auto h = hits_.download();
    std::size_t bad = 0;
    for (std::size_t v = 0; v < n_; ++v) bad += h[v] != want_tiles_[v] * rounds;
    return bad;
  }

 private:
  std::size_t n_;
  support::DeviceArray<unsigned> begin_, preds_, tiles_, hits_, viol_;
  std::vector<std::uint32_t> want_tiles_;
};

/// `op2`: the operator of the odd nodes (default: `op` for all).
Graph graph_of(const Dag& d, const OrderCheck& oc, std::uint32_t op, std::uint32_t op2 = ~0u) {
  Graph g;
  for (std::uint32_t v = 0; v < d.size(); ++v) REQUIRE(g.add(oc.task(v % 2 && op2 != ~0u ? op2 : op, v)) == v);
  for (std::uint32_t v = 0; v < d.size(); ++v)
    for (auto p : d.preds[v]) g.edge(p, v);
  return g;
}

/// Whether graph launches run placed: the default; scripts/gpu_run.sh runs this suite again with
/// GPUOS_GRAPH_PLACED=0.
bool placed_launches() {
  const char* placed = std::getenv("GPUOS_GRAPH_PLACED");
  return placed == nullptr || std::string(placed) != "0";
}

std::uint32_t load_order(Runtime& rt) {
  rt.load_operator_source("order.cu", kOrderSource);
  return rt.op_id("order");
}

/// The shape of a random DAG (random_dag's parameters).
struct DagShape {
  std::size_t n;
  std::uint32_t max_preds, window;
  std::uint32_t max_tiles;
};

/// One random DAG per shape (seeds seed, seed + 1, ...) and its order check. Call before the Runtime.
struct DagSet {
  std::vector<Dag> dags;
  std::vector<std::unique_ptr<OrderCheck>> checks;
  DagSet(std::span<const DagShape> shapes, std::uint64_t seed) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      // Under GPUOS_TEST_SCALE fewer nodes (at least 64, or all of a smaller DAG) and fewer tiles a node.
      const DagShape& sh = shapes[i];
      const std::uint32_t tiles = static_cast<std::uint32_t>(test::scaled(sh.max_tiles, std::min<std::uint32_t>(sh.max_tiles, 16)));
      dags.push_back(random_dag(test::scaled(sh.n, std::min<std::size_t>(sh.n, 64)), sh.max_preds, sh.window, tiles, seed + i));
      checks.push_back(std::make_unique<OrderCheck>(dags.back()));
    }
  }
};

/// Each DAG of `set` as one graph (graph_of with `op` and `op2`), launched twice; checks that every tile ran
/// once a launch, in order. Returns the sum of the checks' second counters (OrderCheck::early_calls).
std::size_t launch_each_twice(Runtime& rt, DagSet& set, std::uint32_t op, std::uint32_t op2) {
  std::size_t sum = 0;
  for (std::size_t i = 0; i < set.dags.size(); ++i) {
    CAPTURE(i);
    CAPTURE(set.dags[i].size());
    GraphExec ge(rt, graph_of(set.dags[i], *set.checks[i], op, op2));
    const Ticket a = ge.launch();
    CHECK(rt.wait(a, test::slowed(60s)));
    CHECK(rt.wait(ge.launch(), test::slowed(60s)));
    CHECK(set.checks[i]->violations() == 0);
    CHECK(set.checks[i]->wrong_counts(2) == 0);
    sum += set.checks[i]->early_calls();
  }
  return sum;
}

/// Whether DAG d has a node of more than twice `grid` blocks in tiles (under GPUOS_TEST_SCALE it may have
/// none): blocks then run several of its tiles, and claim more than once where it is claimed.
bool has_big_node(const Dag& d, std::uint32_t grid) {
  return *std::max_element(d.tiles.begin(), d.tiles.end()) > 2 * grid;
}

/// DAG d as plain tasks, each submitted after its predecessors (submit_after), node v running `op2` when v
/// is odd and `op` when even; checks that every tile ran once, in order. Returns the check's second counter
/// (OrderCheck::early_calls).
unsigned run_plain(Runtime& rt, const Dag& d, OrderCheck& oc, std::uint32_t op, std::uint32_t op2) {
  oc.reset();
  std::vector<Ticket> t(d.size());
  for (std::uint32_t v = 0; v < d.size(); ++v) {
    std::vector<Ticket> after;
    for (auto p : d.preds[v]) after.push_back(t[p]);
    t[v] = rt.submit_after(oc.task(v % 2 ? op2 : op, v), after);
  }
  for (const Ticket& x : t) CHECK(rt.wait(x, test::slowed(30s)));
  CHECK(oc.violations() == 0);
  CHECK(oc.wrong_counts(1) == 0);
  return oc.early_calls();
}

}  // namespace

TEST_CASE("submit_after: a chain of dependent tasks, and fan-in beyond one dependency slot") {
  const Dag d = chain(static_cast<std::uint32_t>(test::scaled(3000, 32)));
  OrderCheck oc(d);
  // The fan-in: one task after 100 others (more than 16: join tasks on the way).
  Dag fan;
  fan.preds.resize(101);
  fan.tiles.assign(101, 2);
  for (std::uint32_t p = 0; p < 100; ++p) fan.preds[100].push_back(p);
  OrderCheck of(fan);
  Runtime rt;
  const std::uint32_t op = load_order(rt);
  for (unsigned round = 1; round <= 2; ++round) {
    Ticket prev = rt.submit(oc.task(op, 0));
    for (std::uint32_t v = 1; v < d.size(); ++v) prev = rt.submit_after(oc.task(op, v), std::span<const Ticket>(&prev, 1));
    CHECK(rt.wait(prev, test::slowed(30s)));
    std::vector<Ticket> ts;
    for (std::uint32_t v = 0; v < 100; ++v) ts.push_back(rt.submit(of.task(op, v)));
    CHECK(rt.wait(rt.submit_after(of.task(op, 100), ts), test::slowed(30s)));
    CHECK(test::drain_or_report(rt, 30s));
    CHECK(oc.violations() == 0);
    CHECK(oc.wrong_counts(round) == 0);
    CHECK(of.violations() == 0);
    CHECK(of.wrong_counts(round) == 0);
  }
  // Waiting for tickets long retired (their records reused many times over) is waiting for nothing.
  const Ticket t = rt.submit_after(ops::nop(), std::vector<Ticket>{0, 1, 2});
  CHECK(rt.wait(t, test::slowed(10s)));
  // A ticket never issued is refused, and nothing is issued.
  const auto before = rt.stats();
  const Ticket future = 1ull << 40;
  CHECK_THROWS_AS(rt.submit_after(ops::nop(), std::span<const Ticket>(&future, 1)), Error);
  CHECK(rt.stats().submitted == before.submitted);
}

TEST_CASE("lanes: tasks of a lane run one after another while threads submit to many lanes") {
  constexpr int kThreads = 4;
  const std::uint32_t kPerLane = static_cast<std::uint32_t>(test::scaled(2000, 32));
  std::vector<std::unique_ptr<OrderCheck>> checks;
  for (int i = 0; i < kThreads; ++i) checks.push_back(std::make_unique<OrderCheck>(chain(kPerLane)));
  // A shared lane: every thread submits to it; its order is the order submissions reached it, so each
  // task checks only that the lane's previous task (whoever submitted it) finished: a chain in arrival
  // order, built by the threads under a lock.
  const std::uint32_t kShared = kThreads * ((kPerLane + 3) / 4);  // every thread's 4th task
  OrderCheck shared(chain(kShared));
  Runtime rt;
  const std::uint32_t op = load_order(rt);
  Lane shared_lane(rt);
  std::mutex shared_mu;
  std::uint32_t shared_next = 0;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> th;
  for (int i = 0; i < kThreads; ++i)
    th.emplace_back([&, i] {
      Lane lane(rt);
      for (std::uint32_t v = 0; v < kPerLane; ++v) {
        rt.submit_after(checks[i]->task(op, v), {}, &lane);
        if (v % 4 == 0) {
          std::lock_guard<std::mutex> lock(shared_mu);
          rt.submit_after(shared.task(op, shared_next++), {}, &shared_lane);
        }
      }
      running--;
    });
  test::await_submitters(rt, running, 60s);
  for (auto& t : th) t.join();
  CHECK(test::drain_or_report(rt, 30s));
  for (auto& c : checks) {
    CHECK(c->violations() == 0);
    CHECK(c->wrong_counts(1) == 0);
  }
  CHECK(shared_next == kShared);
  CHECK(shared.violations() == 0);
  CHECK(shared.wrong_counts(1) == 0);
}

TEST_CASE("graphs: random DAGs of 1 to 100,000 nodes run each node once per launch, after its predecessors") {
  const DagShape shapes[] = {{1, 0, 1, 1},        {2, 1, 1, 1},         {17, 3, 8, 4},         {1000, 4, 64, 1},
                             {1000, 2, 1000, 4},  {20000, 20, 200, 1},  {100000, 4, 64, 1},    {100000, 3, 5000, 4},
                             {300, 3, 16, 6000},  {2000, 4, 64, 3000}};
  DagSet set(shapes, 17);
  auto& dags = set.dags;
  auto& checks = set.checks;
  Runtime rt;
  const std::uint32_t op = load_order(rt);
  for (std::size_t i = 0; i < dags.size(); ++i) {
    CAPTURE(dags[i].size());
    CAPTURE(shapes[i].window);
    CAPTURE(shapes[i].max_tiles);
    GraphExec ge(rt, graph_of(dags[i], *checks[i], op));
    // Three launches back to back (each after the previous one), then one waited alone.
    const Ticket a = ge.launch();
    const Ticket b = ge.launch();
    const Ticket c = ge.launch();
    CHECK(rt.wait(a, test::slowed(60s)));
    CHECK(rt.wait(b, test::slowed(60s)));
    CHECK(rt.wait(c, test::slowed(60s)));
    CHECK(rt.wait(ge.launch(), test::slowed(60s)));
    CHECK(checks[i]->violations() == 0);
    CHECK(checks[i]->wrong_counts(4) == 0);
  }
  CHECK(test::drain_or_report(rt, 30s));
  // Launches of two instances interleave freely; each instance's launches stay in order.
  checks[3]->reset();
  checks[4]->reset();
  GraphExec g3(rt, graph_of(dags[3], *checks[3], op)), g4(rt, graph_of(dags[4], *checks[4], op));
  const int kPairs = static_cast<int>(test::scaled(50, 4));
  for (int k = 0; k < kPairs; ++k) {
    g3.launch();
    g4.launch();
  }
  CHECK(test::drain_or_report(rt, 60s));
  CHECK(checks[3]->violations() == 0);
  CHECK(checks[3]->wrong_counts(static_cast<unsigned>(kPairs)) == 0);
  CHECK(checks[4]->violations() == 0);
  CHECK(checks[4]->wrong_counts(static_cast<unsigned>(kPairs)) == 0);
}

TEST_CASE("graphs: an operator that awaits its inputs itself is called before them and still runs after them") {
  // Every other node of each DAG awaits its inputs itself; placed launches call it before its
  // predecessors are complete (a spread node's chunks on many blocks, a node of many tiles claimed).
  const DagShape shapes[] = {{2, 1, 1, 1},       {17, 3, 8, 4},      {1000, 4, 64, 1},  {1000, 2, 1000, 4},
                             {20000, 20, 200, 1}, {300, 3, 16, 6000}, {2000, 4, 64, 3000}};
  DagSet set(shapes, 91);
  auto& dags = set.dags;
  auto& checks = set.checks;
  Runtime rt;
  const std::uint32_t op = load_order(rt);
  rt.load_operator_source("order_await.cu", kOrderAwaitSource);
  const std::uint32_t op_await = rt.op_id("order_await");
  std::size_t early = 0;
  for (std::size_t i = 0; i < dags.size(); ++i) {
    CAPTURE(dags[i].size());
    CAPTURE(shapes[i].max_tiles);
    GraphExec ge(rt, graph_of(dags[i], *checks[i], op, op_await));
    const Ticket a = ge.launch();
    const Ticket b = ge.launch();
    CHECK(rt.wait(a, test::slowed(60s)));
    CHECK(rt.wait(b, test::slowed(60s)));
    CHECK(rt.wait(ge.launch(), test::slowed(60s)));
    CHECK(checks[i]->violations() == 0);
    CHECK(checks[i]->wrong_counts(3) == 0);
    early += checks[i]->early_calls();
  }
  // Placed launches (the default; scripts/gpu_run.sh runs the suite again with GPUOS_GRAPH_PLACED=0,
  // which never calls early) call the operator before its inputs are complete: over these DAGs' thousands
  // of nodes spread over the grid, some call finds its first predecessor still running.
  MESSAGE("awaiting calls made before their inputs were complete: " << early);
  if (placed_launches()) CHECK(early > 0);
  // The same operator as a plain task: nothing to await, it runs at once, after its dependencies.
  checks[1]->reset();
  for (std::uint32_t v = 0; v < dags[1].size(); ++v) CHECK(rt.wait(rt.submit(checks[1]->task(op_await, v)), test::slowed(10s)));
  CHECK(checks[1]->violations() == 0);
  CHECK(checks[1]->early_calls() == 0);
  CHECK(checks[1]->wrong_counts(1) == 0);
  CHECK(test::drain_or_report(rt, 30s));
}

TEST_CASE("graphs: a claimed node's roles call an operator that awaits its inputs before they arrive") {
  // A slow node of one tile, then a node of 16,384 tiles whose operator awaits its inputs: placed, every
  // role claims its tiles (kPlacedClaim) and calls the operator after its first claim, before the wait,
  // while the slow node still runs. Every tile runs once a launch, after the slow node.
  Dag d;
  d.preds = {{}, {0}};
  d.tiles = {1, 16384};
  OrderCheck oc(d);
  Runtime rt;
  REQUIRE(rt.device_info().grid_blocks * gpuos::detail::kClaimFrom <= d.tiles[1]);  // claimed
  rt.load_operator_source("order_slow.cu", kOrderSlowSource);
  rt.load_operator_source("order_await.cu", kOrderAwaitSource);
  Graph g;
  REQUIRE(g.add(oc.task(rt.op_id("order_slow"), 0)) == 0);
  REQUIRE(g.add(oc.task(rt.op_id("order_await"), 1)) == 1);
  g.edge(0, 1);
  GraphExec ge(rt, g);
  const Ticket a = ge.launch();
  const Ticket b = ge.launch();
  CHECK(rt.wait(a, test::slowed(30s)));
  CHECK(rt.wait(b, test::slowed(30s)));
  CHECK(rt.wait(ge.launch(), test::slowed(30s)));
  CHECK(oc.violations() == 0);
  CHECK(oc.wrong_counts(3) == 0);
  MESSAGE("calls of the claimed node made before its input was complete: " << oc.early_calls());
  if (placed_launches())
    CHECK(oc.early_calls() > 0);
  else
    CHECK(oc.early_calls() == 0);  // unplaced launches call an operator once its inputs are complete
  CHECK(test::drain_or_report(rt, 30s));
}

TEST_CASE("graphs: an operator with a range function runs each tile once, in calls of consecutive tiles") {
  // Every other node runs the range operator: a placed node's item of several tiles, a claimed batch and
  // a plain task's batch are each one call of the range function.
  const DagShape shapes[] = {{17, 3, 8, 4}, {1000, 2, 1000, 4}, {300, 3, 16, 6000}, {2000, 4, 64, 3000}};
  DagSet set(shapes, 57);
  auto& dags = set.dags;
  auto& checks = set.checks;
  auto load = [](Runtime& rt) {
    const std::uint32_t op = load_order(rt);
    rt.load_operator_source("order_ranges.cu", kOrderRangesSource);
    return std::pair{op, rt.op_id("order_ranges")};
  };
  // DAG 2 as plain tasks; returns the range calls of more than one tile.
  auto plain = [&](Runtime& rt, std::uint32_t op, std::uint32_t op_ranges) {
    return run_plain(rt, dags[2], *checks[2], op, op_ranges);
  };
  std::uint32_t grid = 0;
  {
    Runtime rt;
    grid = rt.device_info().grid_blocks;
    const auto [op, op_ranges] = load(rt);
    const std::size_t multi = launch_each_twice(rt, set, op, op_ranges);
    const bool any_big = std::any_of(dags.begin(), dags.end(), [&](const Dag& d) { return has_big_node(d, grid); });
    // Placed launches give a role an item of several tiles of such a node (unplaced ones claim them as
    // plain tasks do: one tile a claim at the default spread).
    MESSAGE("range calls of more than one tile in graph launches: " << multi);
    if (any_big && placed_launches()) CHECK(multi > 0);
    plain(rt, op, op_ranges);
    CHECK(test::drain_or_report(rt, 30s));
  }
  // Claims of (tiles left) / grid: a plain task's claimed batches of several tiles, one call each.
  ::setenv("GPUOS_CLAIM_SPREAD", "1", 1);
  Runtime rt;
  ::unsetenv("GPUOS_CLAIM_SPREAD");
  const auto [op, op_ranges] = load(rt);
  const unsigned multi = plain(rt, op, op_ranges);
  MESSAGE("range calls of more than one tile in plain tasks, spread 1: " << multi);
  if (has_big_node(dags[2], grid)) CHECK(multi > 0);
  CHECK(test::drain_or_report(rt, 30s));
}

TEST_CASE("graphs: an operator with a stream function runs each tile once, going on with its block's claims") {
  // Every other node runs the stream operator: a placed item's tiles are one run; a claimed node's (and a
  // large plain task's) block takes its further claims in the same call (gpuos::TileRuns::next). DAG 2's
  // largest nodes have kClaimFrom tiles a block or more (placed, they are claimed).
  const DagShape shapes[] = {{17, 3, 8, 4}, {1000, 2, 1000, 4}, {300, 3, 16, 20000}, {2000, 4, 64, 3000}};
  DagSet set(shapes, 91);
  auto& dags = set.dags;
  auto& checks = set.checks;
  Runtime rt;
  const std::uint32_t grid = rt.device_info().grid_blocks;
  const std::uint32_t op = load_order(rt);
  rt.load_operator_source("order_streams.cu", kOrderStreamsSource);
  const std::uint32_t op_streams = rt.op_id("order_streams");
  const std::size_t further = launch_each_twice(rt, set, op, op_streams);
  const bool any_big = std::any_of(dags.begin(), dags.end(), [&](const Dag& d) { return has_big_node(d, grid); });
  MESSAGE("runs taken with TileRuns::next in graph launches: " << further);
  if (any_big) CHECK(further > 0);
  // DAG 2 as plain tasks.
  const unsigned plain = run_plain(rt, dags[2], *checks[2], op, op_streams);
  MESSAGE("runs taken with TileRuns::next in plain tasks: " << plain);
  if (has_big_node(dags[2], grid)) CHECK(plain > 0);
  CHECK(test::drain_or_report(rt, 30s));
}

TEST_CASE("graphs: a long chain runs as one block's continuations, and moves to another block mid-way") {
  // Links of 1 tile: add (x += 1), then sum (out[k] = sum of x: per-task scratch and a finish function);
  // every 50th link also an add of 8 tiles on z (a node the chain hands to the grid and takes back).
  const std::uint32_t kLinks = static_cast<std::uint32_t>(test::scaled(1000, 64));
  constexpr std::uint32_t kN = GPUOS_ELEMS_PER_TILE, kBig = 8 * GPUOS_ELEMS_PER_TILE;
  test::DeviceBuffer x(kN), ones(kBig), out(kLinks), z(kBig);
  test::ExactlyOnce once(test::scaled(20000, 1000));
  ones.upload(std::vector<float>(kBig, 1.0f));
  Runtime rt;
  Graph g;
  std::uint32_t prev = g.add(ops::add(x.get(), x.get(), ones.get(), kN));
  std::uint32_t big = 0;
  for (std::uint32_t k = 0; k < kLinks; ++k) {
    if (k > 0) prev = g.add(ops::add(x.get(), x.get(), ones.get(), kN), {prev});
    prev = g.add(ops::sum(out.get() + k, x.get(), kN), {prev});
    if (k % 50 == 49) {
      prev = g.add(ops::add(z.get(), z.get(), ones.get(), kBig), {prev});
      ++big;
    }
  }
  GraphExec ge(rt, g);
  const auto check = [&](std::uint32_t launches) {
    const auto xs = x.download(), os = out.download(), zs = z.download();
    CHECK(std::count(xs.begin(), xs.end(), static_cast<float>(launches * kLinks)) == kN);
    std::size_t wrong = 0;
    for (std::uint32_t k = 0; k < kLinks; ++k)
      wrong += os[k] != static_cast<float>(kN) * static_cast<float>((launches - 1) * kLinks + k + 1);
    CHECK(wrong == 0);
    CHECK(std::count(zs.begin(), zs.end(), static_cast<float>(launches * big)) == kBig);
  };
  // Alone: the chain stays in one block, its writes seen by the host once the launch completes.
  CHECK(rt.wait(ge.launch(), test::slowed(30s)));
  check(1);
  // With other work arriving meanwhile: a block running the chain leaves it (on the board) for its own
  // ticket, and another block goes on with it; the links' writes must follow them there.
  std::thread other([&] {
    for (std::size_t e = 0; e < once.size(); ++e) rt.submit(once.task(e));
  });
  for (std::uint32_t l = 2; l <= 6; ++l) CHECK(rt.wait(ge.launch(), test::slowed(30s)));
  other.join();
  CHECK(test::drain_or_report(rt, 30s));
  check(6);
  const test::ExactlyOnce::Counts c = once.count();
  CHECK(c.never == 0);
  CHECK(c.twice == 0);
  CHECK(c.other == 0);
}

TEST_CASE("graphs: a launch runs after the tickets it names; tasks can wait for a launch") {
  const Dag d = random_dag(500, 3, 32, 4, 5);
  OrderCheck oc(d);
  Dag before = chain(200), after = chain(2);
  OrderCheck ob(before), oa(after);
  Runtime rt;
  const std::uint32_t op = load_order(rt);
  GraphExec ge(rt, graph_of(d, oc, op));
  // A chain of 200 tasks, the launch after its last, a task after the launch: the launch's roots must
  // see the chain done (checked by hand below), the last task must see the launch done.
  Ticket prev = rt.submit(ob.task(op, 0));
  for (std::uint32_t v = 1; v < 200; ++v) prev = rt.submit_after(ob.task(op, v), std::span<const Ticket>(&prev, 1));
  const Ticket launch = ge.launch(std::span<const Ticket>(&prev, 1));
  const Ticket last = rt.submit_after(ops::nop(), std::span<const Ticket>(&launch, 1));
  CHECK(rt.wait(last, test::slowed(30s)));
  CHECK(rt.wait(launch, 0s));  // done already: `last` ran after it
  CHECK(rt.wait(prev, 0s));
  CHECK(ob.violations() == 0);
  CHECK(oc.violations() == 0);
  CHECK(oc.wrong_counts(1) == 0);
  // Lanes order launches with tasks.
  Lane lane(rt);
  rt.submit_after(oa.task(op, 0), {}, &lane);
  ge.launch({}, &lane);
  rt.submit_after(oa.task(op, 1), {}, &lane);
  CHECK(test::drain_or_report(rt, 30s));
  CHECK(oa.violations() == 0);
  CHECK(oa.wrong_counts(1) == 0);
  CHECK(oc.wrong_counts(2) == 0);
}

TEST_CASE("graphs: arguments set between launches apply from the next launch on, launches pipelined") {
  test::DeviceBuffer x(4096), acc(4096);
  Runtime rt;
  acc.upload(std::vector<float>(4096, 0.0f));
  // fill x with v, then acc += x: after launches with v = 1..K, acc = K (K + 1) / 2 everywhere.
  Graph g;
  const auto f = g.add(ops::fill(x.get(), 0.0f, 4096));
  g.add(ops::axpy(acc.get(), 1.0f, x.get(), 4096), {f});
  GraphExec ge(rt, g);
  const int K = static_cast<int>(test::scaled(200, 8));
  for (int k = 1; k <= K; ++k) {
    ge.set_args(f, gpuos_fill_args{x.get(), 4096, float(k), 0});
    ge.launch();  // not waited: the arguments travel with the launch
  }
  CHECK(test::drain_or_report(rt, 30s));
  const auto h = acc.download();
  CHECK(std::count(h.begin(), h.end(), float(K * (K + 1) / 2)) == 4096);
  // Wrong size or node: refused, the instance untouched.
  CHECK_THROWS_AS(ge.set_args(f, std::uint64_t{0}), Error);  // 8 bytes, the node takes 24
  CHECK_THROWS_AS(ge.set_args(7, gpuos_fill_args{}), Error);
  CHECK(rt.wait(ge.launch(), test::slowed(10s)));
}

TEST_CASE("graphs: launches across a generation switch and alias switches use what is current at launch") {
  // Every buffer before the runtime: memcheck checks a kernel's accesses against the allocations made
  // before its launch.
  test::DeviceBuffer x(256), y(256), y2(256);
  const auto scale_src = [](const char* name, float k) {
    return std::string(R"(
#include "gpuos/op.cuh"
struct ScaleArgs { float* y; const float* x; unsigned long long n; };
__device__ void tile_)") + name + R"((const ScaleArgs& a, const gpuos::TileCtx& c) {
  for (unsigned long long i = threadIdx.x; i < a.n; i += blockDim.x) a.y[i] = )" + std::to_string(k) +
           R"(f * a.x[i];
}
GPUOS_OPERATOR()" + name + ", ScaleArgs, tile_" + name + ")\n";
  };
  struct ScaleArgs {
    float* y;
    const float* x;
    unsigned long long n;
  };
  Runtime rt;
  x.upload(std::vector<float>(256, 1.0f));
  rt.load_operator_source("twice.cu", scale_src("twice", 2.0f));
  rt.load_operator_source("thrice.cu", scale_src("thrice", 3.0f));
  rt.alias_set("scale", "twice");
  Graph g;
  g.add(Task::make(rt.op_id("scale"), 1, ScaleArgs{y.get(), x.get(), 256}));
  GraphExec ge(rt, g);
  const auto y0 = [&] { return y.download(1)[0]; };
  CHECK(rt.wait(ge.launch(), test::slowed(10s)));
  CHECK(y0() == 2.0f);
  rt.alias_set("scale", "thrice");
  CHECK(rt.wait(ge.launch(), test::slowed(10s)));
  CHECK(y0() == 3.0f);
  // Pipelined: launch, flip, launch: each launch runs the target current when it was launched.
  Graph g2;
  g2.add(Task::make(rt.op_id("scale"), 1, ScaleArgs{y2.get(), x.get(), 256}));
  GraphExec ge2(rt, g2);
  rt.alias_rollback("scale");  // twice
  const Ticket a = ge.launch();
  rt.alias_set("scale", "thrice");
  const Ticket b = ge2.launch();
  CHECK(rt.wait(a, test::slowed(10s)));
  CHECK(rt.wait(b, test::slowed(10s)));
  CHECK(y0() == 2.0f);
  CHECK(y2.download(1)[0] == 3.0f);
  // A generation switch (another operator loaded) between launches: the instance keeps working.
  rt.load_operator_source("half.cu", scale_src("half", 0.5f));
  CHECK(rt.wait(ge.launch(), test::slowed(10s)));
  CHECK(y0() == 3.0f);
  // An operator of a node removed: the next launch is refused, naming the node; nothing is issued.
  Graph g3;
  g3.add(ops::nop());
  g3.add(Task::make(rt.op_id("half"), 1, ScaleArgs{y.get(), x.get(), 256}));
  GraphExec ge3(rt, g3);
  CHECK(rt.wait(ge3.launch(), test::slowed(10s)));
  CHECK(y0() == 0.5f);
  rt.remove_operator_source("half.cu");
  const auto before = rt.stats();
  try {
    ge3.launch();
    FAIL("a launch with a removed operator must be refused");
  } catch (const Error& e) {
    CHECK(e.status() == GPUOS_ERR_INVALID_ARG);
    CHECK(std::string(e.what()).find("node 1") != std::string::npos);
  }
  CHECK(rt.stats().submitted == before.submitted);
  CHECK(rt.wait(ge.launch(), test::slowed(10s)));
}

TEST_CASE("graphs: suspend and resume with launches and dependent tasks in flight") {
  const Dag d = random_dag(test::scaled(5000, 64), 4, 64, 3000, 9);
  OrderCheck oc(d);
  Runtime rt;
  const std::uint32_t op = load_order(rt);
  GraphExec ge(rt, graph_of(d, oc, op));
  std::vector<Ticket> ts;
  for (int k = 0; k < 20; ++k) {
    ts.push_back(ge.launch());
    if (k == 5) rt.suspend();
    if (k == 12) rt.resume();
  }
  rt.suspend();
  ts.push_back(rt.submit_after(ops::nop(), ts));
  rt.resume();
  for (Ticket t : ts) CHECK(rt.wait(t, test::slowed(60s)));
  CHECK(oc.violations() == 0);
  CHECK(oc.wrong_counts(20) == 0);
}

TEST_CASE("a ring of 64 slots: dependencies far back, graphs larger than the ring, staging reuse") {
  const Dag d = random_dag(test::scaled(3000, 200), 3, 100, 1, 3);
  OrderCheck oc(d);
  const Dag c = chain(test::scaled(5000, 200));
  OrderCheck occ(c);
  test::DeviceBuffer x(1), acc(1);
  Runtime rt(Options().with_queue_capacity(64));
  const std::uint32_t op = load_order(rt);
  acc.upload({0.0f});
  // Each task waits for the one 100 tickets back (long out of the ring) and its predecessor.
  std::vector<Ticket> ticket(c.size());
  ticket[0] = rt.submit(occ.task(op, 0));
  for (std::uint32_t v = 1; v < c.size(); ++v) {
    std::vector<Ticket> after{ticket[v - 1]};
    if (v >= 100) after.push_back(ticket[v - 100]);
    ticket[v] = rt.submit_after(occ.task(op, v), after);
  }
  GraphExec ge(rt, graph_of(d, oc, op));
  Graph small;
  const auto f = small.add(ops::fill(x.get(), 0.0f, 1));
  small.add(ops::axpy(acc.get(), 1.0f, x.get(), 1), {f});
  GraphExec gs(rt, small);
  // 300 launches with argument updates: the staging ring's space is reused many times over.
  for (int k = 1; k <= 300; ++k) {
    gs.set_args(f, gpuos_fill_args{x.get(), 1, float(k), 0});
    gs.launch();
    if (k % 30 == 0) ge.launch();
  }
  CHECK(test::drain_or_report(rt, 60s));
  CHECK(occ.violations() == 0);
  CHECK(occ.wrong_counts(1) == 0);
  CHECK(oc.violations() == 0);
  CHECK(oc.wrong_counts(10) == 0);
  CHECK(acc.download()[0] == float(300 * 301 / 2));
}

TEST_CASE("graph instances: instantiate and destroy many, more than the heap holds at once") {
  // Under GPUOS_TEST_SCALE the DAG and the heap shrink together, so that 60 instances in turn still take
  // far more than the heap holds.
  const Dag d = random_dag(test::scaled(20000, 200), 4, 64, 1, 4);
  OrderCheck oc(d);
  Runtime rt(Options().with_heap(std::max<std::uint64_t>((64ull << 20) / test::scale(), 1ull << 20)));
  const std::uint32_t op = load_order(rt);
  const Graph g = graph_of(d, oc, op);
  // Each instance takes several MB of the heap; 60 of them in turn take far more than 64 MB.
  for (unsigned k = 1; k <= 60; ++k) {
    GraphExec ge(rt, g);
    CHECK(rt.wait(ge.launch(), test::slowed(30s)));
  }
  CHECK(oc.violations() == 0);
  CHECK(oc.wrong_counts(60) == 0);
  // A destroyed instance's launches finished first; an instance outliving nothing it needs.
  auto ge = std::make_unique<GraphExec>(rt, g);
  for (int k = 0; k < 10; ++k) ge->launch();
  ge.reset();  // waits for its launches
  CHECK(oc.wrong_counts(70) == 0);
  CHECK(test::drain_or_report(rt, 10s));
  std::string why;
  CHECK_MESSAGE(rt.heap_check(&why), why);
}
