// Shared by the switch suites: a tagging operator whose result says which version ran, submitting
// threads that record each task's ticket, and the check that every task ran exactly once on the version
// its ticket falls under. The same for multi-tile tasks: two operators that record every tile's runs
// and version (one of them with a finish function that sums), threads that submit them singly and in
// batches, and the check of every tile and every sum. Under GPUOS_TEST_SCALE (gpu_fixture.hpp) the ring
// is smaller, the multi-tile tasks have fewer tiles, and the pauses between switches wait longer for the
// load to move (see scaled_queue, scaled_max_tiles, pause_under_load).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"
#include "tools/tag_operator.hpp"

namespace gpuos::test {

/// The tagging operator (tools/tag_operator.hpp). Versions here are powers of two, so a task run twice
/// (2 * version) or never (0) cannot pass for another version.
using tools::tag_source;
using tools::TagArgs;


/// `o` with the submission ring divided by GPUOS_TEST_SCALE: the default 65,536 slots at full scale, else
/// the largest power of two at most 65,536 / scale, and at least 256. The switch cases' submitting threads
/// keep the ring full whenever the kernel lags behind them (under a sanitizer, always), so its size is the
/// backlog that every switch and the final drain wait for.
inline Options scaled_queue(Options o) {
  const size_t want = scaled(65536, 256);
  uint32_t c = 256;
  while (size_t{c} * 2 <= want) c *= 2;
  return o.with_queue_capacity(c);
}

/// A thread that keeps the runtime busy with nops, one at a time, each waited for (at most slowed(10 s):
/// a wait that runs out stops the thread and is counted, so a hung runtime never blocks stop()).
class BusyNops {
 public:
  explicit BusyNops(Runtime& rt)
      : th_([this, &rt] {
          while (!stop_.load())
            if (!rt.wait(rt.submit(ops::nop()), slowed(std::chrono::seconds(10)))) {
              stalled_.store(true);
              return;
            }
        }) {}
  ~BusyNops() { stop(); }
  /// Stops and joins the thread; false if one of its waits ran out.
  bool stop() {
    stop_.store(true);
    if (th_.joinable()) th_.join();
    return !stalled_.load();
  }

 private:
  std::atomic<bool> stop_{false}, stalled_{false};
  std::thread th_;
};

/// Threads that submit tag tasks to op id `op()` (re-read before each submit) until stopped or full.
class Load {
 public:
  Load(Runtime& rt, DeviceBuffer& out, unsigned threads, size_t per_thread, std::atomic<uint32_t>& op)
      : tickets_(threads, std::vector<uint64_t>(per_thread)), counts_(threads) {
    for (unsigned i = 0; i < threads; ++i)
      th_.emplace_back([&, i, per_thread] {
        size_t k = 0;
        for (; k < per_thread && !stop_.load(std::memory_order_relaxed); ++k) {
          const TagArgs a{out.get() + i * per_thread + k, 0};
          const Task task = Task::make(op.load(std::memory_order_acquire), 1, a);
          std::optional<Ticket> t;
          while (!(t = rt.try_submit(task))) {  // a full queue must not keep stop() from returning
            if (stop_.load()) return;
            std::this_thread::yield();
          }
          tickets_[i][k] = *t;
          counts_[i].store(k + 1, std::memory_order_release);
        }
      });
  }
  ~Load() { stop(); }
  void stop() {
    stop_.store(true);
    for (auto& t : th_)
      if (t.joinable()) t.join();
  }
  uint64_t submitted() const {
    uint64_t n = 0;
    for (const auto& c : counts_) n += c.load();
    return n;
  }
  const std::vector<std::vector<uint64_t>>& tickets() const { return tickets_; }
  size_t count(unsigned t) const { return counts_[t].load(); }

