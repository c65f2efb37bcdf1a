// The TLSF heap core (kernel/tlsf.hpp) on the CPU: size classes, randomized alloc/free against an
// independent model of the live blocks, multi-threaded stress, exhaustion and refill, alignment, misuse
// in checked mode, a pool above 100 GB, and fragmentation. The same code runs on the device; here it
// runs on host memory with the device-scope atomics mapped to the host's.
//
// Pools are virtual (mmap with MAP_NORESERVE): the allocator touches only block headers, and the tests
// only a few stamp bytes at each end of a payload, so a multi-GB pool costs a few MB of RAM. An empty
// heap's pages are handed back with MADV_DONTNEED between rounds to keep it that way.
#include <doctest/doctest.h>

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kernel/tlsf.hpp"

namespace tlsf = gpuos::tlsf;
using std::uint32_t;
using std::uint64_t;

namespace {

constexpr uint64_t KiB = 1ull << 10;
constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t GiB = 1ull << 30;

/// Reserved, lazily backed address range; never touched by the constructor.
class VirtualPool {
 public:
  explicit VirtualPool(uint64_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    REQUIRE_MESSAGE(p != MAP_FAILED, "cannot reserve " << (bytes >> 20) << " MiB of address space");
    madvise(p, bytes, MADV_NOHUGEPAGE);  // a header write must not fault in 2 MB
    base_ = static_cast<char*>(p);
  }
  ~VirtualPool() { munmap(base_, bytes_); }
  VirtualPool(const VirtualPool&) = delete;
  VirtualPool& operator=(const VirtualPool&) = delete;
  char* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }

 private:
  char* base_ = nullptr;
  uint64_t bytes_ = 0;
};

/// A control block in host memory plus its pool.
class Heap {
 public:
  Heap(uint64_t pool_bytes, uint32_t arenas, tlsf::Options opt = {}) : pool_(pool_bytes), arenas_(arenas) {
    ctrl_ = static_cast<tlsf::Control*>(std::aligned_alloc(128, tlsf::control_bytes(arenas)));
    REQUIRE(ctrl_ != nullptr);
    REQUIRE(tlsf::init(ctrl_, pool_.base(), pool_.bytes(), arenas, opt) == tlsf::kOk);
  }
  ~Heap() { std::free(ctrl_); }
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;
  tlsf::Control* c() const { return ctrl_; }
  char* base() const { return pool_.base(); }
  uint64_t pool_bytes() const { return pool_.bytes(); }
  /// Returns the pages of an empty heap to the OS, keeping each arena's first page (its one header).
  void trim() const {
    for (uint32_t i = 0; i < tlsf::arena_count(ctrl_); ++i) {
      const tlsf::Arena* a = tlsf::arena(ctrl_, i);
      if (a->end - a->begin > 4096) madvise(pool_.base() + a->begin + 4096, a->end - a->begin - 4096, MADV_DONTNEED);
    }
  }

 private:
  VirtualPool pool_;
  uint32_t arenas_;
  tlsf::Control* ctrl_ = nullptr;
};

void require_valid(tlsf::Control* c) {
  const tlsf::CheckResult r = tlsf::check(c);
  INFO(r.message);
  REQUIRE(r.ok);
}

/// True when the heap is back to one free block per arena with no live block.
void require_empty(tlsf::Control* c) {
  require_valid(c);
  const tlsf::Stats s = tlsf::stats(c);
  CHECK(s.used_bytes == 0);
  CHECK(s.used_blocks == 0);
  CHECK(s.free_bytes == s.pool_bytes);
  CHECK(s.free_blocks == tlsf::arena_count(c));
  CHECK(s.allocs == s.frees);
  CHECK(s.fragmentation == 0.0);
}

/// Small fast generator (xoshiro256**): the tests draw tens of millions of numbers.
struct Rng {
  uint64_t s[4];
  explicit Rng(uint64_t seed) {
    for (auto& w : s) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      w = z ^ (z >> 31);
    }
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t r = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  uint64_t below(uint64_t n) { return next() % n; }
  /// Log-uniform in [lo, hi].
  uint64_t log_uniform(uint64_t lo, uint64_t hi) {
    const double l = std::log2(static_cast<double>(lo)), h = std::log2(static_cast<double>(hi) + 1.0);
    const uint64_t v = static_cast<uint64_t>(std::exp2(l + (h - l) * uniform()));
    return std::clamp(v, lo, hi);
  }
};

/// Stamps the first and last (up to) 8 bytes of a payload; an overlapping block would overwrite them.
void stamp(void* p, uint64_t bytes, uint64_t tag) {
  std::memcpy(p, &tag, std::min<uint64_t>(bytes, 8));
  if (bytes >= 16) std::memcpy(static_cast<char*>(p) + bytes - 8, &tag, 8);
}
bool stamp_ok(const void* p, uint64_t bytes, uint64_t tag) {
  const char* q = static_cast<const char*>(p);
  return std::memcmp(q, &tag, std::min<uint64_t>(bytes, 8)) == 0 &&
         (bytes < 16 || std::memcmp(q + bytes - 8, &tag, 8) == 0);
}

struct Live {
  char* p;
  uint64_t bytes;
  uint64_t tag;
};

/// Model of the live blocks: every block's [header, payload end) must be disjoint from every other's.
class LiveSet {
 public:
  /// Adds a block; false if it overlaps a live one.
  bool add(const Live& b) {
    const uint64_t lo = addr(b.p) - tlsf::kHeader, hi = addr(b.p) + std::max<uint64_t>(b.bytes, 1);
    auto next = ranges_.lower_bound(lo);
    if (next != ranges_.end() && next->first < hi) return false;
    if (next != ranges_.begin() && std::prev(next)->second > lo) return false;
    ranges_.emplace(lo, hi);
    blocks_.push_back(b);
    bytes_ += b.bytes;
    return true;
  }
  /// Removes and returns block i (swap with the last).
  Live take(size_t i) {
    const Live b = blocks_[i];
    blocks_[i] = blocks_.back();
    blocks_.pop_back();
    ranges_.erase(addr(b.p) - tlsf::kHeader);
    bytes_ -= b.bytes;
    return b;
  }
  size_t size() const { return blocks_.size(); }
  uint64_t bytes() const { return bytes_; }
  /// Highest payload end, as an offset from `base` (0 if empty).
  uint64_t high_water(const char* base) const {
    return ranges_.empty() ? 0 : std::prev(ranges_.end())->second - addr(base);
  }

 private:
  static uint64_t addr(const void* p) { return reinterpret_cast<uint64_t>(p); }
  std::map<uint64_t, uint64_t> ranges_;
  std::vector<Live> blocks_;
  uint64_t bytes_ = 0;
};

uint64_t offset_in(const Heap& h, const void* p) { return static_cast<const char*>(p) - h.base(); }
bool aligned(const void* p, uint64_t a) { return (reinterpret_cast<uint64_t>(p) & (a - 1)) == 0; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// ---- size classes ---------------------------------------------------------------------------------
TEST_CASE("tlsf: size classes follow fl = floor(log2 s), sl = (s >> (fl - SLI)) ^ (1 << SLI)") {
  using namespace tlsf::detail;
  Rng rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint64_t s = tlsf::detail::round_up(rng.log_uniform(tlsf::kMinBlock, tlsf::kMaxPool - 1), 16);
    if (s >= tlsf::kMaxPool) continue;
    const Class k = mapping(s);
    REQUIRE(k.fl < tlsf::kFLCount);
    REQUIRE(k.sl < tlsf::kSLCount);
    if (s >= tlsf::kSmallBlock) {
      const uint32_t f = 63 - static_cast<uint32_t>(__builtin_clzll(s));
      REQUIRE(k.fl == f - tlsf::kFLShift + 1);
      REQUIRE(k.sl == ((s >> (f - tlsf::kSLI)) ^ (1ull << tlsf::kSLI)));
    } else {
      REQUIRE(k.fl == 0);
      REQUIRE(k.sl == s / 16);
    }
    // The class brackets the size, and the search class only holds blocks at least as big.
    REQUIRE(class_min(k.fl, k.sl) <= s);
    const Class q = mapping_search(s);
    if (q.fl < tlsf::kFLCount) REQUIRE(class_min(q.fl, q.sl) >= s);
    const bool last = k.fl == tlsf::kFLCount - 1 && k.sl == tlsf::kSLCount - 1;
    if (!last) {
      const uint32_t nfl = k.sl + 1 == tlsf::kSLCount ? k.fl + 1 : k.fl;
      const uint32_t nsl = k.sl + 1 == tlsf::kSLCount ? 0 : k.sl + 1;
      REQUIRE(class_min(nfl, nsl) > s);
    }
  }
  // 64-bit geometry: a 141 GB block has fl = floor(log2) = 37 and still has a list.
  CHECK(mapping(141ull << 30).fl == 37 - tlsf::kFLShift + 1);
  CHECK(mapping(tlsf::kMaxPool - 16).fl == tlsf::kFLCount - 1);
  CHECK(tlsf::kFLCount >= 40);
}

