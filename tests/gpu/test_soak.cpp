// Soak: mixed load for a long time with every result checked, and the runtime's counters, the device
// heap's invariants and the process's memory checked at intervals.
//
// Environment:
//   GPUOS_SOAK_SECONDS        how long the load runs (default 120: the GPU suite's run; scripts/gpu_run.sh's
//                             `soak` part runs 1800)
//   GPUOS_SOAK_CHECK_SECONDS  the interval between checks (default: a quarter of the run, at least 1 s and
//                             at most 60 s: 30 s for the suite's 2 minutes, 60 s for a 30-minute soak)
// The meson test's timeout (tests/meson.build) fits the default duration; a longer run from meson needs
// --timeout-multiplier, or run the binary itself.
//
// The load, each worker a thread of its own, all of them from boot to the end:
// - tiny (3 threads): rounds of 16,384 one-element axpy tasks, each adding 1 to a counter of its own, sent
//   as single submits, try_submits, batches of 2-256 and tasks that wait for an earlier ticket of the
//   round; meanwhile 512 more through the thread's lane, 32 on each of 16 counters (a lane runs them one
//   after the other, so no increment is lost to another running at the same time). At a round's end
//   every counter must be exactly 1 (lane counters 32), then they are reset.
// - large: pairs of adds of 1M-64M floats, out = a + b at random offsets into a and b, whose elements are
//   small integers made from their index (exact sums), into buffers poisoned (NaN) first; every element
//   of each result is compared on the host, and the 1,024 floats after it must still be NaN.
// - tags (2 threads): rounds of 8,192 tag tasks (tools/tag_operator.hpp: out[0] += version), single and in
//   batches, one thread on the operator that generation switches replace, one on the alias that alias
//   flips point at one version or the other; each task's float must hold the version of the cut its
//   ticket falls under (switch_util.hpp's rule), 0 is a lost task, twice the version a duplicated one.
// - graph: one instance of a 43-node graph (8 copies fanning out to 16 adds and multiplies, a tree of
//   adds fanning in, an axpy, a sum; a node of the generation-switched operator and one of the alias),
//   launched over and over with new copy offsets, axpy factor and tag slots (set_args), plainly, in a
//   lane after a task, or after a ticket; every launch's result vector, sum and tags are checked.
// - heap: host gpuos_alloc / gpuos_free of 0 bytes to 1 MiB at alignments of 16 B to 4 KiB (at most 128
//   blocks, 32 MiB, outstanding), each block's first and last 256 bytes written with a pattern that is
//   checked before its free; every 16 steps a task of an operator loaded at run time whose tiles each
//   allocate, fill, verify and free a block with gpuos::dev::malloc / free. Calls refused while the
//   runtime is suspended are made again after the resume.
// - switches: a new version of the tag operator loaded every 2-4 s (versions 2^0 .. 2^7 in turn: after the
//   first eight switches every image comes from the compile cache, whose memory then stops growing).
// - alias flips: every 80-120 ms the alias is pointed at its other target (alias_set, alias_rollback).
// - suspend: every 2-4 s the runtime is suspended for 5-30 ms and resumed.
//
// Every check interval and at the end, one line: elapsed time, tasks submitted and checked (by kind),
// lost / duplicated / wrong and errors (each must be 0), the runtime's statistics, switches, flips and
// suspends, the heap's statistics, host RSS (/proc/self/status VmRSS, after malloc_trim) and device
// memory in use (cuMemGetInfo). At each check: the heap worker frees its blocks and waits, the heap's
// used bytes and blocks must be what they were before the load began (the graph instance) and the heap
// checker must pass; host RSS and device memory in use must stay within 64 MiB of the first check's
// (taken between generation switches, so no compile or image load is under way); with intervals of 10 s
// or more, every worker must have made progress. At the end: the workers stop after their round, a
// drain, every result checked, completed == submitted with no failures, per-operator completions equal
// the tasks sent, the heap back to its baseline and whole, and gpuos_diagnose reports no violated
// invariant.
#include <doctest/doctest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"
#include "tools/tag_operator.hpp"

using namespace gpuos;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// ---- settings ---------------------------------------------------------------------------------------

constexpr double kDefaultSeconds = 120;
constexpr double kMaxDefaultCheckSeconds = 60;
/// Growth of host RSS and of device memory in use over the first check's that a check allows.
constexpr double kMemoryGrowthMiB = 64;
/// Checks of at least this interval require every worker to have made progress since the last one.
constexpr double kProgressCheckSeconds = 10;
/// The longest a worker waits for one task (a longer wait is reported with the runtime's state).
constexpr auto kTaskWait = 60s;

double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d > 0)) {
    MESSAGE(name << "=" << v << " is not a positive number of seconds: using " << fallback);
    return fallback;
  }
  return d;
}

// ---- the load's sizes -------------------------------------------------------------------------------

constexpr unsigned kTinyThreads = 3;
constexpr size_t kTinyCells = 16384;   // exactly-once counters of one round
constexpr size_t kChainCells = 16;     // counters the lane's tasks add to
constexpr size_t kChainLength = 32;    // lane tasks per chain counter and round
constexpr size_t kTagRound = 8192;     // tag tasks per round

constexpr size_t kLargeMax = 64u << 20;    // floats of the largest add
constexpr size_t kLargeMin = 1u << 20;
constexpr size_t kLargeOffsets = 1u << 20;  // offsets into a and b are below this
constexpr size_t kLargeGuard = 1024;        // floats after a result that must stay untouched
constexpr size_t kLargeChunk = 4u << 20;    // floats per host check chunk

constexpr size_t kGraphN = 16384;            // floats per graph node buffer (4 tiles)
constexpr size_t kGraphOffsets = 65536;      // copy offsets into the graph's input are below this
constexpr unsigned kGraphBuffers = 8 + 16 + 8 + 4 + 2 + 1;  // X, M, P, Q, R, T

constexpr size_t kHeapMaxBlocks = 128;
constexpr size_t kHeapMaxBytes = 32u << 20;
constexpr size_t kHeapPattern = 256;       // bytes written and checked at each end of a host block
constexpr uint32_t kHeapTaskMaxTiles = 64;

constexpr unsigned kGenVersions = 8;       // the tag operator's versions: 2^0 .. 2^7 in turn
constexpr float kAliasA = 3.0f, kAliasB = 5.0f;  // the alias's two targets (no sum of runs passes for the other)