 private:
  std::vector<std::vector<uint64_t>> tickets_;
  std::vector<std::atomic<size_t>> counts_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> th_;
};

/// A pause after a switch (pause_until): `d`, longer until each thread's worth of tasks twice over was
/// submitted since (a thread may count one task whose ticket came before the switch).
inline void pause_under_load(const Load& load, std::chrono::microseconds d) {
  const uint64_t from = load.submitted(), more = 2 * load.tickets().size();
  pause_until(d, [&] { return load.submitted() >= from + more; });
}

/// `cuts`: (first ticket, version) in increasing ticket order; a task with ticket t must hold the
/// version of the last cut <= t. Returns the number of tasks checked.
inline size_t check_cuts(const Load& load, const std::vector<float>& out, size_t per_thread,
                         const std::vector<std::pair<uint64_t, unsigned>>& cuts) {
  size_t checked = 0, wrong = 0, per_cut_seen = 0;
  std::vector<size_t> seen(cuts.size(), 0);
  for (size_t i = 0; i < load.tickets().size(); ++i) {
    for (size_t k = 0; k < load.count(static_cast<unsigned>(i)); ++k) {
      const uint64_t t = load.tickets()[i][k];
      auto it = std::upper_bound(cuts.begin(), cuts.end(), t,
                                 [](uint64_t v, const std::pair<uint64_t, unsigned>& c) { return v < c.first; });
      REQUIRE(it != cuts.begin());
      --it;
      const float want = static_cast<float>(it->second);
      const float got = out[i * per_thread + k];
      if (got != want) {
        if (wrong < 5) MESSAGE("ticket " << t << ": got " << got << ", expected version " << want);
        ++wrong;
      }
      ++seen[static_cast<size_t>(it - cuts.begin())];
      ++checked;
    }
  }
  for (size_t c : seen) per_cut_seen += c > 0;
  CHECK(wrong == 0);
  // Every switch happened under load: tasks on both sides of each cut.
  CHECK(per_cut_seen == cuts.size());
  return checked;
}

// ---- multi-tile tasks ------------------------------------------------------------------------------

/// (first ticket, version) in increasing ticket order, as check_cuts takes them.
using Cuts = std::vector<std::pair<uint64_t, unsigned>>;

/// The index of the cut ticket `t` falls under (the last cut <= t), or cuts.size() if it lies before all.
inline size_t cut_of(const Cuts& cuts, uint64_t t) {
  auto it = std::upper_bound(cuts.begin(), cuts.end(), t,
                             [](uint64_t v, const std::pair<uint64_t, unsigned>& c) { return v < c.first; });
  return it == cuts.begin() ? cuts.size() : static_cast<size_t>(it - cuts.begin()) - 1;
}

/// The argument structs of multi_tile_source's operators, as the source declares them.
struct TileRecArgs {
  float* rec;                ///< two floats per tile: how often it ran, the sum of the versions that ran it
  unsigned long long tiles;  ///< the task's tile count
};
struct PrefixSumArgs {
  double* out;          ///< four doubles: the sum, finish runs, the sum of the finishes' versions, their tile counts
  const float* x;       ///< the input
  unsigned long long n;  ///< elements of x summed: x[0] .. x[n - 1]
};

/// Elements of x one tile of PREFIX_sum adds up: one per thread.
inline constexpr unsigned kSumPerTile = GPUOS_BLOCK_THREADS;

/// Source of version `version` of two operators:
/// - PREFIX_tiles (TileRecArgs): thread 0 of each tile adds 1 to the tile's run count and the version to
///   its tag (-1 if the tile's context disagrees with the task's tile count); a tile outside the task's
///   tiles adds 1024 to tile 0's run count.
/// - PREFIX_sum (PrefixSumArgs): each tile sums its kSumPerTile elements of x over the block and adds
///   version x that sum to the task's scratch word; the finish function adds the scratch word to out[0],
///   1 to out[1], the version to out[2] and the tile count it sees to out[3].
/// A tile or finish lost, run twice or run on another version changes the result. Helper names carry
/// the prefix: sources of different prefixes link into one image.
inline std::string multi_tile_source(const std::string& prefix, unsigned version) {
  const std::string v = std::to_string(version), t = prefix + "_tiles", s = prefix + "_sum";
  return "#include \"gpuos/op.cuh\"\n"
         "struct TileRecArgs { float* rec; unsigned long long tiles; };\n"
         "struct PrefixSumArgs { double* out; const float* x; unsigned long long n; };\n"
         "__device__ void " + t + "_tile(const TileRecArgs& a, const gpuos::TileCtx& c) {\n"
         "  if (threadIdx.x != 0) return;\n"
         "  if (c.tile >= a.tiles) {\n"
         "    atomicAdd(a.rec, 1024.0f);\n"
         "    return;\n"
         "  }\n"
         "  atomicAdd(a.rec + 2ull * c.tile, 1.0f);\n"
         "  atomicAdd(a.rec + 2ull * c.tile + 1, c.tiles == a.tiles ? " + v + ".0f : -1.0f);\n"
         "}\n"
         "GPUOS_OPERATOR(" + t + ", TileRecArgs, " + t + "_tile)\n"
         "__device__ void " + s + "_tile(const PrefixSumArgs& a, const gpuos::TileCtx& c) {\n"
         "  const unsigned long long i = c.first(GPUOS_BLOCK_THREADS) + threadIdx.x;\n"
         "  float x = i < a.n ? a.x[i] : 0.0f;\n"
         "  for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);\n"
         "  float* warp_sums = static_cast<float*>(c.smem);\n"
         "  if ((threadIdx.x & 31u) == 0) warp_sums[threadIdx.x >> 5] = x;\n"
         "  __syncthreads();\n"
         "  if (threadIdx.x == 0) {\n"
         "    float sum = 0.0f;\n"
         "    for (unsigned w = 0; w < blockDim.x / 32; ++w) sum += warp_sums[w];\n"
         "    atomicAdd(c.scratch, " + v + ".0 * sum);\n"
         "  }\n"
         "}\n"
         "__device__ void " + s + "_finish(const PrefixSumArgs& a, const gpuos::TileCtx& c) {\n"
         "  if (threadIdx.x != 0) return;\n"
         "  atomicAdd(a.out, *c.scratch);\n"
         "  atomicAdd(a.out + 1, 1.0);\n"
         "  atomicAdd(a.out + 2, " + v + ".0);\n"
         "  atomicAdd(a.out + 3, static_cast<double>(c.tiles));\n"
         "}\n"
         "GPUOS_OPERATOR_WITH_FINISH(" + s + ", PrefixSumArgs, " + s + "_tile, " + s + "_finish)\n";
}

/// Sets every element of `a` to zero (uploads of at most 16 MiB).
template <class T>
void zero(support::DeviceArray<T>& a) {
  const size_t chunk = std::min<size_t>(a.size(), (16u << 20) / sizeof(T));
  const std::vector<T> z(chunk, T{});
  for (size_t at = 0; at < a.size(); at += chunk)
    a.upload(a.size() - at >= chunk ? z : std::vector<T>(a.size() - at, T{}), at);
}

/// The device memory of a MultiTileLoad: per submitting thread, a pool of tile records (two floats a tile)
/// and one of sum results (four doubles a task), zeroed; and the input the sums read (kMaxTiles x
/// kSumPerTile small integers, so every sum is exact). Allocate it before the runtime boots (declare it
/// first): it must outlive the runtime.
class MultiTileBuffers {
 public:
  static constexpr uint32_t kMaxTiles = 4096;
  /// Floats at the end of each thread's record pool no task is given: any write there is a stray one.
  static constexpr size_t kSlack = 2 * kMaxTiles;