TEST_CASE("tlsf: init rejects bad arguments and the checker rejects an uninitialised block") {
  VirtualPool pool(64 * MiB);
  auto* c = static_cast<tlsf::Control*>(std::aligned_alloc(128, tlsf::control_bytes(8)));
  std::memset(static_cast<void*>(c), 0, tlsf::control_bytes(8));
  CHECK_FALSE(tlsf::check(c).ok);
  CHECK(tlsf::alloc(c, 16, 16, 0) == nullptr);
  CHECK(tlsf::free(c, pool.base() + 64) == tlsf::kNotInit);
  CHECK(tlsf::init(c, pool.base() + 8, pool.bytes() - 8, 4) == tlsf::kInvalidArg);      // misaligned base
  CHECK(tlsf::init(c, pool.base(), pool.bytes(), 0) == tlsf::kInvalidArg);              // no arena
  CHECK(tlsf::init(c, pool.base(), 8 * KiB, 4) == tlsf::kInvalidArg);                   // arenas too small
  CHECK(tlsf::init(c, pool.base(), tlsf::kMaxPool, 4) == tlsf::kInvalidArg);            // beyond 48 bits
  CHECK(tlsf::init(c, nullptr, pool.bytes(), 4) == tlsf::kInvalidArg);
  tlsf::Options big_large;
  big_large.large_bytes = pool.bytes();
  CHECK(tlsf::init(c, pool.base(), pool.bytes(), 4, big_large) == tlsf::kInvalidArg);  // no room left
  tlsf::Options bad_flags;
  bad_flags.flags = 0x80;
  CHECK(tlsf::init(c, pool.base(), pool.bytes(), 4, bad_flags) == tlsf::kInvalidArg);
  CHECK(tlsf::init(c, pool.base(), pool.bytes() - 5, 8) == tlsf::kOk);  // odd size: rounded down
  require_empty(c);
  CHECK(tlsf::stats(c).pool_bytes == tlsf::detail::round_down(pool.bytes() - 5, 16));
  std::free(c);
}

// ---- randomized sequences -------------------------------------------------------------------------
TEST_CASE("tlsf: 10M random operations, sizes 1 B .. 64 MB, against a model of the live blocks") {
  // 4 small arenas of 512 MiB and a 1 GiB large arena taking requests of 16 MiB and more.
  tlsf::Options opt;
  opt.large_bytes = 1 * GiB;
  opt.large_threshold = 16 * MiB;
  Heap h(3 * GiB, 4, opt);
  tlsf::Control* c = h.c();
  Rng rng(12345);
  LiveSet live;
  const uint64_t kOps = 10'000'000, kBatch = 100'000, kRound = 500'000;
  const uint64_t target = h.pool_bytes() / 4 * 3;  // live bytes hover around here; peaks reach OOM
  uint64_t ops = 0, allocs = 0, frees = 0, failures = 0, serial = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (ops < kOps) {
    const bool grow = live.bytes() < target ? rng.uniform() < 0.6 : rng.uniform() < 0.4;
    if (grow || live.size() == 0) {
      const uint64_t bytes = rng.log_uniform(1, 64 * MiB);
      const uint64_t r = rng.below(100);
      const uint64_t align = r < 80 ? 16 : r < 90 ? (1ull << rng.below(5)) : (32ull << rng.below(16));  // .. 1 MiB
      void* p = tlsf::alloc(c, bytes, align, static_cast<uint32_t>(rng.next()));
      ++allocs;
      if (p == nullptr) {
        ++failures;
      } else {
        REQUIRE(aligned(p, std::max<uint64_t>(align, 16)));
        REQUIRE(offset_in(h, p) + bytes <= h.pool_bytes());
        REQUIRE(tlsf::usable_size(c, p) >= bytes);
        const Live b{static_cast<char*>(p), bytes, ++serial * 0x9e3779b97f4a7c15ull};
        REQUIRE_MESSAGE(live.add(b), "block at offset " << offset_in(h, p) << " overlaps a live block");
        stamp(b.p, b.bytes, b.tag);
      }
    } else {
      const Live b = live.take(rng.below(live.size()));
      REQUIRE_MESSAGE(stamp_ok(b.p, b.bytes, b.tag), "block at offset " << offset_in(h, b.p) << " was overwritten");
      REQUIRE(tlsf::free(c, b.p) == tlsf::kOk);
      ++frees;
    }
    ++ops;
    if (ops % kBatch == 0) {
      require_valid(c);
      const tlsf::Stats s = tlsf::stats(c);
      REQUIRE(s.used_blocks == live.size());
      REQUIRE(s.failed_allocs == failures);
    }
    if (ops % kRound == 0) {  // drain, verify everything came back, hand the pages back
      while (live.size() != 0) {
        const Live b = live.take(live.size() - 1);
        REQUIRE(stamp_ok(b.p, b.bytes, b.tag));
        REQUIRE(tlsf::free(c, b.p) == tlsf::kOk);
        ++frees;
      }
      require_empty(c);
      h.trim();
    }
  }
  const tlsf::Stats s = tlsf::stats(c);
  CHECK(s.allocs == allocs - failures);
  CHECK(s.frees == frees);
  CHECK(frees == allocs - failures);  // the last round drained the heap
  MESSAGE("random: " << ops << " ops (" << allocs << " allocs, " << failures << " failed) in " << seconds_since(t0)
                     << " s");
  // Live bytes hover at 75% of the pool, so peaks run into OOM: failures happen, but rarely.
  CHECK(failures > 0);
  CHECK(failures < allocs / 10);
}

TEST_CASE("tlsf: small blocks churn (1 B .. 4 KiB) keeps every invariant") {
  Heap h(256 * MiB, 2);
  tlsf::Control* c = h.c();
  Rng rng(99);
  LiveSet live;
  for (int batch = 0; batch < 20; ++batch) {
    for (int i = 0; i < 50000; ++i) {
      if (live.size() < 20000 && (rng.uniform() < 0.55 || live.size() == 0)) {
        const uint64_t bytes = rng.log_uniform(1, 4096);
        void* p = tlsf::alloc(c, bytes, 16, static_cast<uint32_t>(rng.below(2)));
        REQUIRE(p != nullptr);
        const Live b{static_cast<char*>(p), bytes, rng.next()};
        REQUIRE(live.add(b));
        stamp(b.p, b.bytes, b.tag);
      } else if (live.size() != 0) {
        const Live b = live.take(rng.below(live.size()));
        REQUIRE(stamp_ok(b.p, b.bytes, b.tag));
        REQUIRE(tlsf::free(c, b.p) == tlsf::kOk);
      }
    }
    require_valid(c);
  }
  while (live.size() != 0) REQUIRE(tlsf::free(c, live.take(0).p) == tlsf::kOk);
  require_empty(c);
}