constexpr const char* kGenSource = "soak_gen.cu";
constexpr const char* kAlias = "soak_alias";

/// The operator whose tiles each allocate, fill, verify and free a block of the device heap; a tile adds
/// 1 to out[tile] when all went well, 1000 when malloc returned null, 1000000 when the block was
/// misaligned, its contents wrong or the free refused.
const char* kHeapSource = R"(#include "gpuos/op.cuh"
struct SoakHeapArgs { unsigned* out; unsigned long long bytes; unsigned long long seed; };
__device__ void soak_heap_tile(const SoakHeapArgs& a, const gpuos::TileCtx& c) {
  __shared__ unsigned char* block;
  __shared__ unsigned bad;
  const unsigned long long bytes = a.bytes + (c.tile * 97ull) % 512;
  const unsigned long long align = 16ull << (c.tile % 4);
  if (threadIdx.x == 0) {
    block = static_cast<unsigned char*>(gpuos::dev::malloc(bytes, align));
    bad = block && reinterpret_cast<unsigned long long>(block) % align != 0;
  }
  __syncthreads();
  unsigned char* p = block;
  const unsigned salt = static_cast<unsigned>(a.seed) + c.tile;
  if (p)
    for (unsigned long long i = threadIdx.x; i < bytes; i += blockDim.x)
      p[i] = static_cast<unsigned char>(i * 7u + salt);
  __syncthreads();
  if (p)
    for (unsigned long long i = threadIdx.x; i < bytes; i += blockDim.x)
      if (p[(i + 1) % bytes] != static_cast<unsigned char>(((i + 1) % bytes) * 7u + salt)) atomicAdd(&bad, 1u);
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned code = p == nullptr ? 1000u : (bad ? 1000000u : 1u);
    if (p && gpuos::dev::free(p) != 0) code = 1000000u;
    atomicAdd(a.out + c.tile, code);
  }
}
GPUOS_OPERATOR(soak_heap, SoakHeapArgs, soak_heap_tile)
)";

struct SoakHeapArgs {
  unsigned* out;
  unsigned long long bytes;
  unsigned long long seed;
};

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
/// The large adds' inputs: integers below 4096, so every sum is exact.
float large_a(uint64_t i) { return static_cast<float>(mix64(i) & 4095u); }
float large_b(uint64_t i) { return static_cast<float>(mix64(i + (1ull << 40)) & 4095u); }
/// The graph's input: integers 0..3 (every node's value, and the sum of the last, stays exact).
float graph_in(uint64_t i) { return static_cast<float>(mix64(3 * i + 7) & 3u); }

// ---- what the workers found -------------------------------------------------------------------------

/// Counters every worker adds to, the first messages about what went wrong, and the stop flag. Workers
/// never assert: the main thread reads this at each check.
struct Tally {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> submitted{0}, checked{0};  // tasks whose results are checked, and those checked
  std::atomic<uint64_t> lost{0}, duplicated{0}, wrong{0}, errors{0};
  // Tasks checked per kind (graph: launches; heap_host: blocks allocated, verified and freed).
  std::atomic<uint64_t> tiny{0}, tag_gen{0}, tag_alias{0}, large{0}, graph{0}, heap_host{0}, heap_device{0};
  std::atomic<uint64_t> switches{0}, flips{0}, suspends{0};

