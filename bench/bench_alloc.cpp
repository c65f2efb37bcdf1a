// bench_alloc: the gpuos heap (the TLSF code behind gpuos::dev::malloc, kernel/tlsf.hpp) against CUDA's
// device malloc, under the protocol of the GPU allocator surveys:
//   - throughput: N threads (default 1,000,000, blocks of 256), one malloc each, sizes 16..4096 B
//     doubling and mixed sizes (uniform in [16, 4096]); alloc and free timed separately with events
//     around each kernel (launch included); a fresh heap every repetition; allocs/s = N / time
//   - thread scaling 2^0 .. 2^20 at 16 B
//   - OOM fill: every thread allocates until its first null; fraction of the pool handed out
//   - fragmentation: address range in use / bytes requested - 1 (per arena), over rounds of random
//     frees and refills, and for one round of each fixed size
// CUDA's malloc runs in the same process with cudaLimitMallocHeapSize set; where it is too slow to run
// N threads in the time budget it runs fewer (the count is reported), which can only favour it.
// Every gpuos result is checked: no null, no two blocks overlapping (host sort of all pointers), the
// invariant checker on every arena after the allocations and after the frees, all memory returned.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "kernel/tlsf.hpp"  // the heap's layout sizes

extern "C" const unsigned char bench_alloc_cubin[];

namespace gpuos::bench {
namespace {

namespace tlsf = gpuos::tlsf;

const char* kHelp =
    "usage: bench_alloc [--device N] [--threads N] [--reps N] [--cuda-reps N] [--cuda-budget-ms T]\n"
    "                   [--pool-mib M] [--arenas-per-sm A] [--sweep LIST] [--frag-rounds R] [--json FILE]\n"
    "\n"
    "The gpuos heap (warp-aggregated TLSF, one arena per SM x A) against CUDA's device malloc:\n"
    "throughput at 16..4096 B and mixed sizes (N threads, one malloc each, alloc and free timed\n"
    "separately, fresh heap per repetition), thread scaling, OOM fill, fragmentation.\n"
    "Targets: >= 1 G allocs/s at 16 B, >= 0.3 G allocs/s at 4 KiB, >= 100x CUDA malloc at every size,\n"
    ">= 95% of the pool handed out with mixed sizes, mean fragmentation <= 15%.\n"
    "\n"
    "Options:\n"
    "  --threads N        threads of the throughput runs (default 1000000)\n"
    "  --reps N           gpuos repetitions per point (default 10; median reported)\n"
    "  --cuda-reps N      CUDA malloc repetitions per point (default 2)\n"
    "  --cuda-budget-ms T CUDA malloc runs at most about T ms per kernel; fewer threads if slower (400)\n"
    "  --pool-mib M       gpuos pool and CUDA malloc heap size (default 8192)\n"
    "  --arenas-per-sm A  small arenas per SM of the gpuos heap (default 8, as the runtime's heap)\n"
    "  --sweep LIST       arenas per SM compared at 16 B, 4 KiB and mixed (default 1,2,4,8,16)\n"
    "  --frag-rounds R    refill rounds of the fragmentation run (default 20)\n"
    "  --json FILE        result file (default bench_alloc.json)\n";

struct Config {
  int device = 0;
  unsigned threads = 1000000;
  int reps = 10, cuda_reps = 2;
  double cuda_budget_ms = 400;
  std::uint64_t pool_bytes = 8192ull << 20;
  unsigned arenas_per_sm = 8;
  std::vector<std::int64_t> sweep{1, 2, 4, 8, 16};
  int frag_rounds = 20;
  std::string json = "bench_alloc.json";
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

class Module {
 public:
  Module() { BENCH_CU(cuModuleLoadData(&m_, bench_alloc_cubin)); }
  ~Module() { BENCH_CU(cuModuleUnload(m_)); }
  CUfunction get(const char* n) const {
    CUfunction f = nullptr;
    BENCH_CU(cuModuleGetFunction(&f, m_, n));
    return f;
  }