// ---- threads --------------------------------------------------------------------------------------
TEST_CASE("tlsf: multi-threaded stress with cross-thread frees, then all memory returned") {
  tlsf::Options opt;
  opt.large_bytes = 128 * MiB;
  opt.large_threshold = 1 * MiB;
  Heap h(1 * GiB, 8, opt);
  tlsf::Control* c = h.c();
  constexpr int kThreads = 8;
  constexpr int kOpsPerThread = 150000;
  std::mutex exchange_mu;
  std::vector<Live> exchange;  // blocks handed to whichever thread frees them
  std::atomic<int> errors{0}, running{kThreads};
  std::atomic<uint64_t> failures{0}, checks{0};
  std::atomic<bool> same_arena{false};
  std::string first_error;
  std::mutex err_mu;
  auto report = [&](const std::string& what) {
    std::lock_guard<std::mutex> g(err_mu);
    if (errors++ == 0) first_error = what;
  };

  auto worker = [&](int t) {
    Rng rng(1000 + t);
    std::vector<Live> mine;
    uint64_t serial = 0;
    for (int i = 0; i < kOpsPerThread; ++i) {
      // Second half: everyone on arena 0 to load one lock.
      const uint32_t hint = i >= kOpsPerThread / 2 && same_arena.load() ? 0u
                            : rng.below(10) == 0                       ? static_cast<uint32_t>(rng.next())
                                                                       : static_cast<uint32_t>(t);
      const double u = rng.uniform();
      if (u < 0.5 || mine.empty()) {
        const uint64_t bytes = rng.below(50) == 0 ? rng.log_uniform(1 * MiB, 8 * MiB) : rng.log_uniform(1, 256 * KiB);
        void* p = tlsf::alloc(c, bytes, 16, hint);
        if (p == nullptr) {
          ++failures;
          continue;
        }
        const Live b{static_cast<char*>(p), bytes, (static_cast<uint64_t>(t) << 56) | ++serial};
        stamp(b.p, b.bytes, b.tag);
        if (rng.below(5) == 0) {
          std::lock_guard<std::mutex> g(exchange_mu);
          exchange.push_back(b);
        } else {
          mine.push_back(b);
        }
      } else {
        Live b;
        bool have = false;
        if (rng.below(4) == 0) {
          std::lock_guard<std::mutex> g(exchange_mu);
          if (!exchange.empty()) {
            const size_t j = rng.below(exchange.size());
            b = exchange[j];
            exchange[j] = exchange.back();
            exchange.pop_back();
            have = true;
          }
        }
        if (!have) {
          const size_t j = rng.below(mine.size());
          b = mine[j];
          mine[j] = mine.back();
          mine.pop_back();
        }
        if (!stamp_ok(b.p, b.bytes, b.tag)) report("a live block was overwritten (overlap)");
        const tlsf::Status s = tlsf::free(c, b.p);
        if (s != tlsf::kOk) report("free failed with status " + std::to_string(s));
      }
    }
    for (const Live& b : mine) {
      if (!stamp_ok(b.p, b.bytes, b.tag)) report("a live block was overwritten (overlap)");
      if (tlsf::free(c, b.p) != tlsf::kOk) report("final free failed");
    }
    --running;
  };
  // A checker runs alongside: each arena is checked under its lock while the others keep working.
  auto checker = [&] {
    while (running.load() > 0) {
      const tlsf::CheckResult r = tlsf::check(c);
      if (!r.ok) report(std::string("concurrent check: ") + r.message);
      ++checks;
    }
  };

  for (int phase = 0; phase < 2; ++phase) {
    same_arena = phase == 1;
    running = kThreads;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) ts.emplace_back(worker, t);
    std::thread chk(checker);
    for (auto& t : ts) t.join();
    chk.join();
    INFO(first_error);
    REQUIRE(errors.load() == 0);
    // Blocks parked in the exchange are still live: they must not overlap each other either.
    LiveSet parked;
    for (const Live& b : exchange) {
      REQUIRE(parked.add(b));
      REQUIRE(stamp_ok(b.p, b.bytes, b.tag));
    }
    require_valid(c);
    REQUIRE(tlsf::stats(c).used_blocks == exchange.size());
    for (const Live& b : exchange) REQUIRE(tlsf::free(c, b.p) == tlsf::kOk);
    exchange.clear();
    require_empty(c);
    MESSAGE("threads phase " << phase << ": " << kThreads * kOpsPerThread << " ops on " << kThreads
                             << " threads in " << seconds_since(t0) << " s, " << checks.load()
                             << " concurrent checks, " << failures.load() << " failed allocs");
  }
  const tlsf::Stats s = tlsf::stats(c);
  CHECK(s.failed_allocs == failures.load());
  CHECK(s.allocs > kThreads * kOpsPerThread / 2);
}