  /// A record pool that lasts `seconds` at `tiles_per_second`, even if every task were a PREFIX_tiles one.
  static size_t records_for(double tiles_per_second, double seconds) {
    return static_cast<size_t>(2.0 * tiles_per_second * seconds) + kSlack;
  }

  MultiTileBuffers(unsigned threads, size_t records_per_thread, size_t sums_per_thread)
      : threads_(threads),
        records_per_thread_(records_per_thread),
        sums_per_thread_(sums_per_thread),
        rec_(threads * records_per_thread),
        x_(size_t{kMaxTiles} * kSumPerTile),
        sums_(threads * sums_per_thread * 4),
        prefix_(size_t{kMaxTiles} * kSumPerTile + 1, 0) {
    zero(rec_);
    zero(sums_);
    std::mt19937 rng(20);
    std::vector<float> x(x_.size());
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(1 + rng() % 7);
      prefix_[i + 1] = prefix_[i] + static_cast<uint64_t>(x[i]);
    }
    x_.upload(x);
  }

  unsigned threads() const { return threads_; }
  size_t records_per_thread() const { return records_per_thread_; }
  size_t sums_per_thread() const { return sums_per_thread_; }
  /// Thread i's record pool and sum pool.
  float* records(unsigned i) const { return rec_.get() + i * records_per_thread_; }
  double* sums(unsigned i) const { return sums_.get() + i * sums_per_thread_ * 4; }
  const float* x() const { return x_.get(); }
  /// x[0] + ... + x[n - 1].
  uint64_t prefix(uint64_t n) const { return prefix_[n]; }
  /// Thread i's first `floats` record floats, and its first `tasks` sum results.
  std::vector<float> download_records(unsigned i, size_t floats) const {
    return rec_.download(floats, i * records_per_thread_);
  }
  std::vector<double> download_sums(unsigned i, size_t tasks) const {
    return sums_.download(tasks * 4, i * sums_per_thread_ * 4);
  }