 private:
  CUmodule m_ = nullptr;
};

/// Launches f over n threads in blocks of 256.
void launch(CUfunction f, unsigned n, void** args, CUstream s) {
  const unsigned blocks = n == 0 ? 1 : (n + 255) / 256;
  BENCH_CU(cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, s, args, nullptr));
}

class Timer {
 public:
  Timer() {
    BENCH_CU(cuEventCreate(&a_, CU_EVENT_DEFAULT));
    BENCH_CU(cuEventCreate(&b_, CU_EVENT_DEFAULT));
  }
  ~Timer() {
    cuEventDestroy(a_);
    cuEventDestroy(b_);
  }
  /// Milliseconds of one launch of f over n threads (events around it).
  double time(CUfunction f, unsigned n, void** args, CUstream s) {
    BENCH_CU(cuEventRecord(a_, s));
    launch(f, n, args, s);
    BENCH_CU(cuEventRecord(b_, s));
    BENCH_CU(cuEventSynchronize(b_));
    float ms = 0;
    BENCH_CU(cuEventElapsedTime(&ms, a_, b_));
    return ms;
  }

 private:
  CUevent a_ = nullptr, b_ = nullptr;
};

/// A gpuos heap in device memory, re-initialised on demand (fresh heap per repetition).
struct Heap {
  const Module& m;
  const Stream& s;
  DeviceArray ctl;
  DeviceArray pool;
  DeviceArray status{16};
  Heap(const Module& mod, const Stream& st, std::uint64_t bytes)
      : m(mod), s(st), ctl(tlsf::control_bytes(tlsf::kMaxArenas)), pool(bytes) {}
  tlsf::Control* c() const { return ctl.as<tlsf::Control>(); }
  void init(unsigned arenas) {
    CUdeviceptr cp = ctl.ptr(), pp = pool.ptr(), st = status.ptr();
    unsigned long long bytes = pool.bytes(), large = 0;
    unsigned flags = 0;
    void* a1[] = {&cp, &pp, &bytes, &arenas, &large, &flags, &st};
    BENCH_CU(cuLaunchKernel(m.get("gpuos_heap_layout"), 1, 1, 1, 1, 1, 1, 0, s.get(), a1, nullptr));
    void* a2[] = {&cp};
    launch(m.get("gpuos_heap_init_arenas"), arenas + 1, a2, s.get());
    unsigned got = ~0u;
    s.download(&got, st, sizeof(got));
    if (got != 0) {
      std::fprintf(stderr, "bench_alloc: heap init failed (status %u, %u arenas)\n", got, arenas);
      std::exit(1);
    }
  }
  /// Invariant check of every arena; the number of failing arenas (0 = fine).
  unsigned check(unsigned arenas) const {
    unsigned h[2] = {0, ~0u};
    s.upload(status.ptr(), h, sizeof(h));
    CUdeviceptr cp = ctl.ptr(), st = status.ptr();
    void* a[] = {&cp, &st};
    launch(m.get("bench_heap_check"), arenas + 1, a, s.get());
    s.download(h, status.ptr(), sizeof(h));
    if (h[0]) std::fprintf(stderr, "bench_alloc: invariant check failed in %u arenas (first: %u)\n", h[0], h[1]);
    return h[0];
  }
  tlsf::Stats stats() const {
    DeviceArray out(sizeof(tlsf::Stats));
    CUdeviceptr cp = ctl.ptr(), op = out.ptr();
    void* a[] = {&cp, &op};
    launch(m.get("bench_heap_stats"), 1, a, s.get());
    tlsf::Stats st{};
    s.download(&st, out.ptr(), sizeof(st));
    return st;
  }
};

struct Failures {
  std::uint64_t n = 0;
  void add(bool bad, const std::string& what) {
    if (!bad) return;
    ++n;
    std::fprintf(stderr, "bench_alloc: CHECK FAILED: %s\n", what.c_str());
  }
};

unsigned count_null(const Module& m, const Stream& s, const DeviceArray& ptrs, unsigned n, const DeviceArray& scratch) {
  unsigned z = 0;
  s.upload(scratch.ptr(), &z, sizeof(z));
  CUdeviceptr p = ptrs.ptr(), sp = scratch.ptr();
  void* a[] = {&p, &n, &sp};
  launch(m.get("bench_count_null"), n, a, s.get());
  s.download(&z, scratch.ptr(), sizeof(z));
  return z;
}

/// No two of the n blocks overlap: sorted by address, each block ends before the next begins.
bool disjoint(const Stream& s, const DeviceArray& ptrs, const DeviceArray* sizes, std::uint64_t fixed, unsigned n) {
  std::vector<std::uint64_t> p(n), z(n, fixed);
  s.download(p.data(), ptrs.ptr(), n * sizeof(std::uint64_t));
  if (sizes) s.download(z.data(), sizes->ptr(), n * sizeof(std::uint64_t));
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v(n);
  for (unsigned i = 0; i < n; ++i) v[i] = {p[i], z[i]};
  std::sort(v.begin(), v.end());
  for (unsigned i = 0; i + 1 < n; ++i)
    if (v[i].first == 0 || v[i].first + v[i].second > v[i + 1].first) return false;
  return n == 0 || v[0].first != 0;
}

struct Point {
  std::uint64_t bytes = 0;  // 0 = mixed
  unsigned threads = 0;
  std::vector<double> alloc_ms, free_ms;
  double alloc_rate() const { return threads / (median(alloc_ms) * 1e-3); }
  double free_rate() const { return threads / (median(free_ms) * 1e-3); }
};

std::string size_name(std::uint64_t b) { return b ? std::to_string(b) + " B" : std::string("mixed"); }

/// gpuos: `reps` repetitions of alloc then free over n threads, fresh heap each; the first is checked.
Point run_gpuos(const Config& c, const Module& m, const Stream& s, Heap& h, unsigned arenas, std::uint64_t bytes,
                unsigned n, int reps, bool plain, Failures& fail) {
  DeviceArray ptrs(std::uint64_t(n) * 8), sizes(std::uint64_t(n) * 8), scratch(16);
  Timer t;
  Point pt;
  pt.bytes = bytes;
  pt.threads = n;
  CUfunction fa = m.get(plain ? "bench_heap_alloc_plain" : "bench_heap_alloc");
  CUfunction ff = m.get(plain ? "bench_heap_free_plain" : "bench_heap_free");
  for (int r = 0; r < reps; ++r) {
    h.init(arenas);
    CUdeviceptr cp = h.ctl.ptr(), pp = ptrs.ptr(), zp = sizes.ptr(), bp = scratch.ptr();
    unsigned long long b = bytes;
    unsigned seed = 1234u + static_cast<unsigned>(r);
    void* aa[] = {&cp, &b, &seed, &pp, &zp, &n};
    void* ap[] = {&cp, &b, &pp, &n};
    pt.alloc_ms.push_back(t.time(fa, n, plain ? ap : aa, s.get()));
    const std::string what = "gpuos " + size_name(bytes) + " x " + std::to_string(n) + (plain ? " (plain)" : "");
    if (r == 0) {
      fail.add(count_null(m, s, ptrs, n, scratch) != 0, what + ": null returned");
      fail.add(!disjoint(s, ptrs, bytes ? nullptr : &sizes, bytes, n), what + ": blocks overlap");
      fail.add(h.check(arenas) != 0, what + ": invariant check after alloc");
    }
    unsigned z = 0;
    s.upload(scratch.ptr(), &z, sizeof(z));
    void* af[] = {&cp, &pp, &n, &bp};
    pt.free_ms.push_back(t.time(ff, n, af, s.get()));
    if (r == 0) {
      s.download(&z, scratch.ptr(), sizeof(z));
      fail.add(z != 0, what + ": free refused");
      fail.add(h.check(arenas) != 0, what + ": invariant check after free");
      const tlsf::Stats st = h.stats();
      fail.add(st.used_bytes != 0 || st.allocs != n || st.frees != n, what + ": memory not all returned");
    }
  }
  (void)c;
  return pt;
}

/// CUDA device malloc: probe, then as many threads (power of two, <= n) as fit the time budget.
Point run_cuda(const Config& c, const Module& m, const Stream& s, std::uint64_t bytes, unsigned n, Failures& fail) {
  DeviceArray ptrs(std::uint64_t(n) * 8), scratch(16);
  Timer t;
  CUfunction fa = m.get("bench_cuda_alloc"), ff = m.get("bench_cuda_free");
  auto once = [&](unsigned k, double& alloc_ms, double& free_ms, unsigned seed) {
    CUdeviceptr pp = ptrs.ptr();
    unsigned long long b = bytes;
    void* aa[] = {&b, &seed, &pp, &k};
    alloc_ms = t.time(fa, k, aa, s.get());
    const unsigned nulls = count_null(m, s, ptrs, k, scratch);
    fail.add(nulls != 0, "CUDA malloc " + size_name(bytes) + " x " + std::to_string(k) + ": " +
                             std::to_string(nulls) + " nulls");
    void* af[] = {&pp, &k};
    free_ms = t.time(ff, k, af, s.get());
  };
  unsigned k = std::min(n, 4096u);
  double a0 = 0, f0 = 0;
  once(k, a0, f0, 1);
  const double rate = k / (std::max(a0, f0) * 1e-3);
  while (k < n && 2.0 * k / rate * 1e3 <= c.cuda_budget_ms) k *= 2;
  k = std::min(k, n);
  if (k < n && n / rate * 1e3 <= c.cuda_budget_ms) k = n;
  Point pt;
  pt.bytes = bytes;
  pt.threads = k;
  for (int r = 0; r < c.cuda_reps; ++r) {
    double a = 0, f = 0;
    once(k, a, f, 77u + static_cast<unsigned>(r));
    pt.alloc_ms.push_back(a);
    pt.free_ms.push_back(f);
  }
  return pt;
}

void write_point(JsonWriter& j, const Point& p) {
  j.begin_object()
      .field("bytes", p.bytes)
      .field("mixed", p.bytes == 0)
      .field("threads", static_cast<std::uint64_t>(p.threads))
      .field("alloc_ms_median", median(p.alloc_ms))
      .field("free_ms_median", median(p.free_ms))
      .field("allocs_per_s", p.alloc_rate())
      .field("frees_per_s", p.free_rate())
      .array("alloc_ms", p.alloc_ms)
      .array("free_ms", p.free_ms)
      .end_object();
}

Config parse(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  Config c;
  c.device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  c.threads = static_cast<unsigned>(f.integer("--threads", c.threads, 1, 1 << 24));
  c.reps = static_cast<int>(f.integer("--reps", c.reps, 1, 10000));
  c.cuda_reps = static_cast<int>(f.integer("--cuda-reps", c.cuda_reps, 1, 10000));
  c.cuda_budget_ms = static_cast<double>(f.integer("--cuda-budget-ms", 400, 1, 1000000));
  c.pool_bytes = static_cast<std::uint64_t>(f.integer("--pool-mib", 8192, 64, 1 << 20)) << 20;
  c.arenas_per_sm = static_cast<unsigned>(f.integer("--arenas-per-sm", c.arenas_per_sm, 1, 16));
  c.sweep = f.list("--sweep", c.sweep, 1, 16);
  c.frag_rounds = static_cast<int>(f.integer("--frag-rounds", c.frag_rounds, 1, 10000));
  c.json = f.text("--json", c.json);
  f.finish();
  return c;
}

int run(int argc, char** argv) {
  const Config c = parse(argc, argv);
  DeviceContext dev(c.device);
  // CUDA's malloc heap: a per-context limit, set before any kernel that calls malloc runs.
  BENCH_CU(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, c.pool_bytes));
  Stream s;
  Module m;
  Heap h(m, s, c.pool_bytes);
  const unsigned arenas = static_cast<unsigned>(dev.sm_count) * c.arenas_per_sm;
  Failures fail;
  std::printf("bench_alloc on %s (%d SMs, driver %d, %s)\n", dev.name.c_str(), dev.sm_count, dev.driver_version,
              gpuos_build_info());
  std::printf("gpuos heap: %llu MiB pool, %u arenas (%u per SM), warp-aggregated; CUDA malloc heap limit %llu MiB\n",
              static_cast<unsigned long long>(c.pool_bytes >> 20), arenas, c.arenas_per_sm,
              static_cast<unsigned long long>(c.pool_bytes >> 20));