  void note(const std::string& s) {
    std::lock_guard<std::mutex> l(mu_);
    if (notes_.size() < 24) notes_.push_back(s);
  }
  /// An error ends the soak: the workers stop after their round.
  void error(const std::string& s) {
    errors++;
    note("error: " + s);
    stop.store(true);
  }
  std::vector<std::string> notes() const {
    std::lock_guard<std::mutex> l(mu_);
    return notes_;
  }
  bool failed() const { return lost.load() || duplicated.load() || wrong.load() || errors.load(); }
  /// Sleeps `d` or until stopped; false once stopped.
  bool nap(std::chrono::microseconds d) const {
    const auto until = Clock::now() + d;
    while (!stop.load()) {
      const auto now = Clock::now();
      if (now >= until) return true;
      std::this_thread::sleep_for(std::min<Clock::duration>(until - now, 20ms));
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> notes_;
};

/// Waits for a task; a timeout is an error (with the runtime's state), a failure throws.
bool wait_for(Runtime& rt, Tally& tally, Ticket t, const char* what) {
  if (rt.wait(t, kTaskWait)) return true;
  tally.error(std::string(what) + ": ticket " + std::to_string(t) + " not done within " +
              std::to_string(kTaskWait.count()) + " s; runtime state:\n" + rt.diagnose());
  return false;
}

/// Calls f again while the runtime refuses it for a suspension (heap requests), for up to 60 s.
template <class F>
auto while_suspended(F&& f) -> decltype(f()) {
  const auto deadline = Clock::now() + 60s;
  for (;;) {
    try {
      return f();
    } catch (const Error& e) {
      if (e.status() != GPUOS_ERR_UNAVAILABLE || Clock::now() > deadline) throw;
    }
    std::this_thread::sleep_for(1ms);
  }
}

/// Submits unless the queue stays full; yields meanwhile (a suspended runtime fills it).
Ticket try_submit_until(Runtime& rt, const Task& t) {
  for (;;) {
    if (const std::optional<Ticket> k = rt.try_submit(t)) return *k;
    std::this_thread::yield();
  }
}

// ---- cuts ---------------------------------------------------------------------------------------------

/// The versions an operator (or alias) served, as (first ticket, version) in ticket order: a task with
/// ticket t ran the version of the last cut <= t. The switching thread holds the log's lock across the
/// switch and its record, so a reader that takes it after its tasks completed sees every cut they fell
/// under. The latest kKeep cuts are kept (hours of switches, minutes of flips).
class CutLog {
 public:
  static constexpr size_t kKeep = 8192;

  /// Runs `f` (a switch; returns its first ticket and version) and records the cut, under the lock.
  template <class F>
  void record(F&& f) {
    std::lock_guard<std::mutex> l(mu_);
    const std::pair<uint64_t, float> c = f();
    if (!cuts_.empty() && c.first < cuts_.back().first) out_of_order_++;
    cuts_.push_back(c);
    if (cuts_.size() > kKeep) cuts_.pop_front();
  }
  /// The version each ticket ran; NaN for a ticket before the oldest cut kept.
  void versions(std::span<const Ticket> tickets, std::vector<float>& out) const {
    std::lock_guard<std::mutex> l(mu_);
    out.resize(tickets.size());
    for (size_t i = 0; i < tickets.size(); ++i) out[i] = version_locked(tickets[i]);
  }
  float version(Ticket t) const {
    std::lock_guard<std::mutex> l(mu_);
    return version_locked(t);
  }
  /// Holds the lock: no switch is under way while it is held.
  std::unique_lock<std::mutex> hold() const { return std::unique_lock<std::mutex>(mu_); }
  uint64_t out_of_order() const {
    std::lock_guard<std::mutex> l(mu_);
    return out_of_order_;
  }

 private:
  float version_locked(Ticket t) const {
    auto it = std::upper_bound(cuts_.begin(), cuts_.end(), t,
                               [](uint64_t v, const std::pair<uint64_t, float>& c) { return v < c.first; });
    if (it == cuts_.begin()) return std::numeric_limits<float>::quiet_NaN();
    return std::prev(it)->second;
  }
  mutable std::mutex mu_;
  std::deque<std::pair<uint64_t, float>> cuts_;
  uint64_t out_of_order_ = 0;
};

/// One task's float against the version it should hold: counts it and notes the first few.
void judge_tag(Tally& tally, const char* what, Ticket t, float got, float want) {
  if (got == want && !std::isnan(want)) return;
  const char* kind = "wrong";
  if (std::isnan(want)) {
    tally.errors++;
    kind = "older than the cuts kept";
  } else if (got == 0.0f) {
    tally.lost++;
    kind = "lost";
  } else if (got == 2.0f * want) {
    tally.duplicated++;
    kind = "duplicated";
  } else {
    tally.wrong++;
  }
  std::ostringstream s;
  s << what << ": ticket " << t << " holds " << got << ", expected version " << want << " (" << kind << ")";
  tally.note(s.str());
}

// ---- the workers ------------------------------------------------------------------------------------

/// The device memory of the load; allocated before the runtime boots (it must outlive it).
struct Buffers {
  support::DeviceArray<float> tiny_y{kTinyThreads * (kTinyCells + kChainCells)};
  support::DeviceArray<float> tiny_ones{kTinyCells + kChainCells};
  support::DeviceArray<float> tag_gen{kTagRound}, tag_alias{kTagRound};
  support::DeviceArray<float> large_a{kLargeMax + kLargeOffsets}, large_b{kLargeMax + kLargeOffsets};
  support::DeviceArray<float> large_out0{kLargeMax + kLargeGuard}, large_out1{kLargeMax + kLargeGuard};
  support::DeviceArray<float> graph_in{kGraphN + kGraphOffsets};
  support::DeviceArray<float> graph_nodes{size_t{kGraphBuffers} * kGraphN};
  support::DeviceArray<float> graph_res{8};  // the sum, then two slots of (generation tag, alias tag)
  support::DeviceArray<unsigned> heap_codes{kHeapTaskMaxTiles};
  support::Stream large_stream;  // the large checks' copies, off the stream the small copies share

  Buffers() {
    tiny_ones.upload(std::vector<float>(tiny_ones.size(), 1.0f));
    tiny_y.upload(std::vector<float>(tiny_y.size(), 0.0f));
    tag_gen.upload(std::vector<float>(kTagRound, 0.0f));
    tag_alias.upload(std::vector<float>(kTagRound, 0.0f));
    std::vector<float> in(graph_in.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = ::graph_in(i);
    graph_in.upload(in);
    std::vector<float> chunk(kLargeChunk);
    for (size_t at = 0; at < large_a.size(); at += kLargeChunk) {
      const size_t k = std::min(kLargeChunk, large_a.size() - at);
      for (size_t i = 0; i < k; ++i) chunk[i] = ::large_a(at + i);
      large_stream.upload(large_a.ptr() + at * sizeof(float), chunk.data(), k * sizeof(float));
      for (size_t i = 0; i < k; ++i) chunk[i] = ::large_b(at + i);
      large_stream.upload(large_b.ptr() + at * sizeof(float), chunk.data(), k * sizeof(float));
    }
  }
};

/// Tiny tasks: rounds of exactly-once counters and lane chains (see the file's header).
void tiny_worker(Runtime& rt, Tally& tally, Buffers& buf, unsigned index) {
  constexpr size_t cells = kTinyCells + kChainCells;
  float* const y = buf.tiny_y.get() + index * cells;
  const float* const ones = buf.tiny_ones.get();
  auto task = [&](size_t e) { return ops::axpy(y + e, 1.0f, ones + e, 1); };
  Lane lane(rt);
  std::mt19937_64 rng(100 + index);
  std::vector<Ticket> tickets;
  tickets.reserve(kTinyCells + kChainCells * kChainLength);
  std::vector<Task> batch;
  batch.reserve(256);
  const std::vector<float> zeros(cells, 0.0f);
  std::vector<float> h(cells);
  while (!tally.stop.load()) {
    tickets.clear();
    size_t e = 0, chained = 0;
    constexpr size_t chain_total = kChainCells * kChainLength;
    auto chain = [&](size_t k) {
      for (size_t j = 0; j < k && chained < chain_total; ++j, ++chained)
        tickets.push_back(rt.submit_after(task(kTinyCells + chained % kChainCells), {}, &lane));
    };
    while (e < kTinyCells) {
      const size_t left = kTinyCells - e;
      switch (rng() % 8) {
        case 0: case 1: case 2:
          for (size_t k = std::min<size_t>(left, 1 + rng() % 32); k > 0; --k) tickets.push_back(rt.submit(task(e++)));
          break;
        case 3:
          for (size_t k = std::min<size_t>(left, 1 + rng() % 32); k > 0; --k)
            tickets.push_back(try_submit_until(rt, task(e++)));
          break;
        case 4: case 5: case 6: {
          const size_t k = std::min<size_t>(left, 2 + rng() % 255);
          batch.clear();
          for (size_t j = 0; j < k; ++j) batch.push_back(task(e + j));
          const Ticket first = rt.submit_batch(batch);
          for (size_t j = 0; j < k; ++j) tickets.push_back(first + j);
          e += k;
          break;
        }
        default:
          for (size_t k = std::min<size_t>(left, 1 + rng() % 8); k > 0; --k) {
            if (tickets.empty()) {
              tickets.push_back(rt.submit(task(e++)));
              continue;
            }
            const Ticket after = tickets[rng() % tickets.size()];
            tickets.push_back(rt.submit_after(task(e++), std::span<const Ticket>(&after, 1)));
          }
      }
      chain(2);
    }
    chain(chain_total);
    tally.submitted += tickets.size();
    for (Ticket t : tickets)
      if (!wait_for(rt, tally, t, "tiny task")) return;
    support::copy_to_host(h.data(), y, cells * sizeof(float));
    for (size_t c = 0; c < cells; ++c) {
      const float want = c < kTinyCells ? 1.0f : static_cast<float>(kChainLength);
      const float got = h[c];
      if (got == want) continue;
      std::ostringstream s;
      s << "tiny thread " << index << (c < kTinyCells ? ", counter " : ", lane counter ") << c << " holds " << got
        << ", expected " << want;
      if (got == std::floor(got) && got >= 0.0f && got < want) {
        tally.lost += static_cast<uint64_t>(want - got);
        s << " (lost)";
      } else if (got == std::floor(got) && got > want && got <= 2.0f * want) {
        tally.duplicated += static_cast<uint64_t>(got - want);
        s << " (duplicated)";
      } else {
        tally.wrong++;
      }
      tally.note(s.str());
    }
    support::copy_to_device(y, zeros.data(), cells * sizeof(float));
    tally.checked += tickets.size();
    tally.tiny += tickets.size();
  }
}

/// Tag tasks on `op` (the generation-switched operator or the alias): rounds checked against `log`.
void tag_worker(Runtime& rt, Tally& tally, support::DeviceArray<float>& out, uint32_t op, const CutLog& log,
                const char* what, std::atomic<uint64_t>& checked_of_kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Ticket> tickets;
  tickets.reserve(kTagRound);
  std::vector<Task> batch;
  batch.reserve(64);
  std::vector<float> want, h(kTagRound);
  const std::vector<float> zeros(kTagRound, 0.0f);
  auto task = [&](size_t i) { return Task::make(op, 1, tools::TagArgs{out.get() + i, 0}); };
  while (!tally.stop.load()) {
    tickets.clear();
    while (tickets.size() < kTagRound) {
      const size_t at = tickets.size();
      if (rng() % 4 == 0) {
        const size_t k = std::min<size_t>(kTagRound - at, 8 + rng() % 57);
        batch.clear();
        for (size_t j = 0; j < k; ++j) batch.push_back(task(at + j));
        const Ticket first = rt.submit_batch(batch);
        for (size_t j = 0; j < k; ++j) tickets.push_back(first + j);
      } else {
        tickets.push_back(try_submit_until(rt, task(at)));
      }
    }
    tally.submitted += tickets.size();
    for (Ticket t : tickets)
      if (!wait_for(rt, tally, t, what)) return;
    log.versions(tickets, want);  // after the waits: every cut these tickets fall under is recorded
    support::copy_to_host(h.data(), out.get(), kTagRound * sizeof(float));
    for (size_t i = 0; i < kTagRound; ++i) judge_tag(tally, what, tickets[i], h[i], want[i]);
    out.upload(zeros);
    tally.checked += tickets.size();
    checked_of_kind += tickets.size();
  }
}

/// Large adds, two at a time, every element checked (see the file's header).
void large_worker(Runtime& rt, Tally& tally, Buffers& buf) {
  support::ensure_context();
  std::mt19937_64 rng(7);
  std::vector<float> h(kLargeChunk);
  support::DeviceArray<float>* outs[2] = {&buf.large_out0, &buf.large_out1};
  struct Add {
    size_t n = 0, oa = 0, ob = 0;
  } adds[2];
  uint64_t round = 0;
  while (!tally.stop.load()) {
    std::vector<Task> tasks;
    for (int k = 0; k < 2; ++k) {
      Add& a = adds[k];
      const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      a.n = static_cast<size_t>(static_cast<double>(kLargeMin) * std::exp2(6.0 * u)) + rng() % 4096;
      a.n = std::min(kLargeMax, a.n);
      if (rng() % 8 == 0) a.n = kLargeMax;
      a.oa = rng() % kLargeOffsets;
      a.ob = rng() % kLargeOffsets;
      buf.large_stream.poison(outs[k]->ptr(), a.n + kLargeGuard);
      tasks.push_back(ops::add(outs[k]->get(), buf.large_a.get() + a.oa, buf.large_b.get() + a.ob, a.n));
    }
    Ticket t[2];
    switch (round++ % 3) {
      case 0: {
        const Ticket first = rt.submit_batch(tasks);
        t[0] = first, t[1] = first + 1;
        break;
      }
      case 1: t[0] = rt.submit(tasks[0]), t[1] = try_submit_until(rt, tasks[1]); break;
      default: t[0] = rt.submit(tasks[0]), t[1] = rt.submit(tasks[1]);
    }
    tally.submitted += 2;
    for (int k = 0; k < 2; ++k) {
      if (!wait_for(rt, tally, t[k], "large add")) return;
      const Add& a = adds[k];
      // Elements never written (still NaN), and elements wrong or written past the end.
      size_t nan = 0, bad = 0, first_bad = 0;
      for (size_t at = 0; at < a.n + kLargeGuard; at += kLargeChunk) {
        const size_t m = std::min(kLargeChunk, a.n + kLargeGuard - at);
        buf.large_stream.download(h.data(), outs[k]->ptr() + at * sizeof(float), m * sizeof(float));
        for (size_t j = 0; j < m; ++j) {
          const size_t i = at + j;
          bool ok = false, unwritten = false;
          if (i >= a.n) {
            ok = std::isnan(h[j]);
          } else {
            ok = h[j] == ::large_a(a.oa + i) + ::large_b(a.ob + i);
            unwritten = std::isnan(h[j]);
          }
          if (ok) continue;
          if (nan + bad == 0) first_bad = i;
          (unwritten ? nan : bad)++;
        }
      }
      if (nan || bad) {
        (bad ? tally.wrong : tally.lost)++;
        std::ostringstream s;
        s << "large add, ticket " << t[k] << " (n " << a.n << ", offsets " << a.oa << ", " << a.ob << "): " << nan
          << " elements never written, " << bad << " wrong or past the end, the first at " << first_bad;
        tally.note(s.str());
      }
      tally.checked++;
      tally.large++;
    }
  }
}

/// The graph worker's instance: its nodes' ids and the argument updates of each launch.
struct SoakGraph {
  std::vector<uint32_t> copies;  // 8
  uint32_t axpy = 0, gen_tag = 0, alias_tag = 0;
  float* node(const Buffers& b, unsigned i) const { return b.graph_nodes.get() + size_t{i} * kGraphN; }
  // Buffers: X 0..7, M 8..23, P 24..31, Q 32..35, R 36..37, T 38.
  static constexpr unsigned kX = 0, kM = 8, kP = 24, kQ = 32, kR = 36, kT = 38;

  Graph build(const Buffers& b, uint32_t gen_op, uint32_t alias_op) {
    Graph g;
    const float* in = b.graph_in.get();
    for (unsigned i = 0; i < 8; ++i) copies.push_back(g.add(ops::copy(node(b, kX + i), in, kGraphN)));
    std::vector<uint32_t> m(16), p(8), q(4), r(2);
    for (unsigned j = 0; j < 16; ++j) {
      const unsigned x0 = j % 8, x1 = (3 * j + 1) % 8;
      const Task t = j % 2 ? ops::mul(node(b, kM + j), node(b, kX + x0), node(b, kX + x1), kGraphN)
                           : ops::add(node(b, kM + j), node(b, kX + x0), node(b, kX + x1), kGraphN);
      m[j] = g.add(t, {copies[x0], copies[x1]});
    }
    // A tree of adds: level[k] = below[2k] + below[2k + 1].
    auto pairs = [&](unsigned to, unsigned from, const std::vector<uint32_t>& below, std::vector<uint32_t>& level) {
      for (unsigned k = 0; k < level.size(); ++k)
        level[k] = g.add(ops::add(node(b, to + k), node(b, from + 2 * k), node(b, from + 2 * k + 1), kGraphN),
                         {below[2 * k], below[2 * k + 1]});
    };
    pairs(kP, kM, m, p);
    pairs(kQ, kP, p, q);
    pairs(kR, kQ, q, r);
    const uint32_t t = g.add(ops::add(node(b, kT), node(b, kR), node(b, kR + 1), kGraphN), {r[0], r[1]});
    axpy = g.add(ops::axpy(node(b, kT), 1.0f, node(b, kX), kGraphN), {t});
    g.add(ops::sum(b.graph_res.get(), node(b, kT), kGraphN), {axpy});
    gen_tag = g.add(Task::make(gen_op, 1, tools::TagArgs{b.graph_res.get() + 2, 0}), {t});
    alias_tag = g.add(Task::make(alias_op, 1, tools::TagArgs{b.graph_res.get() + 3, 0}), {t});
    return g;
  }
};

/// Launches of one graph instance, each checked (see the file's header).
void graph_worker(Runtime& rt, Tally& tally, Buffers& buf, SoakGraph& sg, GraphExec& ge, const CutLog& gen_log,
                  const CutLog& alias_log) {
  std::mt19937_64 rng(11);
  Lane lane(rt);
  std::vector<float> t_host(kGraphN), res(8);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  uint64_t launch = 0;
  while (!tally.stop.load()) {
    size_t off[8];
    for (unsigned i = 0; i < 8; ++i) {
      off[i] = rng() % kGraphOffsets;
      ge.set_args(sg.copies[i], gpuos_copy_args{sg.node(buf, SoakGraph::kX + i), buf.graph_in.get() + off[i], kGraphN});
    }
    const float alpha = static_cast<float>(1 + rng() % 4);
    ge.set_args(sg.axpy, gpuos_axpy_args{sg.node(buf, SoakGraph::kT), sg.node(buf, SoakGraph::kX), kGraphN, alpha, 0});
    const unsigned slot = launch % 2;
    ge.set_args(sg.gen_tag, tools::TagArgs{buf.graph_res.get() + 2 + 2 * slot, 0});
    ge.set_args(sg.alias_tag, tools::TagArgs{buf.graph_res.get() + 3 + 2 * slot, 0});
    buf.graph_res.upload({nan, 0, 0, 0, 0, 0, 0, 0});
    support::copy_stream().poison(buf.graph_nodes.ptr() + size_t{SoakGraph::kT} * kGraphN * sizeof(float), kGraphN);
    Ticket t = 0;
    switch (launch % 4) {
      case 1:
        rt.submit_after(ops::nop(), {}, &lane);
        t = ge.launch({}, &lane);
        break;
      case 2: {
        const Ticket before = rt.submit(ops::nop());
        t = ge.launch(std::span<const Ticket>(&before, 1));
        break;
      }
      default: t = ge.launch();
    }
    tally.submitted++;
    if (!wait_for(rt, tally, t, "graph launch")) return;
    support::copy_to_host(t_host.data(), sg.node(buf, SoakGraph::kT), kGraphN * sizeof(float));
    support::copy_to_host(res.data(), buf.graph_res.get(), 8 * sizeof(float));
    size_t nans = 0, bad = 0;
    double sum = 0;
    for (size_t e = 0; e < kGraphN; ++e) {
      float x[8], m[16], p[8], q[4];
      for (unsigned i = 0; i < 8; ++i) x[i] = graph_in(off[i] + e);
      for (unsigned j = 0; j < 16; ++j) m[j] = j % 2 ? x[j % 8] * x[(3 * j + 1) % 8] : x[j % 8] + x[(3 * j + 1) % 8];
      for (unsigned k = 0; k < 8; ++k) p[k] = m[2 * k] + m[2 * k + 1];
      for (unsigned k = 0; k < 4; ++k) q[k] = p[2 * k] + p[2 * k + 1];
      const float want = ((q[0] + q[1]) + (q[2] + q[3])) + alpha * x[0];
      sum += want;
      nans += std::isnan(t_host[e]);
      bad += !std::isnan(t_host[e]) && t_host[e] != want;
    }
    const float want_gen = gen_log.version(t), want_alias = alias_log.version(t);
    const float other_slot[2] = {res[2 + 2 * (1 - slot)], res[3 + 2 * (1 - slot)]};
    const bool sum_ok = res[0] == static_cast<float>(sum);
    if (nans || bad || !sum_ok || other_slot[0] != 0.0f || other_slot[1] != 0.0f) {
      ((nans && !bad) ? tally.lost : tally.wrong)++;
      std::ostringstream s;
      s << "graph launch " << launch << ", ticket " << t << ": " << nans << " result elements never written, " << bad
        << " wrong; sum " << res[0] << " (expected " << static_cast<float>(sum) << "); the unused tag slot holds "
        << other_slot[0] << ", " << other_slot[1];
      tally.note(s.str());
    }
    judge_tag(tally, "graph's generation-switched node", t, res[2 + 2 * slot], want_gen);
    judge_tag(tally, "graph's alias node", t, res[3 + 2 * slot], want_alias);
    tally.checked++;
    tally.graph++;
    ++launch;
  }
}

/// Pauses the heap worker for a check: it frees every block it holds and waits.
class HeapPause {
 public:
  /// The checker: true once the worker holds nothing (or has ended); false after `limit`.
  bool pause(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> l(mu_);
    requested_ = true;
    return cv_.wait_for(l, limit, [&] { return paused_ || ended_; });
  }
  void resume() {
    std::lock_guard<std::mutex> l(mu_);
    requested_ = false;
    cv_.notify_all();
  }
  /// The worker, between steps: when a pause is asked for, free_all() and wait for the resume.
  template <class F>
  void point(const Tally& tally, F&& free_all) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!requested_) return;
    }
    free_all();
    std::unique_lock<std::mutex> l(mu_);
    paused_ = true;
    cv_.notify_all();
    while (requested_ && !tally.stop.load()) cv_.wait_for(l, 20ms);
    paused_ = false;
  }
  void ended() {
    std::lock_guard<std::mutex> l(mu_);
    ended_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false, paused_ = false, ended_ = false;
};

/// Host and device heap traffic (see the file's header).
void heap_worker(Runtime& rt, Tally& tally, Buffers& buf, uint32_t heap_op, HeapPause& pause) {
  struct Block {
    unsigned char* p = nullptr;
    size_t bytes = 0;
    uint32_t tag = 0;
  };
  std::mt19937_64 rng(13);
  std::vector<Block> blocks;
  size_t outstanding = 0;
  uint32_t next_tag = 1;
  std::vector<unsigned char> pat(kHeapPattern), got(kHeapPattern);
  auto pattern = [&](const Block& b, size_t at, size_t n) {
    for (size_t i = 0; i < n; ++i) pat[i] = static_cast<unsigned char>(b.tag * 131u + (at + i) * 7u);
  };
  // The block's first and last kHeapPattern bytes (all of a smaller one).
  auto ends = [](const Block& b) {
    const size_t n = std::min(b.bytes, kHeapPattern);
    return std::pair<size_t, size_t>{n, b.bytes - n};
  };
  auto release = [&](size_t i) {
    const Block b = blocks[i];
    const auto [n, tail] = ends(b);
    bool ok = true;
    for (size_t at : {size_t{0}, tail}) {
      if (n == 0) break;
      pattern(b, at, n);
      support::copy_to_host(got.data(), b.p + at, n);
      ok &= std::memcmp(got.data(), pat.data(), n) == 0;
    }
    if (!ok) {
      tally.wrong++;
      tally.note("heap block of " + std::to_string(b.bytes) + " bytes (tag " + std::to_string(b.tag) +
                 ") lost its contents before its free");
    }
    while_suspended([&] { rt.free(b.p); });
    outstanding -= b.bytes;
    blocks[i] = blocks.back();
    blocks.pop_back();
    tally.checked++;
    tally.heap_host++;
  };
  auto free_all = [&] {
    while (!blocks.empty()) release(blocks.size() - 1);
  };
  std::vector<unsigned> codes(kHeapTaskMaxTiles);
  const std::vector<unsigned> zero_codes(kHeapTaskMaxTiles, 0);
  try {
    for (uint64_t step = 0; !tally.stop.load(); ++step) {
      pause.point(tally, free_all);
      const bool room = blocks.size() < kHeapMaxBlocks && outstanding < kHeapMaxBytes;
      if (blocks.empty() || (room && rng() % 2)) {
        Block b;
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        b.bytes = rng() % 16 == 0 ? rng() % 64 : static_cast<size_t>(std::exp2(4.0 + 16.0 * u)) + rng() % 16;
        b.bytes = std::min(b.bytes, kHeapMaxBytes - std::min(outstanding, kHeapMaxBytes));
        const size_t align = size_t{16} << (rng() % 9);
        b.p = static_cast<unsigned char*>(while_suspended([&] { return rt.alloc(b.bytes, align); }));
        b.tag = next_tag++;
        tally.submitted++;
        if (reinterpret_cast<uintptr_t>(b.p) % align != 0) {
          tally.wrong++;
          tally.note("heap block of " + std::to_string(b.bytes) + " bytes not aligned to " + std::to_string(align));
        }
        const auto [n, tail] = ends(b);
        for (size_t at : {size_t{0}, tail}) {
          if (n == 0) break;
          pattern(b, at, n);
          support::copy_to_device(b.p + at, pat.data(), n);
        }
        blocks.push_back(b);
        outstanding += b.bytes;
      } else {
        release(rng() % blocks.size());
      }
      if (step % 16 == 0) {  // device-side traffic
        const uint32_t tiles = 1 + static_cast<uint32_t>(rng() % kHeapTaskMaxTiles);
        const unsigned long long bytes = 16 + rng() % 16384;
        buf.heap_codes.upload(zero_codes);
        const Ticket t = rt.submit(Task::make(heap_op, tiles, SoakHeapArgs{buf.heap_codes.get(), bytes, step}));
        tally.submitted++;
        if (!wait_for(rt, tally, t, "device heap task")) break;
        support::copy_to_host(codes.data(), buf.heap_codes.get(), kHeapTaskMaxTiles * sizeof(unsigned));
        size_t bad = 0;
        for (uint32_t k = 0; k < kHeapTaskMaxTiles; ++k) {
          const unsigned want = k < tiles ? 1u : 0u;
          if (codes[k] == want) continue;
          if (bad++ == 0) {
            std::ostringstream s;
            s << "device heap task, ticket " << t << " (" << tiles << " tiles, " << bytes << " bytes): tile " << k
              << " reports " << codes[k] << " (1 ok; 1000 malloc returned null; 1000000 bad block or free)";
            tally.note(s.str());
          }
          if (codes[k] == 0) tally.lost++;
          else if (codes[k] == 2 * want) tally.duplicated++;
          else tally.wrong++;
        }
        tally.checked++;
        tally.heap_device++;
      }
    }
    free_all();
  } catch (...) {
    pause.ended();
    throw;
  }
  pause.ended();
}

/// A change in MiB with its sign, as text (doctest's messages take no stream manipulators).
std::string signed_mib(double d) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.1f MiB", d);
  return b;
}