 private:
  unsigned threads_;
  size_t records_per_thread_, sums_per_thread_;
  DeviceBuffer rec_, x_;
  support::DeviceArray<double> sums_;
  std::vector<uint64_t> prefix_;
};

/// Threads (one per MultiTileBuffers pool) that submit tasks of PREFIX_tiles (op id `tiles_op`) and
/// PREFIX_sum (`sum_op`), half each, of 1 to `max_tiles` tiles: half of them 1-8 tiles, a quarter 9-528, a
/// quarter 529-4096 with max_tiles = kMaxTiles (up to 15 times an H100's 264-block grid: with a grid's
/// worth of tiles left after its first claim, a block claims on inside the operator's claiming adapter);
/// a smaller max_tiles (scaled_max_tiles) shrinks the quarter's bands in proportion (draw_tiles). One
/// submission in 8 is a batch of 2-8 such tasks (submit_batch), the others single tasks (try_submit). Each
/// thread submits at most `tiles_per_second` tiles a second (it sleeps while ahead), so its pools last a
/// known time; a thread whose pool is used up stops (ran_out()).
class MultiTileLoad {
 public:
  /// One submitted task: its ticket, tiles and operator, whether it came in a batch, and where its
  /// results are (PREFIX_tiles: its first record float in the thread's pool; PREFIX_sum: its index in the
  /// thread's sum pool, and the elements it sums).
  struct Sent {
    uint64_t ticket = 0;
    uint64_t at = 0;
    uint64_t n = 0;
    uint32_t tiles = 0;
    bool sum = false;
    bool batched = false;
  };

  MultiTileLoad(Runtime& rt, const MultiTileBuffers& buf, uint32_t tiles_op, uint32_t sum_op, double tiles_per_second,
                uint32_t max_tiles = MultiTileBuffers::kMaxTiles)
      : rt_(rt),
        buf_(buf),
        max_tiles_(max_tiles),
        sent_(buf.threads()),
        records_used_(buf.threads(), 0),
        sums_used_(buf.threads(), 0) {
    REQUIRE(max_tiles >= 32);  // draw_tiles' bands
    REQUIRE(max_tiles <= MultiTileBuffers::kMaxTiles);
    running_.store(static_cast<int>(buf.threads()));
    for (unsigned i = 0; i < buf.threads(); ++i)
      th_.emplace_back([this, i, tiles_op, sum_op, tiles_per_second] { run(i, tiles_op, sum_op, tiles_per_second); });
  }
  ~MultiTileLoad() { stop(); }
  MultiTileLoad(const MultiTileLoad&) = delete;
  MultiTileLoad& operator=(const MultiTileLoad&) = delete;