  // ---- throughput: sizes and mixed ----
  std::vector<std::uint64_t> sizes{16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 0};
  std::vector<Point> g, cu;
  std::printf("\n%-8s %9s %12s %12s %9s %12s %12s %10s %10s\n", "size", "threads", "gpuos M/s", "free M/s", "cuda thr",
              "cuda M/s", "cuda free", "alloc x", "free x");
  for (std::uint64_t b : sizes) {
    g.push_back(run_gpuos(c, m, s, h, arenas, b, c.threads, c.reps, false, fail));
    cu.push_back(run_cuda(c, m, s, b, c.threads, fail));
    const Point &x = g.back(), &y = cu.back();
    std::printf("%-8s %9u %12.1f %12.1f %9u %12.3f %12.3f %10.0f %10.0f\n", size_name(b).c_str(), x.threads,
                x.alloc_rate() / 1e6, x.free_rate() / 1e6, y.threads, y.alloc_rate() / 1e6, y.free_rate() / 1e6,
                x.alloc_rate() / y.alloc_rate(), x.free_rate() / y.free_rate());
    std::fflush(stdout);
  }
  // Without warp aggregation, for reference.
  std::vector<Point> plain;
  for (std::uint64_t b : {16ull, 4096ull}) plain.push_back(run_gpuos(c, m, s, h, arenas, b, c.threads, 3, true, fail));
  std::printf("without warp aggregation: 16 B %.1f M/s (free %.1f), 4096 B %.1f M/s (free %.1f)\n",
              plain[0].alloc_rate() / 1e6, plain[0].free_rate() / 1e6, plain[1].alloc_rate() / 1e6,
              plain[1].free_rate() / 1e6);