TEST_CASE("tlsf: threads exhausting a small heap get null, never hang, and lose nothing") {
  Heap h(16 * MiB, 4);
  tlsf::Control* c = h.c();
  constexpr int kThreads = 6;
  std::atomic<int> bad{0};
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> ts;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      Rng rng(77 + t);
      std::vector<void*> mine;
      for (int round = 0; round < 20; ++round) {
        for (;;) {  // fill until this thread sees OOM
          void* p = tlsf::alloc(c, rng.log_uniform(16, 64 * KiB), 16, static_cast<uint32_t>(t));
          if (p == nullptr) {
            ++failures;
            break;
          }
          mine.push_back(p);
        }
        for (void* p : mine) bad += tlsf::free(c, p) != tlsf::kOk;
        mine.clear();
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK(bad.load() == 0);
  CHECK(failures.load() == kThreads * 20);
  CHECK(tlsf::stats(c).failed_allocs == failures.load());
  require_empty(c);
  MESSAGE("exhaustion under threads: " << seconds_since(t0) << " s");
}

// ---- exhaustion -----------------------------------------------------------------------------------
TEST_CASE("tlsf: fill to the first failure, free all, refill: same result every cycle") {
  Heap h(64 * MiB, 4);
  tlsf::Control* c = h.c();
  SUBCASE("fixed 4 KiB blocks, home arena always 0 (fallback must reach the others)") {
    uint64_t first = 0;
    for (int cycle = 0; cycle < 3; ++cycle) {
      std::vector<void*> got;
      for (void* p; (p = tlsf::alloc(c, 4096, 16, 0)) != nullptr;) got.push_back(p);
      const double fraction = static_cast<double>(got.size() * 4096) / static_cast<double>(h.pool_bytes());
      // Each block costs 4096 + 16 bytes: 4080 blocks fit a 16 MiB arena, 99.6% of it.
      CHECK(got.size() == 4 * ((16 * MiB) / (4096 + 16)));
      CHECK(fraction > 0.995);
      if (cycle == 0) {
        first = got.size();
        MESSAGE("OOM fill, 4 KiB blocks: " << got.size() << " blocks, " << 100.0 * fraction << "% of the pool");
      }
      CHECK(got.size() == first);
      // OOM is sticky and cheap: more attempts fail at once and are counted.
      const uint64_t before = tlsf::stats(c).failed_allocs;
      for (int i = 0; i < 1000; ++i) REQUIRE(tlsf::alloc(c, 4096, 16, static_cast<uint32_t>(i)) == nullptr);
      CHECK(tlsf::stats(c).failed_allocs == before + 1000);
      require_valid(c);
      Rng rng(cycle);
      for (size_t i = got.size(); i > 1; --i) std::swap(got[i - 1], got[rng.below(i)]);  // free in random order
      for (void* p : got) REQUIRE(tlsf::free(c, p) == tlsf::kOk);
      require_empty(c);
    }
  }
  SUBCASE("mixed sizes 16 B .. 1 MiB, same sequence each cycle") {
    double first_fraction = 0;
    uint64_t first_count = 0;
    for (int cycle = 0; cycle < 3; ++cycle) {
      Rng rng(4242);
      std::vector<void*> got;
      uint64_t bytes_out = 0;
      for (;;) {
        const uint64_t bytes = rng.log_uniform(16, 1 * MiB);
        void* p = tlsf::alloc(c, bytes, 16, static_cast<uint32_t>(rng.below(4)));
        if (p == nullptr) break;
        got.push_back(p);
        bytes_out += bytes;
      }
      const double fraction = static_cast<double>(bytes_out) / static_cast<double>(h.pool_bytes());
      if (cycle == 0) {
        first_fraction = fraction;
        first_count = got.size();
        MESSAGE("OOM fill, mixed 16 B .. 1 MiB: " << got.size() << " blocks, " << 100.0 * fraction
                                                  << "% of the pool before the first failure");
      }
      CHECK(got.size() == first_count);
      CHECK(fraction == first_fraction);
      // The first failure comes when no arena holds the request; by then the pool is nearly full.
      CHECK(fraction > 0.95);
      require_valid(c);
      for (void* p : got) REQUIRE(tlsf::free(c, p) == tlsf::kOk);
      require_empty(c);
    }
  }
}

TEST_CASE("tlsf: requests larger than a small arena: too_large without a large arena, served with one") {
  SUBCASE("no large arena: fail cleanly") {
    Heap h(256 * MiB, 4);  // 64 MiB arenas
    tlsf::Control* c = h.c();
    CHECK(tlsf::alloc(c, 64 * MiB, 16, 0) == nullptr);  // needs 64 MiB + header
    CHECK(tlsf::stats(c).too_large == 1);
    void* whole = tlsf::alloc(c, 64 * MiB - tlsf::kHeader, 16, 2);  // exactly one arena
    REQUIRE(whole != nullptr);
    CHECK(offset_in(h, whole) == 2 * 64 * MiB + tlsf::kHeader);
    // That arena is now full; the next whole-arena request goes to another one.
    void* whole2 = tlsf::alloc(c, 64 * MiB - tlsf::kHeader, 16, 2);
    REQUIRE(whole2 != nullptr);
    CHECK(offset_in(h, whole2) == 3 * 64 * MiB + tlsf::kHeader);
    require_valid(c);
    const tlsf::Stats s = tlsf::stats(c);
    CHECK(s.too_large == 1);
    CHECK(s.failed_allocs == 1);
    CHECK(s.used_bytes == 128 * MiB);
    CHECK(tlsf::free(c, whole) == tlsf::kOk);
    CHECK(tlsf::free(c, whole2) == tlsf::kOk);
    require_empty(c);
  }
  SUBCASE("a large arena serves them; beyond it: too_large; full: plain OOM") {
    tlsf::Options opt;
    opt.large_bytes = 128 * MiB;
    Heap h(256 * MiB, 4, opt);  // 4 x 32 MiB + 128 MiB
    tlsf::Control* c = h.c();
    REQUIRE(tlsf::arena_count(c) == 5);
    // At or above the threshold (a quarter of a small arena, 8 MiB) the large arena is tried first, even
    // though a small arena could hold the block.
    void* ten = tlsf::alloc(c, 10 * MiB, 16, 0);
    REQUIRE(ten != nullptr);
    CHECK(offset_in(h, ten) >= 128 * MiB);
    void* seven = tlsf::alloc(c, 7 * MiB, 16, 0);
    REQUIRE(seven != nullptr);
    CHECK(offset_in(h, seven) < 32 * MiB);
    CHECK(tlsf::free(c, ten) == tlsf::kOk);
    CHECK(tlsf::free(c, seven) == tlsf::kOk);
    void* big = tlsf::alloc(c, 100 * MiB, 4096, 1);
    REQUIRE(big != nullptr);
    CHECK(offset_in(h, big) >= 128 * MiB);
    CHECK(aligned(big, 4096));
    CHECK(tlsf::alloc(c, 129 * MiB, 16, 0) == nullptr);
    CHECK(tlsf::stats(c).too_large == 1);
    CHECK(tlsf::alloc(c, 60 * MiB, 16, 0) == nullptr);  // fits the large arena's size, not its free space
    tlsf::Stats s = tlsf::stats(c);
    CHECK(s.too_large == 1);
    CHECK(s.failed_allocs == 2);
    // A request above the threshold falls back to a small arena when the large one is busy.
    void* mid = tlsf::alloc(c, 30 * MiB, 16, 3);
    REQUIRE(mid != nullptr);
    CHECK(offset_in(h, mid) < 128 * MiB);
    // Small requests go to the small arenas, and spill into the large one only when they are full.
    void* small = tlsf::alloc(c, 1000, 16, 3);
    REQUIRE(small != nullptr);
    CHECK(offset_in(h, small) < 128 * MiB);
    require_valid(c);
    CHECK(tlsf::free(c, big) == tlsf::kOk);
    CHECK(tlsf::free(c, mid) == tlsf::kOk);
    CHECK(tlsf::free(c, small) == tlsf::kOk);
    require_empty(c);
  }
}

// ---- alignment, zero size, batches ---------------------------------------------------------------
TEST_CASE("tlsf: alignment: powers of two up to 1 MiB honoured, anything else rejected and counted") {
  Heap h(512 * MiB, 2);
  tlsf::Control* c = h.c();
  Rng rng(5);
  std::vector<void*> got;
  LiveSet live;
  for (uint64_t align = 1; align <= 1 * MiB; align <<= 1) {
    for (const uint64_t bytes : std::initializer_list<uint64_t>{0, 1, 24, 100, 4095, 70000, 3 * MiB}) {
      void* p = tlsf::alloc(c, bytes, align, static_cast<uint32_t>(rng.below(2)));
      REQUIRE(p != nullptr);
      INFO("align " << align << " bytes " << bytes);
      CHECK(aligned(p, std::max<uint64_t>(align, 16)));
      REQUIRE(live.add({static_cast<char*>(p), bytes, 0}));
      got.push_back(p);
    }
    require_valid(c);
  }
  const tlsf::Stats before = tlsf::stats(c);
  int rejected = 0;
  for (const uint64_t bad : {0ull, 3ull, 24ull, 48ull, 1000ull, 4097ull, (1ull << 20) + 16, ~0ull}) {
    INFO("align " << bad);
    CHECK(tlsf::alloc(c, 64, bad, 0) == nullptr);
    void* out[4] = {&rejected, &rejected, &rejected, &rejected};
    CHECK(tlsf::alloc_n(c, 64, bad, 0, 4, out) == 0);
    CHECK((out[0] == nullptr && out[3] == nullptr));
    rejected += 2;
  }
  const tlsf::Stats after = tlsf::stats(c);
  CHECK(after.bad_align == before.bad_align + rejected);
  CHECK(after.failed_allocs == before.failed_allocs + 8 + 8 * 4);
  CHECK(after.used_bytes == before.used_bytes);
  CHECK(after.used_blocks == before.used_blocks);
  require_valid(c);
  // Alignment gaps went back to the free lists, so freeing everything restores the empty heap.
  for (void* p : got) REQUIRE(tlsf::free(c, p) == tlsf::kOk);
  require_empty(c);
  // An aligned request as large as the arena allows still succeeds (fallback scan).
  const uint64_t arena_bytes = 256 * MiB;
  void* p = tlsf::alloc(c, arena_bytes - 2 * MiB, 1 * MiB, 0);
  REQUIRE(p != nullptr);
  CHECK(aligned(p, 1 * MiB));
  require_valid(c);
  CHECK(tlsf::free(c, p) == tlsf::kOk);
  require_empty(c);
}

TEST_CASE("tlsf: zero-size requests get unique minimal blocks that must be freed") {
  Heap h(16 * MiB, 1);
  tlsf::Control* c = h.c();
  void* a = tlsf::alloc(c, 0, 16, 0);
  void* b = tlsf::alloc(c, 0, 16, 0);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a != b);
  CHECK(aligned(a, 16));
  CHECK(tlsf::usable_size(c, a) == tlsf::kMinBlock - tlsf::kHeader);
  const tlsf::Stats s = tlsf::stats(c);
  CHECK(s.used_blocks == 2);
  CHECK(s.used_bytes == 2 * tlsf::kMinBlock);
  CHECK(tlsf::free(c, a) == tlsf::kOk);
  CHECK(tlsf::free(c, b) == tlsf::kOk);
  CHECK(tlsf::free(c, nullptr) == tlsf::kOk);  // free(null) is a no-op
  require_empty(c);
}

TEST_CASE("tlsf: alloc_n serves a warp's worth under one lock; free_n frees mixed batches") {
  Heap h(4 * MiB, 4);  // 1 MiB arenas
  tlsf::Control* c = h.c();
  void* out[32];
  REQUIRE(tlsf::alloc_n(c, 100, 16, 2, 32, out) == 32);
  LiveSet live;
  for (void* p : out) {
    REQUIRE(p != nullptr);
    CHECK(tlsf::detail::arena_of(c, offset_in(h, p)) == 2);  // all from the home arena
    REQUIRE(live.add({static_cast<char*>(p), 100, 0}));
  }
  require_valid(c);
  // Partially served batch: 3 blocks of 1.2 MiB exceed every 1 MiB arena... so all fail and count.
  void* big[3];
  CHECK(tlsf::alloc_n(c, 1200 * KiB, 16, 0, 3, big) == 0);
  // 5 blocks of 600 KiB: one per arena, 4 arenas: 4 served, 1 null, failure counted once per slot.
  const uint64_t failed_before = tlsf::stats(c).failed_allocs;
  void* mid[5];
  CHECK(tlsf::alloc_n(c, 600 * KiB, 16, 0, 5, mid) == 4);
  CHECK(mid[4] == nullptr);
  CHECK(tlsf::stats(c).failed_allocs == failed_before + 1);
  require_valid(c);
  // free_n: the 32 small ones interleaved with the 4 mid ones, a null and a foreign pointer.
  std::vector<void*> batch(out, out + 32);
  batch.insert(batch.begin() + 5, mid, mid + 4);
  batch.push_back(nullptr);
  int on_stack = 0;
  batch.push_back(&on_stack);
  std::vector<tlsf::Status> st(batch.size());
  CHECK(tlsf::free_n(c, batch.data(), static_cast<uint32_t>(batch.size()), st.data()) == 36);
  CHECK(st[st.size() - 2] == tlsf::kOk);
  CHECK(st.back() == tlsf::kForeign);
  CHECK(std::count(st.begin(), st.end(), tlsf::kOk) == 37);
  require_empty(c);
}