/// The resident memory of this process (VmRSS), in MiB; malloc_trim first, so that what the allocator
/// keeps free is not counted.
double host_rss_mib() {
  malloc_trim(0);
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return -1;
}

/// The workers' threads; each counts itself out of `running` when it ends (await_submitters).
class Crew {
 public:
  Crew(Runtime& rt, Tally& tally) : rt_(rt), tally_(tally) {}
  ~Crew() { stop(); }
  template <class F>
  void start(const std::string& name, F f) {
    running_++;
    th_.emplace_back([this, name, f = std::move(f)]() mutable {
      try {
        f();
      } catch (const std::exception& e) {
        tally_.error(name + ": " + e.what());
      }
      running_--;
    });
  }
  void stop() {
    tally_.stop.store(true);
    if (th_.empty()) return;
    test::await_submitters(rt_, running_, 180s);
    for (auto& t : th_) t.join();
    th_.clear();
  }

 private:
  Runtime& rt_;
  Tally& tally_;
  std::atomic<int> running_{0};
  std::vector<std::thread> th_;
};

}  // namespace

TEST_CASE("soak: tiny and large tasks, graphs, heap traffic, generation switches, alias flips and suspends under mixed load; counters, heap and memory checked at intervals") {
  const double seconds = env_seconds("GPUOS_SOAK_SECONDS", kDefaultSeconds);
  const double check_seconds =
      env_seconds("GPUOS_SOAK_CHECK_SECONDS", std::clamp(seconds / 4, 1.0, kMaxDefaultCheckSeconds));
  MESSAGE("soak: " << seconds << " s, a check every " << check_seconds << " s");

  Buffers buf;  // before the runtime: it outlives it
  Tally tally;
  Runtime rt(Options().with_heap(256ull << 20, GPUOS_HEAP_CHECKED));

  // The operators: the generation-switched tag operator, the alias's two targets, the heap operator.
  CutLog gen_log, alias_log;
  unsigned gen_index = 0;
  gen_log.record([&] {
    rt.load_operator_source(kGenSource, tools::tag_source("soak_gen", 1));
    return std::pair<uint64_t, float>{0, 1.0f};
  });
  const uint32_t gen_op = rt.op_id("soak_gen");
  rt.load_operator_source("soak_alias_a.cu", tools::tag_source("soak_alias_a", static_cast<unsigned>(kAliasA)));
  rt.load_operator_source("soak_alias_b.cu", tools::tag_source("soak_alias_b", static_cast<unsigned>(kAliasB)));
  rt.load_operator_source("soak_heap.cu", kHeapSource);
  const uint32_t heap_op = rt.op_id("soak_heap");
  alias_log.record([&] { return std::pair<uint64_t, float>{rt.alias_set(kAlias, "soak_alias_a"), kAliasA}; });
  const uint32_t alias_op = rt.op_id(kAlias);

  SoakGraph sg;
  GraphExec ge(rt, sg.build(buf, gen_op, alias_op));
  const HeapStats heap_base = rt.heap_stats();  // the graph instance: what the heap holds without the load
  std::string why;
  REQUIRE_MESSAGE(rt.heap_check(&why), why);

  std::mutex suspend_mu;  // held across a suspension; a check holds it so that the heap is served
  HeapPause heap_pause;
  Crew crew(rt, tally);
  for (unsigned i = 0; i < kTinyThreads; ++i)
    crew.start("tiny " + std::to_string(i), [&, i] { tiny_worker(rt, tally, buf, i); });
  crew.start("generation tags", [&] {
    tag_worker(rt, tally, buf.tag_gen, gen_op, gen_log, "generation-switched tag task", tally.tag_gen, 21);
  });
  crew.start("alias tags",
             [&] { tag_worker(rt, tally, buf.tag_alias, alias_op, alias_log, "alias tag task", tally.tag_alias, 22); });
  crew.start("large", [&] { large_worker(rt, tally, buf); });
  crew.start("graph", [&] { graph_worker(rt, tally, buf, sg, ge, gen_log, alias_log); });
  crew.start("heap", [&] { heap_worker(rt, tally, buf, heap_op, heap_pause); });
  crew.start("switches", [&] {
    std::mt19937_64 rng(31);
    while (tally.nap(std::chrono::milliseconds(2000 + rng() % 2001))) {
      const unsigned v = 1u << (++gen_index % kGenVersions);
      gen_log.record([&] {
        const Runtime::Generation g = rt.load_operator_source(kGenSource, tools::tag_source("soak_gen", v));
        if (g.changed != 1) tally.error("a new version of the tag operator changed nothing");
        return std::pair<uint64_t, float>{g.first_ticket, static_cast<float>(v)};
      });
      if (rt.op_id("soak_gen") != gen_op) tally.error("the tag operator's id changed with its version");
      tally.switches++;
    }
  });
  crew.start("alias flips", [&] {
    std::mt19937_64 rng(32);
    bool on_b = false;
    while (tally.nap(std::chrono::milliseconds(80 + rng() % 41))) {
      alias_log.record([&] {
        return on_b ? std::pair<uint64_t, float>{rt.alias_rollback(kAlias), kAliasA}
                    : std::pair<uint64_t, float>{rt.alias_set(kAlias, "soak_alias_b"), kAliasB};
      });
      on_b = !on_b;
      tally.flips++;
    }
  });
  crew.start("suspend", [&] {
    std::mt19937_64 rng(33);
    while (tally.nap(std::chrono::milliseconds(2000 + rng() % 2001))) {
      std::lock_guard<std::mutex> l(suspend_mu);
      rt.suspend();
      std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 26));
      rt.resume();
      tally.suspends++;
    }
  });

  // ---- the checks ----------------------------------------------------------------------------------
  const auto t0 = Clock::now();
  struct Seen {
    uint64_t completed = 0, tiny = 0, tag_gen = 0, tag_alias = 0, large = 0, graph = 0, heap_host = 0,
             heap_device = 0, switches = 0, flips = 0, suspends = 0;
  } seen;
  std::optional<std::pair<double, double>> first_memory;  // host RSS, device memory in use (MiB)
  int checks = 0;
  auto check_point = [&](bool final_check) {
    ++checks;
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    // The heap at rest: the worker's blocks freed (the worker has ended at the final check), no
    // suspension under way.
    HeapStats hs{};
    bool heap_ok = false, heap_paused = true;
    {
      std::lock_guard<std::mutex> l(suspend_mu);
      if (!final_check) heap_paused = heap_pause.pause(120s);
      if (heap_paused) {
        hs = rt.heap_stats();
        heap_ok = rt.heap_check(&why);
      }
      if (!final_check) heap_pause.resume();
    }
    // Memory between generation switches: no compile or image load under way.
    double rss = 0;
    support::MemoryInfo dm;
    {
      const auto hold = gen_log.hold();
      rss = host_rss_mib();
      dm = support::device_memory();
    }
    const double dev_used = static_cast<double>(dm.total - dm.free) / (1 << 20);
    if (!first_memory) first_memory = std::pair<double, double>{rss, dev_used};
    const Stats s = rt.stats();
    const Runtime::Generation g = rt.generation();
    MESSAGE("soak " << (final_check ? "end" : "check " + std::to_string(checks)) << " at " << elapsed
                    << " s: tasks submitted " << tally.submitted.load() << ", checked " << tally.checked.load()
                    << " (tiny " << tally.tiny.load() << ", generation tags " << tally.tag_gen.load() << ", alias tags "
                    << tally.tag_alias.load() << ", large " << tally.large.load() << ", graph launches "
                    << tally.graph.load() << ", heap blocks " << tally.heap_host.load() << ", heap tasks "
                    << tally.heap_device.load() << "); lost " << tally.lost.load() << ", duplicated "
                    << tally.duplicated.load() << ", wrong " << tally.wrong.load() << ", errors " << tally.errors.load()
                    << "; gpuos submitted " << s.submitted << ", completed " << s.completed << ", failed " << s.failed
                    << ", queue " << s.queue_depth << ", launches " << s.launches << ", generation " << g.number
                    << "; switches " << tally.switches.load() << ", alias flips " << tally.flips.load()
                    << ", suspends " << tally.suspends.load() << "; heap used " << hs.used_bytes << " B in "
                    << hs.used_blocks << " blocks (baseline " << heap_base.used_bytes << " B in "
                    << heap_base.used_blocks << "), allocs " << hs.allocs << ", frees " << hs.frees
                    << ", failed " << hs.failed_allocs << ", fragmentation " << hs.fragmentation << ", check "
                    << (heap_ok ? "ok" : why) << "; host RSS " << rss << " MiB (" << signed_mib(rss - first_memory->first)
                    << " since the first check), device used " << dev_used << " MiB ("
                    << signed_mib(dev_used - first_memory->second) << ") of "
                    << dm.total / (1 << 20) << " MiB");
    std::cout.flush();
    std::fflush(stdout);
    for (const std::string& n : tally.notes()) MESSAGE(n);
    CHECK(tally.lost.load() == 0);
    CHECK(tally.duplicated.load() == 0);
    CHECK(tally.wrong.load() == 0);
    CHECK(tally.errors.load() == 0);
    CHECK(s.failed == 0);
    CHECK(gen_log.out_of_order() == 0);
    CHECK(alias_log.out_of_order() == 0);
    CHECK_MESSAGE(heap_paused, "the heap worker did not pause within 120 s");
    CHECK_MESSAGE(heap_ok, why);
    CHECK(hs.used_bytes == heap_base.used_bytes);
    CHECK(hs.used_blocks == heap_base.used_blocks);
    CHECK(hs.failed_allocs == heap_base.failed_allocs);
    CHECK(hs.bad_free == 0);
    CHECK(hs.double_free == 0);
    CHECK(rss - first_memory->first < kMemoryGrowthMiB);
    CHECK(dev_used - first_memory->second < kMemoryGrowthMiB);
    if (!final_check) {
      CHECK_MESSAGE(s.completed > seen.completed, "no task completed since the last check; runtime state:\n"
                                                      << rt.diagnose());
      if (check_seconds >= kProgressCheckSeconds) {
        // Every worker ran during the interval.
        CHECK(tally.tiny.load() > seen.tiny);
        CHECK(tally.tag_gen.load() > seen.tag_gen);
        CHECK(tally.tag_alias.load() > seen.tag_alias);
        CHECK(tally.large.load() > seen.large);
        CHECK(tally.graph.load() > seen.graph);
        CHECK(tally.heap_host.load() > seen.heap_host);
        CHECK(tally.heap_device.load() > seen.heap_device);
        CHECK(tally.switches.load() > seen.switches);
        CHECK(tally.flips.load() > seen.flips);
        CHECK(tally.suspends.load() > seen.suspends);
      }
    }
    seen = Seen{s.completed,        tally.tiny.load(),      tally.tag_gen.load(),     tally.tag_alias.load(),
                tally.large.load(), tally.graph.load(),     tally.heap_host.load(),   tally.heap_device.load(),
                tally.switches.load(), tally.flips.load(), tally.suspends.load()};
  };

  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(check_seconds));
  for (auto next = t0 + interval; next < end && !tally.failed(); next += interval) {
    while (Clock::now() < next && !tally.failed()) std::this_thread::sleep_for(50ms);
    if (tally.failed()) break;
    check_point(false);
  }
  while (Clock::now() < end && !tally.failed()) std::this_thread::sleep_for(50ms);

  // ---- the end -------------------------------------------------------------------------------------
  crew.stop();  // each worker finishes and checks its round; the heap worker frees its blocks
  REQUIRE(test::drain_or_report(rt, 60s));
  check_point(true);
  const Stats s = rt.stats();
  CHECK(s.completed == s.submitted);
  CHECK(tally.checked.load() == tally.submitted.load());  // every result checked
  CHECK(test::completed_of(rt, gen_op) == tally.tag_gen.load());
  CHECK(test::completed_of(rt, alias_op) == tally.tag_alias.load());
  CHECK(test::completed_of(rt, heap_op) == tally.heap_device.load());
  const std::string report = rt.diagnose();
  CHECK_MESSAGE(report.find("invariant violated") == std::string::npos, report);
}