  // ---- arenas per SM ----
  std::vector<std::pair<unsigned, std::vector<Point>>> sweep;
  std::printf("\narenas per SM:");
  for (std::int64_t aps : c.sweep) {
    const unsigned na = static_cast<unsigned>(dev.sm_count * aps);
    std::vector<Point> row;
    for (std::uint64_t b : {16ull, 4096ull, 0ull}) row.push_back(run_gpuos(c, m, s, h, na, b, c.threads, 5, false, fail));
    std::printf("  %lld: 16 B %.0f M/s, 4 KiB %.0f M/s, mixed %.0f M/s;", static_cast<long long>(aps),
                row[0].alloc_rate() / 1e6, row[1].alloc_rate() / 1e6, row[2].alloc_rate() / 1e6);
    std::fflush(stdout);
    sweep.push_back({static_cast<unsigned>(aps), row});
  }
  std::printf("\n");

  // ---- thread scaling at 16 B ----
  std::vector<Point> sg, sc;
  std::printf("\nscaling at 16 B:\n%10s %12s %12s %12s\n", "threads", "gpuos M/s", "cuda M/s", "ratio");
  for (unsigned k = 1; k <= (1u << 20); k *= 2) {
    sg.push_back(run_gpuos(c, m, s, h, arenas, 16, k, 5, false, fail));
    sc.push_back(run_cuda(c, m, s, 16, k, fail));
    std::printf("%10u %12.3f %12.3f %12.1f\n", k, sg.back().alloc_rate() / 1e6, sc.back().alloc_rate() / 1e6,
                sg.back().alloc_rate() / sc.back().alloc_rate());
  }