  /// Stops the threads. One blocked in submit_batch returns once the queue has room; if tasks stopped
  /// completing, fails with the runtime's state report and ends the process (await_submitters).
  void stop() {
    stop_.store(true);
    await_submitters(rt_, running_, std::chrono::seconds(30));
    for (auto& t : th_)
      if (t.joinable()) t.join();
  }

  uint64_t submitted() const {
    uint64_t n = 0;
    for (const auto& v : sent_) n += v.size();
    return n;
  }
  /// Tasks submitted of PREFIX_sum (sum) or PREFIX_tiles.
  uint64_t submitted_of(bool sum) const {
    uint64_t n = 0;
    for (const auto& v : sent_)
      for (const Sent& s : v) n += s.sum == sum;
    return n;
  }
  /// Tasks of PREFIX_sum (sum) or PREFIX_tiles submitted so far (read while the threads run).
  uint64_t submitted_so_far(bool sum) const { return so_far_[sum].load(); }
  unsigned threads() const { return buf_.threads(); }
  /// Thread i's tasks in submission order (read after stop()).
  const std::vector<Sent>& sent(unsigned i) const { return sent_[i]; }
  /// Record floats and sum results thread i's submitted tasks use (a prefix of its pools).
  size_t records_used(unsigned i) const { return records_used_[i]; }
  size_t sums_used(unsigned i) const { return sums_used_[i]; }
  bool ran_out() const { return ran_out_.load(); }
  /// The first error a submission threw ("" if none).
  std::string error() const {
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }

 private:
  /// Half 1-8 tiles; a quarter 9 to b2 = 8 + 520 / 4096 of max_tiles_; an eighth b2 + 1 to max_tiles_ / 2;
  /// an eighth on to max_tiles_ (with max_tiles_ = kMaxTiles: 9-528, 529-2048, 2049-4096).
  uint32_t draw_tiles(std::mt19937& rng) const {
    const uint32_t b2 = 8 + static_cast<uint32_t>(uint64_t{520} * max_tiles_ / MultiTileBuffers::kMaxTiles);
    const uint32_t b3 = max_tiles_ / 2;
    switch (rng() % 8) {
      case 0: case 1: case 2: case 3: return 1 + rng() % 8;
      case 4: case 5: return 9 + rng() % (b2 - 8);
      case 6: return b2 + 1 + rng() % (b3 - b2);
      default: return b3 + 1 + rng() % (max_tiles_ - b3);
    }
  }