TEST_CASE("tlsf: carved batches are ordinary adjacent blocks; free_n releases runs and still catches misuse") {
  for (const uint32_t flags : {0u, static_cast<uint32_t>(tlsf::kChecked)}) {
    CAPTURE(flags);
    tlsf::Options opt;
    opt.flags = flags;
    Heap h(4 * MiB, 1, opt);
    tlsf::Control* c = h.c();
    void* out[32];
    REQUIRE(tlsf::alloc_n(c, 40, 16, 0, 32, out) == 32);
    const uint64_t step = tlsf::detail::block_size_for(40);  // 64
    for (int j = 0; j < 32; ++j) {
      if (j > 0) CHECK(offset_in(h, out[j]) - offset_in(h, out[j - 1]) == step);  // one carved run
      CHECK(tlsf::usable_size(c, out[j]) == step - tlsf::kHeader);
      stamp(out[j], 40, 1000 + j);
    }
    require_valid(c);
    tlsf::Stats s = tlsf::stats(c);
    CHECK(s.used_blocks == 32);
    CHECK(s.allocs == 32);
    CHECK(s.free_blocks == 1);  // the tail
    // One piece freed on its own, the rest as a batch with a duplicate and that stale pointer in it.
    CHECK(tlsf::free(c, out[10]) == tlsf::kOk);
    std::vector<void*> batch;
    for (int j = 0; j < 32; ++j) {
      if (j != 10) batch.push_back(out[j]);
      if (j == 3) batch.push_back(out[3]);    // freed twice in one batch (right after itself)
      if (j == 20) batch.push_back(out[10]);  // already freed
    }
    for (int j = 0; j < 32; ++j) {
      if (j != 10) CHECK(stamp_ok(out[j], 40, 1000 + j));
    }
    std::vector<tlsf::Status> st(batch.size());
    CHECK(tlsf::free_n(c, batch.data(), static_cast<uint32_t>(batch.size()), st.data()) == 31);
    CHECK(std::count(st.begin(), st.end(), tlsf::kDoubleFree) == 2);
    CHECK(st[4] == tlsf::kDoubleFree);   // the second out[3]
    s = tlsf::stats(c);
    CHECK(s.double_free == 2);
    CHECK(s.frees == 32);
    require_empty(c);
    // Stale pointers into a released run read as double frees (poisoned or free headers).
    CHECK(tlsf::free(c, out[7]) == tlsf::kDoubleFree);
    CHECK(tlsf::free(c, out[0]) == tlsf::kDoubleFree);
    require_empty(c);
  }
}

TEST_CASE("tlsf: random carved batches and run frees in any order keep every invariant") {
  Heap h(32 * MiB, 2);
  tlsf::Control* c = h.c();
  Rng rng(77);
  LiveSet live;
  std::vector<Live> pool_of_live;
  uint64_t next_tag = 1;
  for (int round = 0; round < 400; ++round) {
    const uint32_t n = 1 + static_cast<uint32_t>(rng.below(64));
    const uint64_t bytes = rng.log_uniform(1, 8192);
    std::vector<void*> out(n);
    const uint32_t got = tlsf::alloc_n(c, bytes, 16, static_cast<uint32_t>(rng.below(2)), n, out.data());
    for (uint32_t i = 0; i < got; ++i) {
      REQUIRE(out[i] != nullptr);
      REQUIRE(aligned(out[i], 16));
      const Live b{static_cast<char*>(out[i]), bytes, next_tag++};
      REQUIRE(live.add(b));
      stamp(b.p, b.bytes, b.tag);
    }
    // Free a random batch: sometimes the newest blocks in order (whole runs), sometimes shuffled.
    const size_t k = live.size() > 0 ? rng.below(std::min<size_t>(live.size(), 96) + 1) : 0;
    std::vector<Live> victims;
    for (size_t i = 0; i < k; ++i) victims.push_back(live.take(rng.below(live.size())));
    if (rng.below(2)) {
      std::sort(victims.begin(), victims.end(), [](const Live& a, const Live& b) { return a.p < b.p; });
    }
    std::vector<void*> ptrs;
    for (const Live& v : victims) {
      REQUIRE(stamp_ok(v.p, v.bytes, v.tag));
      ptrs.push_back(v.p);
    }
    CHECK(tlsf::free_n(c, ptrs.data(), static_cast<uint32_t>(ptrs.size())) == ptrs.size());
    if (round % 20 == 0) require_valid(c);
  }
  std::vector<void*> rest;
  while (live.size() > 0) {
    const Live b = live.take(0);
    REQUIRE(stamp_ok(b.p, b.bytes, b.tag));
    rest.push_back(b.p);
  }
  std::sort(rest.begin(), rest.end());
  CHECK(tlsf::free_n(c, rest.data(), static_cast<uint32_t>(rest.size())) == rest.size());
  require_empty(c);
}

TEST_CASE("tlsf: a batch that no single free block can hold is served block by block") {
  Heap h(1 * MiB, 1);
  tlsf::Control* c = h.c();
  // Fill with 1 KiB blocks, then free every other one: holes of one block each.
  std::vector<void*> all;
  for (;;) {
    void* p = tlsf::alloc(c, 1000, 16, 0);
    if (!p) break;
    all.push_back(p);
  }
  REQUIRE(all.size() > 100);
  std::vector<void*> odd;
  for (size_t i = 1; i < all.size(); i += 2) odd.push_back(all[i]);
  CHECK(tlsf::free_n(c, odd.data(), static_cast<uint32_t>(odd.size())) == odd.size());
  require_valid(c);
  void* out[16];
  CHECK(tlsf::alloc_n(c, 1000, 16, 0, 16, out) == 16);  // 16 holes, none big enough for two
  for (int j = 1; j < 16; ++j) CHECK(offset_in(h, out[j]) - offset_in(h, out[j - 1]) > 1100);
  require_valid(c);
  CHECK(tlsf::free_n(c, out, 16) == 16);
  std::vector<void*> even;
  for (size_t i = 0; i < all.size(); i += 2) even.push_back(all[i]);
  CHECK(tlsf::free_n(c, even.data(), static_cast<uint32_t>(even.size())) == even.size());
  require_empty(c);
}