  // ---- OOM fill ----
  struct Fill {
    std::uint64_t bytes;
    double requested_frac, block_frac, ms;
    std::uint64_t blocks;
  };
  std::vector<Fill> fills;
  {
    const unsigned n = 1u << 18;
    DeviceArray heads(std::uint64_t(n) * 8), acc(16), bad(16);
    for (std::uint64_t b : {0ull, 4096ull, 64ull}) {
      h.init(arenas);
      std::uint64_t z[2] = {0, 0};
      s.upload(acc.ptr(), z, sizeof(z));
      CUdeviceptr cp = h.ctl.ptr(), hp = heads.ptr(), ap = acc.ptr(), bp = bad.ptr();
      unsigned long long bb = b;
      unsigned seed = 99, nn = n;
      void* a[] = {&cp, &bb, &seed, &hp, &ap, &nn};
      Timer t;
      const double ms = t.time(m.get("bench_heap_fill"), n, a, s.get());
      s.download(z, acc.ptr(), sizeof(z));
      const tlsf::Stats st = h.stats();
      fail.add(h.check(arenas) != 0, "OOM fill: invariant check when full");
      const double pool = static_cast<double>(st.pool_bytes);
      fills.push_back({b, z[0] / pool, st.used_bytes / pool, ms, z[1]});
      unsigned zero = 0;
      s.upload(bad.ptr(), &zero, sizeof(zero));
      void* u[] = {&cp, &hp, &nn, &bp};
      launch(m.get("bench_heap_unchain"), n, u, s.get());
      s.download(&zero, bad.ptr(), sizeof(zero));
      fail.add(zero != 0, "OOM fill: frees refused");
      fail.add(h.stats().used_bytes != 0, "OOM fill: memory not all returned");
      fail.add(h.check(arenas) != 0, "OOM fill: invariant check after free");
      std::printf("OOM fill, %s, %u threads: %.2f%% of the pool requested and handed out (%.2f%% in blocks with "
                  "headers), %llu blocks, %.1f ms\n",
                  size_name(b).c_str(), n, 100 * fills.back().requested_frac, 100 * fills.back().block_frac,
                  static_cast<unsigned long long>(z[1]), ms);
    }
  }