  void run(unsigned i, uint32_t tiles_op, uint32_t sum_op, double tiles_per_second) {
    std::mt19937 rng(1000 + i);
    const size_t record_room = buf_.records_per_thread() - MultiTileBuffers::kSlack;
    const auto t0 = std::chrono::steady_clock::now();
    double tiles_sent = 0;
    size_t records = 0, sums = 0;  // the pools' next free record float and sum result
    std::vector<Task> tasks;
    std::vector<Sent> batch;
    try {
      while (!stop_.load(std::memory_order_relaxed)) {
        const double due = tiles_per_second * std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (tiles_sent > due) {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
          continue;
        }
        const size_t k = rng() % 8 == 0 ? 2 + rng() % 7 : 1;
        tasks.clear();
        batch.clear();
        for (size_t j = 0; j < k; ++j) {
          Sent s;
          s.tiles = draw_tiles(rng);
          s.sum = (rng() & 1u) != 0;
          s.batched = k > 1;
          if (s.sum) {
            if (sums == buf_.sums_per_thread()) break;
            s.at = sums++;
            s.n = uint64_t{s.tiles} * kSumPerTile - rng() % kSumPerTile;  // 1 to kSumPerTile in the last tile
            tasks.push_back(Task::make(sum_op, s.tiles, PrefixSumArgs{buf_.sums(i) + s.at * 4, buf_.x(), s.n}));
          } else {
            if (records + 2 * size_t{s.tiles} > record_room) break;
            s.at = records;
            records += 2 * size_t{s.tiles};
            tasks.push_back(Task::make(tiles_op, s.tiles, TileRecArgs{buf_.records(i) + s.at, s.tiles}));
          }
          batch.push_back(s);
        }
        if (batch.size() < k) {  // a pool is used up: submit nothing more
          ran_out_.store(true);
          break;
        }
        if (k == 1) {
          std::optional<Ticket> t;
          while (!(t = rt_.try_submit(tasks[0]))) {  // a full queue must not keep stop() from returning
            if (stop_.load()) break;
            std::this_thread::yield();
          }
          if (!t) break;
          batch[0].ticket = *t;
        } else {
          const Ticket first = rt_.submit_batch(tasks);
          for (size_t j = 0; j < k; ++j) batch[j].ticket = first + j;
        }
        for (const Sent& s : batch) {
          sent_[i].push_back(s);
          so_far_[s.sum].fetch_add(1);
          tiles_sent += s.tiles;
          if (s.sum)
            sums_used_[i] = s.at + 1;
          else
            records_used_[i] = s.at + 2 * size_t{s.tiles};
        }
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> l(mu_);
      if (error_.empty()) error_ = e.what();
    }
    running_.fetch_sub(1);
  }

  Runtime& rt_;
  const MultiTileBuffers& buf_;
  uint32_t max_tiles_;
  std::vector<std::vector<Sent>> sent_;
  std::atomic<uint64_t> so_far_[2] = {0, 0};
  std::vector<size_t> records_used_, sums_used_;
  std::atomic<bool> stop_{false}, ran_out_{false};
  std::atomic<int> running_{0};
  mutable std::mutex mu_;
  std::string error_;
  std::vector<std::thread> th_;
};

/// The most tiles a MultiTileLoad task has: kMaxTiles at full scale; divided by GPUOS_TEST_SCALE, but no
/// fewer than four of the runtime's grids of `grid` blocks (tasks of at least twice the grid are checked
/// for on every version), nor 32.
inline uint32_t scaled_max_tiles(uint32_t grid) {
  const size_t m = std::max<size_t>(scaled(MultiTileBuffers::kMaxTiles, 32), 4 * size_t{grid});
  return static_cast<uint32_t>(std::min<size_t>(m, MultiTileBuffers::kMaxTiles));
}

/// A pause after a switch (pause_until): `d`, longer until twice as many tasks of each operator as
/// there are threads were submitted since.
inline void pause_under_load(const MultiTileLoad& load, std::chrono::microseconds d) {
  const uint64_t more = 2 * load.threads();
  const uint64_t tiles = load.submitted_so_far(false), sums = load.submitted_so_far(true);
  pause_until(d, [&] {
    return load.submitted_so_far(false) >= tiles + more && load.submitted_so_far(true) >= sums + more;
  });
}

/// What check_multi_tile saw.
struct MultiTileReport {
  size_t tasks = 0, tiles = 0, batched = 0, over_grid = 0;
};

/// Checks every task a stopped MultiTileLoad submitted, after the drain: each tile of a PREFIX_tiles task
/// ran exactly once, on the version of the cut its ticket falls under in `tile_cuts` (run count 1, tag
/// the version); each PREFIX_sum task's finish ran exactly once, on its version in `sum_cuts`, saw the
/// task's tile count, and found in the scratch word the version times the sum of the task's elements of
/// x, exactly (every tile's part, from a zeroed word); nothing was written past the tasks' records. Each
/// cut of either list has tasks of its operator after it (before the next cut), and on every version
/// each operator ran tasks from batches and tasks of at least twice `grid` tiles.
inline MultiTileReport check_multi_tile(const MultiTileLoad& load, const MultiTileBuffers& buf, const Cuts& tile_cuts,
                                        const Cuts& sum_cuts, uint32_t grid) {
  MultiTileReport r;
  size_t wrong = 0, stray = 0;
  std::vector<size_t> seen[2] = {std::vector<size_t>(tile_cuts.size(), 0), std::vector<size_t>(sum_cuts.size(), 0)};
  // Per operator and version: tasks from batches, tasks of at least twice the grid.
  std::vector<std::pair<unsigned, std::pair<size_t, size_t>>> per_version[2];
  auto version_row = [&](int kind, unsigned v) -> std::pair<size_t, size_t>& {
    for (auto& [ver, counts] : per_version[kind])
      if (ver == v) return counts;
    per_version[kind].push_back({v, {0, 0}});
    return per_version[kind].back().second;
  };
  for (const auto* cuts : {&tile_cuts, &sum_cuts})
    for (const auto& c : *cuts) version_row(cuts == &sum_cuts, c.second);
  auto what = [](const MultiTileLoad::Sent& s) {
    return std::string(s.sum ? "sum" : "tiles") + ", ticket " + std::to_string(s.ticket) + " (" +
           std::to_string(s.tiles) + " tiles" + (s.batched ? ", batched)" : ")");
  };
  auto num = [](double d) {  // every digit: the sums are exact integers
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", d);
    return std::string(b);
  };
  for (unsigned i = 0; i < buf.threads(); ++i) {
    const std::vector<float> rec = buf.download_records(i, load.records_used(i) + MultiTileBuffers::kSlack);
    const std::vector<double> sums = buf.download_sums(i, load.sums_used(i));
    for (const MultiTileLoad::Sent& s : load.sent(i)) {
      const Cuts& cuts = s.sum ? sum_cuts : tile_cuts;
      const size_t c = cut_of(cuts, s.ticket);
      REQUIRE(c < cuts.size());
      const unsigned v = cuts[c].second;
      ++seen[s.sum][c];
      auto& row = version_row(s.sum, v);
      row.first += s.batched;
      row.second += s.tiles >= 2 * grid;
      ++r.tasks;
      r.tiles += s.tiles;
      r.batched += s.batched;
      r.over_grid += s.tiles >= 2 * grid;
      if (s.sum) {
        const double* o = sums.data() + s.at * 4;
        const double want = static_cast<double>(v) * static_cast<double>(buf.prefix(s.n));
        if (o[0] != want || o[1] != 1.0 || o[2] != v || o[3] != s.tiles) {
          if (wrong < 8)
            MESSAGE(what(s) << ": sum " << num(o[0]) << " (expected " << num(want) << "), finish ran " << num(o[1])
                            << " times, versions " << num(o[2]) << " (expected " << v << "), tiles " << num(o[3]));
          ++wrong;
        }
        continue;
      }
      size_t bad = 0;
      for (uint32_t k = 0; k < s.tiles; ++k) {
        const float runs = rec[s.at + 2 * k], tag = rec[s.at + 2 * k + 1];
        if (runs == 1.0f && tag == static_cast<float>(v)) continue;
        if (bad == 0 && wrong < 8)
          MESSAGE(what(s) << ": tile " << k << " ran " << runs << " times, versions " << tag
                          << " (expected " << v << ")");
        ++bad;
      }
      if (bad) {
        if (wrong < 8) MESSAGE("  " << bad << " of its " << s.tiles << " tiles wrong");
        ++wrong;
      }
    }
    for (size_t k = load.records_used(i); k < rec.size(); ++k) stray += rec[k] != 0.0f;
  }
  CHECK(wrong == 0);
  CHECK(stray == 0);
  // Every switch happened under load: tasks of each operator on both sides of each of its cuts.
  for (int kind = 0; kind < 2; ++kind) {
    CAPTURE(kind);  // 0: PREFIX_tiles, 1: PREFIX_sum
    CHECK(std::count(seen[kind].begin(), seen[kind].end(), size_t{0}) == 0);  // cuts with no task after them
    for (const auto& [v, counts] : per_version[kind]) {
      CAPTURE(v);
      CHECK(counts.first > 0);   // batches on this version
      CHECK(counts.second > 0);  // tasks of at least twice the grid on this version
    }
  }
  return r;
}

}  // namespace gpuos::test