// ---- misuse ---------------------------------------------------------------------------------------
TEST_CASE("tlsf: checked mode refuses double and foreign frees, counts them, corrupts nothing") {
  tlsf::Options opt;
  opt.flags = tlsf::kChecked;
  Heap h(64 * MiB, 2, opt);
  tlsf::Control* c = h.c();
  // Physically adjacent blocks in arena 0 (an empty arena serves from its start, in order).
  char* a = static_cast<char*>(tlsf::alloc(c, 1000, 16, 0));
  char* b = static_cast<char*>(tlsf::alloc(c, 64 * KiB, 16, 0));
  char* d = static_cast<char*>(tlsf::alloc(c, 1000, 16, 0));
  char* e = static_cast<char*>(tlsf::alloc(c, 1000, 16, 0));
  REQUIRE((a && b && d && e));
  REQUIRE(b > a);
  REQUIRE(d > b);
  std::memset(b, 0x5a, 64 * KiB);  // payload bytes the interior checks must not take for headers
  const tlsf::Stats base_stats = tlsf::stats(c);
  uint64_t foreign = 0, doubles = 0;
  auto expect = [&](void* p, tlsf::Status want) {
    const tlsf::Stats s0 = tlsf::stats(c);
    CHECK(tlsf::free(c, p) == want);
    const tlsf::Stats s1 = tlsf::stats(c);
    CHECK(s1.used_bytes == s0.used_bytes);
    CHECK(s1.used_blocks == s0.used_blocks);
    CHECK(s1.free_blocks == s0.free_blocks);
    foreign += want == tlsf::kForeign;
    doubles += want == tlsf::kDoubleFree;
    require_valid(c);
  };
  int on_stack = 0;
  SUBCASE("foreign pointers") {
    expect(&on_stack, tlsf::kForeign);                             // outside the pool
    expect(h.base() - 16, tlsf::kForeign);                         // just below
    expect(h.base(), tlsf::kForeign);                              // no header before it
    expect(h.base() + h.pool_bytes(), tlsf::kForeign);             // just past the end
    expect(h.base() + h.pool_bytes() - 16, tlsf::kForeign);        // last granule of the pool (free)
    expect(b + 1, tlsf::kForeign);                                 // misaligned
    expect(b + 8, tlsf::kForeign);                                 // misaligned
    expect(b + 16, tlsf::kForeign);                                // interior, aligned
    expect(b + 4096, tlsf::kForeign);                              // interior, aligned
    expect(e + 4096, tlsf::kForeign);                              // inside the free remainder
    expect(reinterpret_cast<void*>(0x10), tlsf::kForeign);         // near-null garbage
    expect(h.base() + 32 * MiB + 16, tlsf::kDoubleFree);           // arena 1's one block: free
    const tlsf::Stats s = tlsf::stats(c);
    CHECK(s.bad_free == foreign);
    CHECK(s.double_free == doubles);
    CHECK(s.used_bytes == base_stats.used_bytes);
  }
  SUBCASE("double frees, before and after coalescing") {
    CHECK(tlsf::free(c, a) == tlsf::kOk);
    expect(a, tlsf::kDoubleFree);  // still a block of its own (b is used): free bit set
    CHECK(tlsf::free(c, b) == tlsf::kOk);  // merges into a
    expect(b, tlsf::kDoubleFree);  // absorbed header: poisoned
    expect(a, tlsf::kDoubleFree);
    CHECK(tlsf::free(c, e) == tlsf::kOk);  // merges with the free tail
    expect(e, tlsf::kDoubleFree);
    CHECK(tlsf::free(c, d) == tlsf::kOk);  // merges both ways: arena 0 is empty again
    expect(d, tlsf::kDoubleFree);
    const tlsf::Stats s = tlsf::stats(c);
    CHECK(s.double_free == doubles);
    CHECK(s.bad_free == 0);
    require_empty(c);
  }
  SUBCASE("a stale pointer into a block since reused is foreign, and the new owner is unharmed") {
    CHECK(tlsf::free(c, b) == tlsf::kOk);
    char* big = static_cast<char*>(tlsf::alloc(c, 64 * KiB - 2048, 16, 0));  // reuses b's space
    REQUIRE(big == b);
    char* inner = static_cast<char*>(tlsf::alloc(c, 1000, 16, 0));  // carved from b's tail
    REQUIRE(inner > big);
    std::memset(big, 0x11, 64 * KiB - 2048);
    expect(b + 1024, tlsf::kForeign);
    CHECK(tlsf::free(c, big) == tlsf::kOk);
    CHECK(tlsf::free(c, inner) == tlsf::kOk);
    b = static_cast<char*>(tlsf::alloc(c, 64 * KiB, 16, 0));
  }
  SUBCASE("a header overwritten by the user is refused instead of spreading the damage") {
    uint64_t saved[2];
    std::memcpy(saved, d - 16, 16);
    std::memset(d - 16, 0x5a, 16);  // b's owner writes 16 bytes past its end
    {
      const tlsf::Stats s0 = tlsf::stats(c);
      CHECK(tlsf::free(c, d) == tlsf::kForeign);
      CHECK(tlsf::stats(c).used_blocks == s0.used_blocks);
      CHECK_FALSE(tlsf::check(c).ok);  // the checker sees the damage too
    }
    std::memcpy(d - 16, saved, 16);
    require_valid(c);
    // A header with a consistent tag but the wrong size (a forged or stale image): the next block's
    // back link gives it away.
    auto* hd = reinterpret_cast<tlsf::detail::Hdr*>(d - 16);
    const uint64_t off_d = offset_in(h, d) - 16;
    hd->w0 = tlsf::detail::make_w0(off_d, tlsf::detail::size_of(saved[0]) + 32, 0);
    CHECK(tlsf::free(c, d) == tlsf::kForeign);
    std::memcpy(d - 16, saved, 16);
    require_valid(c);
  }
  if (a != nullptr && tlsf::stats(c).used_blocks == 4) {
    for (void* p : {a, b, d, e}) CHECK(tlsf::free(c, p) == tlsf::kOk);
    require_empty(c);
  }
}

TEST_CASE("tlsf: unchecked mode still refuses out-of-pool pointers and plain double frees") {
  Heap h(16 * MiB, 1);
  tlsf::Control* c = h.c();
  char* a = static_cast<char*>(tlsf::alloc(c, 256, 16, 0));
  char* b = static_cast<char*>(tlsf::alloc(c, 256, 16, 0));
  REQUIRE((a && b));
  int on_stack = 0;
  CHECK(tlsf::free(c, &on_stack) == tlsf::kForeign);
  CHECK(tlsf::free(c, a + 3) == tlsf::kForeign);
  CHECK(tlsf::free(c, a) == tlsf::kOk);
  CHECK(tlsf::free(c, a) == tlsf::kDoubleFree);
  const tlsf::Stats s = tlsf::stats(c);
  CHECK(s.bad_free == 2);
  CHECK(s.double_free == 1);
  require_valid(c);
  // Checked mode can be switched on at run time.
  tlsf::set_checked(c, true);
  CHECK(tlsf::free(c, b + 64) == tlsf::kForeign);
  tlsf::set_checked(c, false);
  CHECK(tlsf::free(c, b) == tlsf::kOk);
  require_empty(c);
}

TEST_CASE("tlsf: the checker catches each kind of corruption") {
  Heap h(16 * MiB, 2);
  tlsf::Control* c = h.c();
  std::vector<char*> ps;
  for (int i = 0; i < 8; ++i) ps.push_back(static_cast<char*>(tlsf::alloc(c, 256 * (i + 1), 16, 0)));
  for (int i = 1; i < 8; i += 2) REQUIRE(tlsf::free(c, ps[i]) == tlsf::kOk);  // free blocks between used ones
  require_valid(c);
  tlsf::Arena* a0 = tlsf::arena(c, 0);
  using tlsf::detail::Hdr;
  auto hdr_of = [&](char* p) { return reinterpret_cast<Hdr*>(p - 16); };
  auto expect_caught = [&](const char* what, const char* fragment) {
    const tlsf::CheckResult r = tlsf::check(c);
    INFO(what << ": " << r.message);
    CHECK_FALSE(r.ok);
    CHECK(std::string(r.message).find(fragment) != std::string::npos);
  };
  auto corrupt = [&](auto& field, auto value, const char* what, const char* fragment) {
    const auto saved = field;
    field = value;
    expect_caught(what, fragment);
    field = saved;
    require_valid(c);
  };
  corrupt(hdr_of(ps[2])->w0, hdr_of(ps[2])->w0 + 16, "size grown by 16", "tag");
  corrupt(hdr_of(ps[0])->w0, hdr_of(ps[0])->w0 | tlsf::detail::kFreeBit, "used block marked free", "");
  corrupt(hdr_of(ps[2])->prev, hdr_of(ps[2])->prev + 16, "prev link", "prev-physical");
  corrupt(hdr_of(ps[2])->w0, hdr_of(ps[2])->w0 ^ tlsf::detail::kPrevFreeBit, "prev-free bit", "prev-free");
  corrupt(a0->fl_bitmap, a0->fl_bitmap ^ (1ull << 20), "extra first-level bit", "bitmap");
  corrupt(a0->sl_bitmap[0], a0->sl_bitmap[0] ^ (1u << 1), "second-level bit", "bitmap");
  corrupt(a0->used_bytes, a0->used_bytes + 16, "used counter", "counter");
  corrupt(a0->free_blocks, a0->free_blocks - 1, "free block counter", "counter");
  const tlsf::detail::Class k = tlsf::detail::mapping(tlsf::detail::size_of(hdr_of(ps[1])->w0));
  corrupt(a0->heads[k.fl][k.sl], tlsf::kNil, "list head dropped", "");
  corrupt(reinterpret_cast<tlsf::detail::Links*>(ps[1])->prev, uint64_t{48}, "back link", "");
  // Two adjacent free blocks: mark the used block after a free one as free (and list it nowhere).
  corrupt(hdr_of(ps[2])->w0, hdr_of(ps[2])->w0 | tlsf::detail::kFreeBit, "adjacent free", "adjacent free");
  corrupt(c->pool_bytes, c->pool_bytes + 4096, "pool size", "cover");
  corrupt(c->magic, uint64_t{0}, "magic", "initialised");
  for (int i = 0; i < 8; i += 2) REQUIRE(tlsf::free(c, ps[i]) == tlsf::kOk);
  require_empty(c);
}