  // ---- fragmentation ----
  struct Frag {
    std::uint64_t bytes;
    std::vector<double> rounds;
  };
  std::vector<Frag> frags;
  {
    const unsigned n = 1u << 20;
    DeviceArray slots(std::uint64_t(n) * 8), fsizes(std::uint64_t(n) * 8), high(8ull * (arenas + 1)), acc(16),
        bad(16);
    auto measure = [&]() {
      BENCH_CU(cuMemsetD8Async(high.ptr(), 0, high.bytes(), s.get()));
      BENCH_CU(cuMemsetD8Async(acc.ptr(), 0, acc.bytes(), s.get()));
      CUdeviceptr cp = h.ctl.ptr(), sp = slots.ptr(), zp = fsizes.ptr(), hp = high.ptr(), ap = acc.ptr();
      unsigned nn = n;
      void* a[] = {&cp, &sp, &zp, &nn, &hp, &ap};
      launch(m.get("bench_frag_measure"), n, a, s.get());
      std::vector<std::uint64_t> hi(arenas + 1);
      std::uint64_t req = 0;
      s.download(hi.data(), high.ptr(), hi.size() * 8);
      s.download(&req, acc.ptr(), 8);
      double range = 0;
      for (std::uint64_t v : hi) range += static_cast<double>(v);
      return req ? range / static_cast<double>(req) - 1.0 : 0.0;
    };
    auto alloc_round = [&](std::uint64_t b, unsigned seed) {
      CUdeviceptr cp = h.ctl.ptr(), sp = slots.ptr(), zp = fsizes.ptr();
      unsigned long long bb = b;
      unsigned nn = n;
      void* a[] = {&cp, &bb, &seed, &sp, &zp, &nn};
      launch(m.get("bench_frag_alloc"), n, a, s.get());
    };
    auto free_round = [&](unsigned seed, bool all) {
      CUdeviceptr cp = h.ctl.ptr(), sp = slots.ptr(), zp = fsizes.ptr(), bp = bad.ptr();
      unsigned nn = n, keep = all ? 0u : 1u;
      void* a[] = {&cp, &seed, &keep, &sp, &zp, &nn, &bp};
      launch(m.get("bench_frag_free"), n, a, s.get());
    };
    for (std::uint64_t b : {0ull, 16ull, 64ull, 256ull, 1024ull, 4096ull}) {
      h.init(arenas);
      BENCH_CU(cuMemsetD8Async(slots.ptr(), 0, slots.bytes(), s.get()));
      BENCH_CU(cuMemsetD8Async(bad.ptr(), 0, bad.bytes(), s.get()));
      Frag f{b, {}};
      const int rounds = b == 0 ? c.frag_rounds : 1;
      for (int r = 0; r < rounds; ++r) {
        alloc_round(b, 1000u + static_cast<unsigned>(r));
        f.rounds.push_back(measure());
        free_round(5000u + static_cast<unsigned>(r) * 2u, r + 1 == rounds);
      }
      s.sync();
      unsigned zero = 0;
      s.download(&zero, bad.ptr(), sizeof(zero));
      fail.add(zero != 0, "fragmentation: frees refused");
      fail.add(h.stats().used_bytes != 0, "fragmentation " + size_name(b) + ": memory not all returned");
      fail.add(h.check(arenas) != 0, "fragmentation: invariant check");
      double mean = 0, worst = 0;
      for (double v : f.rounds) {
        mean += v / static_cast<double>(f.rounds.size());
        worst = std::max(worst, v);
      }
      std::printf("fragmentation %s (%u threads, %d round%s): mean %.1f%%, worst %.1f%%\n", size_name(b).c_str(), n,
                  rounds, rounds > 1 ? "s" : "", 100 * mean, 100 * worst);
      frags.push_back(f);
    }
  }