// ---- 64-bit pools ---------------------------------------------------------------------------------
TEST_CASE("tlsf: a 128 GiB pool (virtual): blocks of tens of GB, offsets far past 32 bits") {
  SUBCASE("one arena") {
    Heap h(128 * GiB, 1);
    tlsf::Control* c = h.c();
    void* a = tlsf::alloc(c, 60 * GiB, 16, 0);
    void* b = tlsf::alloc(c, 40 * GiB, 1 * MiB, 0);
    void* d = tlsf::alloc(c, 20 * GiB + 12345, 16, 0);
    REQUIRE((a && b && d));
    CHECK(offset_in(h, b) >= 60 * GiB);
    CHECK(offset_in(h, d) >= 100 * GiB);
    CHECK(aligned(b, 1 * MiB));
    CHECK(tlsf::usable_size(c, d) >= 20 * GiB + 12345);
    CHECK(tlsf::alloc(c, 9 * GiB, 16, 0) == nullptr);  // only ~8 GiB left
    void* rest = tlsf::alloc(c, 7 * GiB, 16, 0);
    REQUIRE(rest != nullptr);
    require_valid(c);
    const tlsf::Stats s = tlsf::stats(c);
    CHECK(s.used_bytes > 127 * GiB);
    CHECK(s.used_bytes + s.free_bytes == 128 * GiB);
    for (void* p : {b, rest, a, d}) CHECK(tlsf::free(c, p) == tlsf::kOk);
    require_empty(c);
    // The whole pool in one block (exact fit: found by the fallback scan, not the rounded search).
    void* all = tlsf::alloc(c, 128 * GiB - tlsf::kHeader, 16, 0);
    REQUIRE(all != nullptr);
    CHECK(tlsf::stats(c).free_bytes == 0);
    require_valid(c);
    CHECK(tlsf::free(c, all) == tlsf::kOk);
    require_empty(c);
  }
  SUBCASE("32 small arenas and a 100 GiB large arena") {
    tlsf::Options opt;
    opt.large_bytes = 100 * GiB;
    Heap h(128 * GiB, 32, opt);
    tlsf::Control* c = h.c();
    void* huge = tlsf::alloc(c, 96 * GiB, 4096, 7);
    REQUIRE(huge != nullptr);
    CHECK(offset_in(h, huge) >= 28 * GiB);
    std::vector<void*> small;
    for (uint32_t i = 0; i < 64; ++i) small.push_back(tlsf::alloc(c, 1 * MiB, 16, i));
    for (void* p : small) {
      REQUIRE(p != nullptr);
      CHECK(offset_in(h, p) < 28 * GiB);
    }
    CHECK(tlsf::alloc(c, 101 * GiB, 16, 0) == nullptr);
    CHECK(tlsf::stats(c).too_large == 1);
    require_valid(c);
    CHECK(tlsf::free(c, huge) == tlsf::kOk);
    for (void* p : small) CHECK(tlsf::free(c, p) == tlsf::kOk);
    require_empty(c);
  }
}

// ---- fragmentation --------------------------------------------------------------------------------
TEST_CASE("tlsf: fragmentation over random rounds stays within the documented bound") {
  // Per round: a fresh single-arena heap, random churn around a live target. H = highest address in use
  // at any time, L = most bytes requested and live at any time; (H - L) / L is the fragmentation
  // (address range used / bytes requested, minus one). docs/allocator.md justifies the bounds.
  constexpr int kRounds = 20;
  double sum = 0, worst = 0;
  for (int round = 0; round < kRounds; ++round) {
    Heap h(1 * GiB, 1);
    tlsf::Control* c = h.c();
    Rng rng(500 + round);
    LiveSet live;
    const uint64_t target = 64 * MiB;
    uint64_t high = 0, peak = 0;
    for (int i = 0; i < 100000; ++i) {
      const bool grow = live.bytes() < target ? rng.uniform() < 0.6 : rng.uniform() < 0.4;
      if (grow || live.size() == 0) {
        const uint64_t bytes = rng.log_uniform(16, 1 * MiB);
        void* p = tlsf::alloc(c, bytes, 16, 0);
        REQUIRE(p != nullptr);
        REQUIRE(live.add({static_cast<char*>(p), bytes, 0}));
        high = std::max(high, live.high_water(h.base()));
        peak = std::max(peak, live.bytes());
      } else {
        REQUIRE(tlsf::free(c, live.take(rng.below(live.size())).p) == tlsf::kOk);
      }
    }
    require_valid(c);
    const double frag = static_cast<double>(high) / static_cast<double>(peak) - 1.0;
    sum += frag;
    worst = std::max(worst, frag);
    // The external-fragmentation statistic is meaningful too: scattered free space, but not all of it.
    const tlsf::Stats s = tlsf::stats(c);
    CHECK(s.fragmentation > 0.0);
    CHECK(s.fragmentation < 1.0);
  }
  const double mean = sum / kRounds;
  MESSAGE("fragmentation (H - L) / L over " << kRounds << " rounds: mean " << 100.0 * mean << "%, worst "
                                             << 100.0 * worst << "%");
  CHECK(mean < 0.30);
  CHECK(worst < 0.40);
}

TEST_CASE("tlsf: stats report the largest free block and external fragmentation exactly") {
  Heap h(16 * MiB, 1);
  tlsf::Control* c = h.c();
  CHECK(tlsf::stats(c).largest_free == 16 * MiB);
  std::vector<void*> ps;
  for (int i = 0; i < 100; ++i) ps.push_back(tlsf::alloc(c, 64 * KiB - 16, 16, 0));  // 64 KiB blocks
  for (int i = 0; i < 100; i += 2) REQUIRE(tlsf::free(c, ps[i]) == tlsf::kOk);      // checkerboard
  const tlsf::Stats s = tlsf::stats(c);
  const uint64_t tail = 16 * MiB - 100 * 64 * KiB;
  CHECK(s.largest_free == tail);
  CHECK(s.free_bytes == tail + 50 * 64 * KiB);
  CHECK(s.free_blocks == 51);
  CHECK(s.used_blocks == 50);
  CHECK(s.fragmentation == doctest::Approx(1.0 - static_cast<double>(tail) / static_cast<double>(s.free_bytes)));
  for (int i = 1; i < 100; i += 2) REQUIRE(tlsf::free(c, ps[i]) == tlsf::kOk);
  require_empty(c);
}

TEST_CASE("tlsf: the heap relocates: all metadata is offsets from the pool base") {
  VirtualPool a(16 * MiB), b(16 * MiB);
  auto* c = static_cast<tlsf::Control*>(std::aligned_alloc(128, tlsf::control_bytes(2)));
  REQUIRE(tlsf::init(c, a.base(), a.bytes(), 2) == tlsf::kOk);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 50; ++i) offs.push_back(static_cast<char*>(tlsf::alloc(c, 1000 + i, 16, i)) - a.base());
  // Copy the pool's bytes (headers) to another address and point the heap there.
  for (uint32_t i = 0; i < tlsf::arena_count(c); ++i) {
    const tlsf::Arena* ar = tlsf::arena(c, i);
    std::memcpy(b.base() + ar->begin, a.base() + ar->begin, 1 * MiB);  // all blocks live in the first MiB
  }
  tlsf::rebase(c, b.base());
  require_valid(c);
  for (uint64_t o : offs) CHECK(tlsf::free(c, b.base() + o) == tlsf::kOk);
  require_empty(c);
  std::free(c);
}

TEST_CASE("tlsf: a warp's group of mixed sizes (1 B .. 64 MB), served as the device serves it: blocks its own, small requests served") {
  // serve_group is what warp_alloc's leader runs: 32 requests of any sizes, carved arena by arena. The
  // geometry is a runtime's 1 GiB heap (8 arenas per SM on 132 SMs, a quarter of it one large arena).
  tlsf::Options opt;
  opt.large_bytes = 256 * MiB;
  Heap h(1 * GiB, 1056, opt);
  tlsf::Control* c = h.c();
  Rng rng(77);
  std::vector<std::pair<char*, uint64_t>> live;  // payload, requested bytes
  auto tag_of = [](const char* p) { return reinterpret_cast<uint64_t>(p) * 0x9e3779b97f4a7c15ull; };
  // The block's first bytes and, from 16 bytes on, its last 8 carry a tag of its address.
  auto write_tags = [&](char* p, uint64_t n) {
    const uint64_t t = tag_of(p);
    for (uint64_t b = 0; b < 8 && b < n; ++b) p[b] = static_cast<char>(t >> (8 * b));
    if (n >= 16)
      for (uint64_t b = 0; b < 8; ++b) p[n - 1 - b] = static_cast<char>(t >> (8 * b));
  };
  auto tags_ok = [&](const char* p, uint64_t n) {
    const uint64_t t = tag_of(p);
    for (uint64_t b = 0; b < 8 && b < n; ++b)
      if (p[b] != static_cast<char>(t >> (8 * b))) return false;
    if (n >= 16)
      for (uint64_t b = 0; b < 8; ++b)
        if (p[n - 1 - b] != static_cast<char>(t >> (8 * b))) return false;
    return true;
  };
  uint64_t served = 0, large = 0, nulls = 0, small_nulls = 0;
  for (int round = 0; round < 3000; ++round) {
    uint64_t bytes[32], needs[32], offs[32];
    for (int j = 0; j < 32; ++j) {
      const uint64_t k = rng.next() % 27;
      bytes[j] = (1ull << k) + rng.next() % (1ull << (k < 12 ? k : 12));
      needs[j] = tlsf::detail::block_size_for(bytes[j]);
    }
    const uint32_t got = tlsf::detail::serve_group(c, needs, 32, static_cast<uint32_t>(rng.next() % 2112), offs);
    CHECK(got == static_cast<uint32_t>(std::count_if(offs, offs + 32, [](uint64_t o) { return o != tlsf::kNil; })));
    for (int j = 0; j < 32; ++j) {
      if (offs[j] == tlsf::kNil) {
        ++nulls;
        small_nulls += bytes[j] <= 64 * 1024;  // the small arenas have room for these at all times here
        continue;
      }
      char* p = h.base() + offs[j] + tlsf::kHeader;
      write_tags(p, bytes[j]);
      live.push_back({p, bytes[j]});
      ++served;
      large += bytes[j] >= 32 * MiB;
    }
    for (const auto& [p, n] : live) REQUIRE_MESSAGE(tags_ok(p, n), "round " << round << ": a block was overwritten");
    // Free about half, in a random order (the others stay and fragment the arenas).
    for (std::size_t i = live.size(); i-- > 0;) {
      if (rng.next() % 2 == 0) continue;
      REQUIRE(tlsf::free(c, live[i].first) == tlsf::kOk);
      live[i] = live.back();
      live.pop_back();
    }
    if (round % 250 == 0) require_valid(c);
  }
  for (const auto& [p, n] : live) REQUIRE(tlsf::free(c, p) == tlsf::kOk);
  MESSAGE("served " << served << " (" << large << " of 32 MB or more), " << nulls << " nulls");
  CHECK(large > 0);
  // A large request that cannot be served fails alone: the small ones of its group are served.
  CHECK(small_nulls == 0);
  require_empty(c);
}

TEST_CASE("tlsf: the device stress (1 B .. 64 MB, GPU geometry) as warp_alloc / warp_free serve it, lanes of a warp apart") {
  // tests/gpu/test_alloc.cpp "device stress with sizes from 1 B to 64 MB" on the heap the runtime lays out
  // for it on a 132-SM H100 (host/heap_client.cpp heap_geometry: 1 GiB, a quarter of it the large arena,
  // 768 small arenas of 1 MiB), 132 warps of 32 lanes, each lane with the operator's own size sequence.
  // A warp's allocations go through serve_group (what warp_alloc's leader runs) and its frees through
  // free_n with the pointers grouped by arena in lane order (warp_free's groups and runs). Lanes that got
  // a null go on to their next allocation while the others still have to free, as they may on the device
  // (independent thread scheduling): each step runs one warp's allocating or freeing lanes, or a subset.
  // Every served block must be disjoint from every live one and at least as large as asked.
  tlsf::Options opt;
  opt.large_bytes = 256 * MiB;
  Heap h(1 * GiB, 768, opt);
  tlsf::Control* c = h.c();
  REQUIRE(c->stride == 1 * MiB);
  REQUIRE(c->large_threshold == 256 * KiB);
  constexpr uint32_t kWarps = 132, kIters = 40;
  struct Lane {
    uint32_t s;
    uint32_t iter = 0;
    bool holds = false;
    char* p = nullptr;
    uint64_t bytes = 0;
  };
  std::vector<std::array<Lane, 32>> warps(kWarps);
  for (uint32_t w = 0; w < kWarps; ++w)
    for (uint32_t l = 0; l < 32; ++l) warps[w][l].s = 12345u ^ (w * 7919u + l * 104729u);
  Rng rng(2026);
  std::map<uint64_t, uint64_t> live;  // [header, payload end) of every live block, by start address
  auto add_live = [&](const char* p, uint64_t bytes) {
    const uint64_t lo = reinterpret_cast<uint64_t>(p) - tlsf::kHeader, hi = reinterpret_cast<uint64_t>(p) + bytes;
    auto next = live.lower_bound(lo);
    if (next != live.end() && next->first < hi) return false;
    if (next != live.begin() && std::prev(next)->second > lo) return false;
    live.emplace(lo, hi);
    return true;
  };
  uint64_t served = 0, nulls = 0, large = 0, steps = 0;
  std::vector<uint32_t> busy(kWarps);
  for (uint32_t w = 0; w < kWarps; ++w) busy[w] = w;
  while (!busy.empty()) {
    const size_t bi = rng.below(busy.size());
    const uint32_t w = busy[bi];
    auto& lanes = warps[w];
    uint32_t want_alloc = 0, want_free = 0;
    for (uint32_t l = 0; l < 32; ++l) {
      if (lanes[l].iter >= kIters) continue;
      (lanes[l].holds ? want_free : want_alloc) |= 1u << l;
    }
    if ((want_alloc | want_free) == 0) {
      busy[bi] = busy.back();
      busy.pop_back();
      continue;
    }
    const bool alloc_step = want_alloc != 0 && (want_free == 0 || rng.below(2) == 0);
    uint32_t active = alloc_step ? want_alloc : want_free;
    if (std::popcount(active) > 1 && rng.below(4) == 0) {
      const uint32_t sub = active & static_cast<uint32_t>(rng.next());
      if (sub != 0) active = sub;
    }
    ++steps;
    if (alloc_step) {
      uint64_t needs[32], offs[32];
      uint32_t who[32], n = 0;
      for (uint32_t l = 0; l < 32; ++l) {
        if (!(active >> l & 1)) continue;
        Lane& x = lanes[l];
        x.s = x.s * 1664525u + 1013904223u;  // the operator's generator and sizes
        const uint32_t k = (x.s >> 8) % 27u;
        x.bytes = (1ull << k) + ((x.s >> 20) % (1u << (k < 12 ? k : 12)));
        needs[n] = tlsf::detail::block_size_for(x.bytes);
        who[n++] = l;
      }
      const uint32_t got = tlsf::detail::serve_group(c, needs, n, w * 16u + static_cast<uint32_t>(rng.below(16)), offs);
      CHECK(got == static_cast<uint32_t>(std::count_if(offs, offs + n, [](uint64_t o) { return o != tlsf::kNil; })));
      for (uint32_t r = 0; r < n; ++r) {
        Lane& x = lanes[who[r]];
        if (offs[r] == tlsf::kNil) {
          ++nulls;
          ++x.iter;  // null: the lane goes on to its next allocation
          continue;
        }
        x.p = h.base() + offs[r] + tlsf::kHeader;
        REQUIRE(tlsf::usable_size(c, x.p) >= x.bytes);
        REQUIRE_MESSAGE(add_live(x.p, x.bytes), "warp " << w << " lane " << who[r] << ": block overlaps a live one");
        x.holds = true;
        ++served;
        large += x.bytes >= 32 * MiB;
      }
    } else {
      // warp_free: one group per arena, lanes in order within a group.
      std::vector<std::pair<uint32_t, uint32_t>> order;  // (arena, lane)
      for (uint32_t l = 0; l < 32; ++l) {
        if (!(active >> l & 1)) continue;
        const uint64_t off = lanes[l].p - h.base() - tlsf::kHeader;
        order.push_back({tlsf::detail::arena_of(c, off), l});
      }
      std::sort(order.begin(), order.end());
      std::vector<void*> ptrs;
      for (const auto& [a, l] : order) ptrs.push_back(lanes[l].p);
      std::vector<tlsf::Status> st(ptrs.size());
      CHECK(tlsf::free_n(c, ptrs.data(), static_cast<uint32_t>(ptrs.size()), st.data()) == ptrs.size());
      for (size_t i = 0; i < ptrs.size(); ++i) CHECK(st[i] == tlsf::kOk);
      for (const auto& [a, l] : order) {
        Lane& x = lanes[l];
        live.erase(reinterpret_cast<uint64_t>(x.p) - tlsf::kHeader);
        x.holds = false;
        x.p = nullptr;
        ++x.iter;
      }
    }
    if (steps % 4000 == 0) require_valid(c);
  }
  MESSAGE("GPU-geometry stress: " << served << " served (" << large << " of 32 MB or more), " << nulls << " nulls, "
                                   << steps << " warp steps");
  CHECK(served + nulls == uint64_t(kWarps) * 32 * kIters);
  CHECK(large > 0);
  require_empty(c);
}