  // ---- host API round trip through the resident kernel ----
  std::vector<double> host_us;
  DeviceInfo info{};
  {
    guarded("gpuos", [&] {
      Runtime rt;
      info = rt.device_info();
      for (int i = 0; i < 2200; ++i) {
        const auto t0 = now_ns();
        void* p = rt.alloc(256);
        rt.free(p);
        if (i >= 200) host_us.push_back((now_ns() - t0) * 1e-3);
      }
      return 0;
    });
  }
  const LatencySummary host = LatencySummary::of(host_us);
  std::printf("\nhost Runtime::alloc + free through the resident kernel: p50 %.2f us, p99 %.2f us\n", host.p50, host.p99);

  // ---- verdicts ----
  double min_ratio = 1e300;
  for (std::size_t i = 0; i < g.size(); ++i) min_ratio = std::min(min_ratio, g[i].alloc_rate() / cu[i].alloc_rate());
  const double r16 = g[0].alloc_rate(), r4k = g[8].alloc_rate();
  double frag_mean = 0;
  for (double v : frags[0].rounds) frag_mean += v / static_cast<double>(frags[0].rounds.size());
  std::printf("\n16 B: %.2f G allocs/s (target >= 1: %s); 4 KiB: %.2f G allocs/s (target >= 0.3: %s)\n", r16 / 1e9,
              verdict(r16 >= 1e9), r4k / 1e9, verdict(r4k >= 0.3e9));
  std::printf("smallest gpuos / CUDA malloc ratio over the sizes: %.0fx (target >= 100x: %s)\n", min_ratio,
              verdict(min_ratio >= 100));
  std::printf("OOM fill, mixed: %.2f%% (target >= 95%%: %s); fragmentation, mixed: mean %.1f%% (target <= 15%%: %s)\n",
              100 * fills[0].requested_frac, verdict(fills[0].requested_frac >= 0.95), 100 * frag_mean,
              verdict(frag_mean <= 0.15));
  std::printf("checks: %s\n", fail.n ? "FAILED" : "all passed");

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_alloc", dev);
  write_grid(j, info);
  j.field("threads", static_cast<std::uint64_t>(c.threads)).field("reps", c.reps).field("cuda_reps", c.cuda_reps);
  j.field("pool_bytes", c.pool_bytes).field("arenas", arenas).field("arenas_per_sm", c.arenas_per_sm);
  j.begin_array("gpuos");
  for (const Point& p : g) write_point(j, p);
  j.end_array().begin_array("cuda_malloc");
  for (const Point& p : cu) write_point(j, p);
  j.end_array().begin_array("gpuos_plain");
  for (const Point& p : plain) write_point(j, p);
  j.end_array().begin_array("arena_sweep");
  for (const auto& [aps, row] : sweep) {
    j.begin_object().field("arenas_per_sm", aps).begin_array("points");
    for (const Point& p : row) write_point(j, p);
    j.end_array().end_object();
  }
  j.end_array().begin_array("scaling_gpuos");
  for (const Point& p : sg) write_point(j, p);
  j.end_array().begin_array("scaling_cuda_malloc");
  for (const Point& p : sc) write_point(j, p);
  j.end_array().begin_array("oom_fill");
  for (const Fill& f : fills)
    j.begin_object()
        .field("bytes", f.bytes)
        .field("mixed", f.bytes == 0)
        .field("requested_fraction", f.requested_frac)
        .field("block_fraction", f.block_frac)
        .field("blocks", f.blocks)
        .field("ms", f.ms)
        .end_object();
  j.end_array().begin_array("fragmentation");
  for (const Frag& f : frags) j.begin_object().field("bytes", f.bytes).field("mixed", f.bytes == 0).array("rounds", f.rounds).end_object();
  j.end_array();
  host.write(j, "host_alloc_free_us", false);
  j.begin_object("summary")
      .field("allocs_per_s_16", r16)
      .field("allocs_per_s_4096", r4k)
      .field("min_ratio_vs_cuda_malloc", min_ratio)
      .field("oom_fill_mixed", fills[0].requested_frac)
      .field("fragmentation_mixed_mean", frag_mean)
      .field("target_16_pass", r16 >= 1e9)
      .field("target_4096_pass", r4k >= 0.3e9)
      .field("target_ratio_pass", min_ratio >= 100)
      .field("target_oom_pass", fills[0].requested_frac >= 0.95)
      .field("target_frag_pass", frag_mean <= 0.15)
      .field("check_failures", fail.n)
      .end_object();
  j.end_object();
  save_json(j, c.json);
  return fail.n == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_alloc", gpuos::bench::run, argc, argv); }
