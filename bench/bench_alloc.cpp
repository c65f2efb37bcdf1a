// bench_alloc: the gpuos heap (the TLSF code behind gpuos::dev::malloc, kernel/tlsf.hpp) against CUDA's
// device malloc, under the protocol of the GPU allocator surveys:
//   - throughput: N threads (default 1,000,000, blocks of 256), one malloc each, sizes 16..4096 B
//     doubling and mixed sizes (uniform in [16, 4096]); alloc and free timed separately with events
//     around each kernel (launch included); allocs/s = N / time. Both allocators run the same N.
//     gpuos: a fresh heap every repetition, laid out as the runtime lays out a heap of --pool-mib
//     (host/heap_client.hpp heap_geometry: a quarter for the large arena, the automatic arena count
//     unless --arenas-per-sm says otherwise). CUDA: its heap size is a context limit that cannot change
//     once a kernel that calls malloc has run, so every point runs in a context of its own (created,
//     limit set to --pool-mib, module loaded, a warm-up launch, the repetitions, destroyed): a fresh heap
//     for every size; median of at least 5 repetitions
//   - the runtime's default heap (gpuos_options_init's size, automatic geometry) at 16 B and 4 KiB
//   - arenas per SM, thread scaling 2^0 .. 2^20 at 16 B (CUDA in a fresh context per point)
//   - OOM fill: every thread allocates until its first null; fraction of the pool handed out
//   - fragmentation: address range in use / bytes requested - 1 (per arena), over rounds of random
//     frees and refills, and for one round of each fixed size
// Every gpuos result is checked: no null, no two blocks overlapping (host sort of all pointers), the
// invariant checker on every arena after the allocations and after the frees, all memory returned; CUDA
// malloc's results are checked for nulls.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <optional>
#include <vector>

#include "bench/bench_common.hpp"
#include "host/heap_client.hpp"  // heap_geometry: the runtime's layout of a heap
#include "kernel/tlsf.hpp"       // the heap's layout sizes

extern "C" const unsigned char bench_alloc_cubin[];

namespace gpuos::bench {
namespace {

namespace tlsf = gpuos::tlsf;
using detail::HeapGeometry;
using detail::heap_geometry;

const char* kHelp =
    "usage: bench_alloc [--device N] [--threads N] [--reps N] [--cuda-reps N] [--pool-mib M]\n"
    "                   [--arenas-per-sm A] [--sweep LIST] [--frag-rounds R] [--json FILE]\n"
    "\n"
    "The gpuos heap (warp-aggregated TLSF, laid out as the runtime lays out a heap of M MiB) against\n"
    "CUDA's device malloc (a context of its own, so a fresh heap of M MiB, for every point): throughput at\n"
    "16..4096 B and mixed sizes (N threads for both, one malloc each, alloc and free timed separately),\n"
    "the runtime's default heap, arenas per SM, thread scaling, OOM fill, fragmentation.\n"
    "Targets: >= 1 G allocs/s at 16 B, >= 0.3 G allocs/s at 4 KiB, >= 100x CUDA malloc at every size,\n"
    ">= 95% of the pool handed out with mixed sizes, mean fragmentation <= 15%.\n"
    "Exit status: 0 every target met, 4 a target missed, 1 error or failed check, 3 no device, 2 usage.\n"
    "CUDA's malloc is slow at some sizes: at N = 1000000 the run takes minutes (--threads lowers N for both).\n"
    "\n"
    "Options:\n"
    "  --device N         CUDA device (default 0)\n"
    "  --threads N        threads of the throughput runs, both allocators (default 1000000)\n"
    "  --reps N           gpuos repetitions per point (default 10; median reported)\n"
    "  --cuda-reps N      CUDA malloc repetitions per point, at least 5 (default 5; median reported)\n"
    "  --pool-mib M       gpuos pool and CUDA malloc heap size (default 8192)\n"
    "  --arenas-per-sm A  small arenas per SM of the gpuos heap (default 0: the runtime's automatic count,\n"
    "                     8 per SM but none below 1 MiB)\n"
    "  --sweep LIST       arenas per SM compared at 16 B, 4 KiB and mixed (default 1,2,4,8,16)\n"
    "  --sizes LIST       request sizes of the throughput table in bytes, 0 = mixed (default\n"
    "                     16,32,64,128,256,512,1024,2048,4096,0). CUDA's malloc at 1000000 threads takes ~90 s a\n"
    "                     size at 512 B and four times as long at each doubling on an H100: run the large sizes\n"
    "                     apart, with a smaller --threads (the same for both allocators)\n"
    "  --frag-rounds R    refill rounds of the fragmentation run (default 20)\n"
    "  --json FILE        result file (default bench_alloc.json)\n";

/// Targets.
constexpr double kMinRate16 = 1e9, kMinRate4k = 0.3e9, kMinOverCuda = 100, kMinOomFill = 0.95, kMaxFrag = 0.15;

struct Config {
  int device = 0;
  unsigned threads = 1000000;
  int reps = 10, cuda_reps = 5;
  std::uint64_t pool_bytes = 8192ull << 20;
  unsigned arenas_per_sm = 0;
  std::vector<std::int64_t> sweep{1, 2, 4, 8, 16};
  std::vector<std::int64_t> sizes{16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 0};
  int frag_rounds = 20;
  std::string json = "bench_alloc.json";
};

/// Launches f over n threads in blocks of 256.
void launch(CUfunction f, unsigned n, void** args, CUstream s) {
  const unsigned blocks = n == 0 ? 1 : (n + 255) / 256;
  KernelLaunch{f, blocks, 256, 0, args}.launch(s);
}

/// Milliseconds of one launch of f over n threads (events around it).
double time_launch(const GpuTimer& t, CUfunction f, unsigned n, void** args, CUstream s) {
  t.start(s);
  launch(f, n, args, s);
  t.stop(s);
  return t.ms();
}

/// A gpuos heap in device memory, laid out afresh by init() (fresh heap per repetition).
struct Heap {
  const Module& m;
  const Stream& s;
  DeviceBuffer ctl;
  DeviceBuffer pool;
  DeviceBuffer status{16};
  Heap(const Module& mod, const Stream& st, std::uint64_t bytes)
      : m(mod), s(st), ctl(tlsf::control_bytes(tlsf::kMaxArenas)), pool(bytes) {}
  void init(const HeapGeometry& g) {
    CUdeviceptr cp = ctl.ptr(), pp = pool.ptr(), st = status.ptr();
    unsigned long long bytes = g.bytes, large = g.large_bytes;
    unsigned arenas = g.arenas, flags = 0;
    void* a1[] = {&cp, &pp, &bytes, &arenas, &large, &flags, &st};
    KernelLaunch{m.get("gpuos_heap_layout"), 1, 1, 0, a1}.launch(s.get());  // one thread lays the heap out
    void* a2[] = {&cp};
    launch(m.get("gpuos_heap_init_arenas"), arenas + 1, a2, s.get());
    unsigned got = ~0u;
    s.download(&got, st, sizeof(got));
    if (got != 0)
      throw std::runtime_error("heap init failed (status " + std::to_string(got) + ", " + std::to_string(arenas) +
                               " arenas)");
  }
  /// Invariant check of every arena; the number of failing arenas (0 = fine).
  unsigned check(const HeapGeometry& g) const {
    unsigned h[2] = {0, ~0u};
    s.upload(status.ptr(), h, sizeof(h));
    CUdeviceptr cp = ctl.ptr(), st = status.ptr();
    void* a[] = {&cp, &st};
    launch(m.get("bench_heap_check"), g.arenas + 1, a, s.get());
    s.download(h, status.ptr(), sizeof(h));
    if (h[0]) std::fprintf(stderr, "bench_alloc: invariant check failed in %u arenas (first: %u)\n", h[0], h[1]);
    return h[0];
  }
  tlsf::Stats stats() const {
    DeviceBuffer out(sizeof(tlsf::Stats));
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

unsigned count_null(const Module& m, const Stream& s, const DeviceBuffer& ptrs, unsigned n,
                    const DeviceBuffer& scratch) {
  unsigned z = 0;
  s.upload(scratch.ptr(), &z, sizeof(z));
  CUdeviceptr p = ptrs.ptr(), sp = scratch.ptr();
  void* a[] = {&p, &n, &sp};
  launch(m.get("bench_count_null"), n, a, s.get());
  s.download(&z, scratch.ptr(), sizeof(z));
  return z;
}

/// No two of the n blocks overlap: sorted by address, each block ends before the next begins.
bool disjoint(const Stream& s, const DeviceBuffer& ptrs, const DeviceBuffer* sizes, std::uint64_t fixed, unsigned n) {
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

/// gpuos: `reps` repetitions of alloc then free over n threads, a fresh heap of geometry `geo` each; the
/// first is checked.
Point run_gpuos(const Module& m, const Stream& s, Heap& h, const HeapGeometry& geo, std::uint64_t bytes, unsigned n,
                int reps, bool plain, Failures& fail) {
  DeviceBuffer ptrs(std::uint64_t(n) * 8), sizes(std::uint64_t(n) * 8), scratch(16);
  const GpuTimer t;
  Point pt;
  pt.bytes = bytes;
  pt.threads = n;
  CUfunction fa = m.get(plain ? "bench_heap_alloc_plain" : "bench_heap_alloc");
  CUfunction ff = m.get(plain ? "bench_heap_free_plain" : "bench_heap_free");
  for (int r = 0; r < reps; ++r) {
    h.init(geo);
    CUdeviceptr cp = h.ctl.ptr(), pp = ptrs.ptr(), zp = sizes.ptr(), bp = scratch.ptr();
    unsigned long long b = bytes;
    unsigned seed = 1234u + static_cast<unsigned>(r);
    void* aa[] = {&cp, &b, &seed, &pp, &zp, &n};
    void* ap[] = {&cp, &b, &pp, &n};
    pt.alloc_ms.push_back(time_launch(t, fa, n, plain ? ap : aa, s.get()));
    const std::string what = "gpuos " + size_name(bytes) + " x " + std::to_string(n) + (plain ? " (plain)" : "");
    if (r == 0) {
      fail.add(count_null(m, s, ptrs, n, scratch) != 0, what + ": null returned");
      fail.add(!disjoint(s, ptrs, bytes ? nullptr : &sizes, bytes, n), what + ": blocks overlap");
      fail.add(h.check(geo) != 0, what + ": invariant check after alloc");
    }
    unsigned z = 0;
    s.upload(scratch.ptr(), &z, sizeof(z));
    void* af[] = {&cp, &pp, &n, &bp};
    pt.free_ms.push_back(time_launch(t, ff, n, af, s.get()));
    if (r == 0) {
      s.download(&z, scratch.ptr(), sizeof(z));
      fail.add(z != 0, what + ": free refused");
      fail.add(h.check(geo) != 0, what + ": invariant check after free");
      const tlsf::Stats st = h.stats();
      fail.add(st.used_bytes != 0 || st.allocs != n || st.frees != n, what + ": memory not all returned");
    }
  }
  return pt;
}

/// CUDA's device malloc over n threads, one malloc each, in a context of its own whose heap limit is set
/// before any kernel runs in it: a fresh heap of c.pool_bytes for this point. A one-block warm-up first
/// (the driver sets the heap up at the first launch that uses it), then c.cuda_reps repetitions.
Point run_cuda(const Config& c, CUdevice dev, std::uint64_t bytes, unsigned n, Failures& fail) {
  const support::OwnContext own(dev);  // everything below is made in it and destroyed before it
  GPUOS_CU_TRY(drv().cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, c.pool_bytes));
  const Module m(bench_alloc_cubin);
  const Stream s;
  const DeviceBuffer ptrs(std::uint64_t(n) * 8), scratch(16);
  const GpuTimer t;
  CUfunction fa = m.get("bench_cuda_alloc"), ff = m.get("bench_cuda_free");
  auto once = [&](unsigned k, double& alloc_ms, double& free_ms, unsigned seed) {
    CUdeviceptr pp = ptrs.ptr();
    unsigned long long b = bytes;
    void* aa[] = {&b, &seed, &pp, &k};
    alloc_ms = time_launch(t, fa, k, aa, s.get());
    const unsigned nulls = count_null(m, s, ptrs, k, scratch);
    fail.add(nulls != 0, "CUDA malloc " + size_name(bytes) + " x " + std::to_string(k) + ": " +
                             std::to_string(nulls) + " nulls");
    void* af[] = {&pp, &k};
    free_ms = time_launch(t, ff, k, af, s.get());
  };
  double a0 = 0, f0 = 0;
  once(std::min(n, 256u), a0, f0, 1);
  Point pt;
  pt.bytes = bytes;
  pt.threads = n;
  for (int r = 0; r < c.cuda_reps; ++r) {
    double a = 0, f = 0;
    once(n, a, f, 77u + static_cast<unsigned>(r));
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
  c.cuda_reps = static_cast<int>(f.integer("--cuda-reps", c.cuda_reps, 5, 10000));
  c.pool_bytes = static_cast<std::uint64_t>(f.integer("--pool-mib", 8192, 64, 1 << 20)) << 20;
  c.arenas_per_sm = static_cast<unsigned>(f.integer("--arenas-per-sm", c.arenas_per_sm, 0, 16));
  c.sweep = f.list("--sweep", c.sweep, 1, 16);
  c.sizes = f.list("--sizes", c.sizes, 0, 1 << 20);
  c.frag_rounds = static_cast<int>(f.integer("--frag-rounds", c.frag_rounds, 1, 10000));
  c.json = f.text("--json", c.json);
  f.finish();
  return c;
}

int run(int argc, char** argv) {
  const Config c = parse(argc, argv);
  DeviceContext dev(c.device);
  const auto sms = static_cast<std::uint32_t>(dev.sm_count);
  const Stream s;
  const Module m(bench_alloc_cubin);
  Heap h(m, s, c.pool_bytes);
  // The heap the runtime would lay out for this pool (--arenas-per-sm 0: its automatic arena count).
  const HeapGeometry geo = heap_geometry(c.pool_bytes, c.arenas_per_sm * sms, sms);
  Failures fail;
  std::printf("bench_alloc on %s (%d SMs, driver %d, %s)\n", dev.name.c_str(), dev.sm_count, dev.driver_version,
              gpuos_build_info());
  std::printf("gpuos heap: %llu MiB pool laid out as the runtime does: %u small arenas (%.2f per SM, %s), a large "
              "arena of %llu MiB; warp-aggregated\n",
              static_cast<unsigned long long>(geo.bytes >> 20), geo.arenas, static_cast<double>(geo.arenas) / sms,
              c.arenas_per_sm ? "--arenas-per-sm" : "the runtime's automatic count",
              static_cast<unsigned long long>(geo.large_bytes >> 20));
  std::printf("CUDA malloc: heap limit %llu MiB in a context of its own for every point, %u threads, median of %d\n",
              static_cast<unsigned long long>(c.pool_bytes >> 20), c.threads, c.cuda_reps);

  // ---- throughput: sizes and mixed ----
  std::vector<std::uint64_t> sizes(c.sizes.begin(), c.sizes.end());
  std::vector<Point> g, cu;
  std::printf("\n%-8s %9s %12s %12s %12s %12s %10s %10s %8s\n", "size", "threads", "gpuos M/s", "free M/s", "cuda M/s",
              "cuda free", "alloc x", "free x", "cuda s");
  for (std::uint64_t b : sizes) {
    g.push_back(run_gpuos(m, s, h, geo, b, c.threads, c.reps, false, fail));
    const std::int64_t t0 = now_ns();
    cu.push_back(run_cuda(c, dev.device(), b, c.threads, fail));
    const Point &x = g.back(), &y = cu.back();
    std::printf("%-8s %9u %12.1f %12.1f %12.3f %12.3f %10.0f %10.0f %8.1f\n", size_name(b).c_str(), x.threads,
                x.alloc_rate() / 1e6, x.free_rate() / 1e6, y.alloc_rate() / 1e6, y.free_rate() / 1e6,
                x.alloc_rate() / y.alloc_rate(), x.free_rate() / y.free_rate(),
                static_cast<double>(now_ns() - t0) * 1e-9);
  }
  // Without warp aggregation, for reference.
  std::vector<Point> plain;
  for (std::uint64_t b : {16ull, 4096ull}) plain.push_back(run_gpuos(m, s, h, geo, b, c.threads, 3, true, fail));
  std::printf("without warp aggregation: 16 B %.1f M/s (free %.1f), 4096 B %.1f M/s (free %.1f)\n",
              plain[0].alloc_rate() / 1e6, plain[0].free_rate() / 1e6, plain[1].alloc_rate() / 1e6,
              plain[1].free_rate() / 1e6);

  // ---- the runtime's default heap: its size and automatic layout, what `Runtime rt;` gets ----
  // As many threads as fill at most half of its small arenas (a block is the request + a 16-byte tag).
  const HeapGeometry def = heap_geometry(Options().heap_bytes, 0, sms);
  std::vector<Point> defaults;
  {
    Heap hd(m, s, def.bytes);
    for (std::uint64_t b : {16ull, 4096ull}) {
      const std::uint64_t fit = (def.bytes - def.large_bytes) / 2 / (b + 16);
      defaults.push_back(run_gpuos(m, s, hd, def, b, static_cast<unsigned>(std::min<std::uint64_t>(c.threads, fit)),
                                   c.reps, false, fail));
    }
  }
  std::printf("the runtime's default heap (%llu MiB: %u small arenas, %.2f per SM, and a %llu MiB large arena): "
              "16 B %.1f M/s (%u threads), 4 KiB %.1f M/s (%u threads)\n",
              static_cast<unsigned long long>(def.bytes >> 20), def.arenas, static_cast<double>(def.arenas) / sms,
              static_cast<unsigned long long>(def.large_bytes >> 20), defaults[0].alloc_rate() / 1e6,
              defaults[0].threads, defaults[1].alloc_rate() / 1e6, defaults[1].threads);

  // ---- arenas per SM ----
  std::vector<std::pair<unsigned, std::vector<Point>>> sweep;
  std::printf("\narenas per SM:");
  for (std::int64_t aps : c.sweep) {
    const HeapGeometry ga = heap_geometry(c.pool_bytes, static_cast<std::uint32_t>(aps) * sms, sms);
    std::vector<Point> row;
    for (std::uint64_t b : {16ull, 4096ull, 0ull}) row.push_back(run_gpuos(m, s, h, ga, b, c.threads, 5, false, fail));
    std::printf("  %lld: 16 B %.0f M/s, 4 KiB %.0f M/s, mixed %.0f M/s;", static_cast<long long>(aps),
                row[0].alloc_rate() / 1e6, row[1].alloc_rate() / 1e6, row[2].alloc_rate() / 1e6);
    sweep.push_back({static_cast<unsigned>(aps), row});
  }
  std::printf("\n");

  // ---- thread scaling at 16 B ----
  std::vector<Point> sg, sc;
  std::printf("\nscaling at 16 B:\n%10s %12s %12s %12s\n", "threads", "gpuos M/s", "cuda M/s", "ratio");
  for (unsigned k = 1; k <= (1u << 20); k *= 2) {
    sg.push_back(run_gpuos(m, s, h, geo, 16, k, 5, false, fail));
    sc.push_back(run_cuda(c, dev.device(), 16, k, fail));
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
    DeviceBuffer heads(std::uint64_t(n) * 8), acc(16), bad(16);
    const GpuTimer t;
    for (std::uint64_t b : {0ull, 4096ull, 64ull}) {
      h.init(geo);
      std::uint64_t z[2] = {0, 0};
      s.upload(acc.ptr(), z, sizeof(z));
      CUdeviceptr cp = h.ctl.ptr(), hp = heads.ptr(), ap = acc.ptr(), bp = bad.ptr();
      unsigned long long bb = b;
      unsigned seed = 99, nn = n;
      void* a[] = {&cp, &bb, &seed, &hp, &ap, &nn};
      const double ms = time_launch(t, m.get("bench_heap_fill"), n, a, s.get());
      s.download(z, acc.ptr(), sizeof(z));
      const tlsf::Stats st = h.stats();
      fail.add(h.check(geo) != 0, "OOM fill: invariant check when full");
      const double pool = static_cast<double>(st.pool_bytes);
      fills.push_back({b, z[0] / pool, st.used_bytes / pool, ms, z[1]});
      unsigned zero = 0;
      s.upload(bad.ptr(), &zero, sizeof(zero));
      void* u[] = {&cp, &hp, &nn, &bp};
      launch(m.get("bench_heap_unchain"), n, u, s.get());
      s.download(&zero, bad.ptr(), sizeof(zero));
      fail.add(zero != 0, "OOM fill: frees refused");
      fail.add(h.stats().used_bytes != 0, "OOM fill: memory not all returned");
      fail.add(h.check(geo) != 0, "OOM fill: invariant check after free");
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
    DeviceBuffer slots(std::uint64_t(n) * 8), fsizes(std::uint64_t(n) * 8), high(8ull * (geo.arenas + 1)), acc(16),
        bad(16);
    auto measure = [&]() {
      GPUOS_CU_TRY(drv().cuMemsetD8Async(high.ptr(), 0, high.bytes(), s.get()));
      GPUOS_CU_TRY(drv().cuMemsetD8Async(acc.ptr(), 0, acc.bytes(), s.get()));
      CUdeviceptr cp = h.ctl.ptr(), sp = slots.ptr(), zp = fsizes.ptr(), hp = high.ptr(), ap = acc.ptr();
      unsigned nn = n;
      void* a[] = {&cp, &sp, &zp, &nn, &hp, &ap};
      launch(m.get("bench_frag_measure"), n, a, s.get());
      std::vector<std::uint64_t> hi(geo.arenas + 1);
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
      h.init(geo);
      GPUOS_CU_TRY(drv().cuMemsetD8Async(slots.ptr(), 0, slots.bytes(), s.get()));
      GPUOS_CU_TRY(drv().cuMemsetD8Async(bad.ptr(), 0, bad.bytes(), s.get()));
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
      fail.add(h.check(geo) != 0, "fragmentation: invariant check");
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
      Runtime rt(Options().with_device(c.device));
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
  std::printf("\nhost Runtime::alloc + free through the resident kernel: p50 %.2f us, p99 %.2f us\n", host.p50,
              host.p99);

  // ---- verdicts ----
  std::size_t worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (g[i].alloc_rate() / cu[i].alloc_rate() < g[worst].alloc_rate() / cu[worst].alloc_rate()) worst = i;
  const double min_ratio = g[worst].alloc_rate() / cu[worst].alloc_rate();
  // The rate at a size, or nothing when that size was not in --sizes.
  auto rate_at = [&](std::uint64_t bytes) -> std::optional<double> {
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] == bytes) return g[i].alloc_rate();
    return std::nullopt;
  };
  const std::optional<double> r16 = rate_at(16), r4k = rate_at(4096);
  double frag_mean = 0;
  for (double v : frags[0].rounds) frag_mean += v / static_cast<double>(frags[0].rounds.size());
  std::printf("\n");
  Verdicts v("bench_alloc");
  if (r16)
    v.target("gpuos G allocs/s at 16 B", *r16 / 1e9, ">= " + fmt("%g", kMinRate16 / 1e9), *r16 >= kMinRate16, "", "%.3f");
  else
    v.not_measured("gpuos G allocs/s at 16 B", ">= " + fmt("%g", kMinRate16 / 1e9), "16 is not in --sizes");
  if (r4k)
    v.target("gpuos G allocs/s at 4 KiB", *r4k / 1e9, ">= " + fmt("%g", kMinRate4k / 1e9), *r4k >= kMinRate4k, "", "%.3f");
  else
    v.not_measured("gpuos G allocs/s at 4 KiB", ">= " + fmt("%g", kMinRate4k / 1e9), "4096 is not in --sizes");
  v.target("smallest gpuos / CUDA malloc allocs/s over the sizes (" + size_name(g[worst].bytes) + ")", min_ratio,
           ">= " + fmt("%g", kMinOverCuda), min_ratio >= kMinOverCuda, "same thread count, CUDA in a fresh context",
           "%.0f");
  v.target("OOM fill, mixed sizes: fraction of the pool handed out", fills[0].requested_frac,
           ">= " + fmt("%g", kMinOomFill), fills[0].requested_frac >= kMinOomFill, "", "%.4f");
  v.target("fragmentation, mixed sizes: mean over the rounds", frag_mean, "<= " + fmt("%g", kMaxFrag),
           frag_mean <= kMaxFrag, "", "%.4f");
  v.check("every allocator result (nulls, overlaps, invariants, memory returned)", fail.n == 0,
          std::to_string(fail.n) + " failed (see the CHECK FAILED lines above)");

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_alloc", dev);
  write_grid(j, info);
  j.field("threads", static_cast<std::uint64_t>(c.threads)).field("reps", c.reps).field("cuda_reps", c.cuda_reps);
  j.field("pool_bytes", geo.bytes).field("arenas", geo.arenas).field("large_arena_bytes", geo.large_bytes);
  j.field("arenas_per_sm", static_cast<double>(geo.arenas) / sms).field("arenas_automatic", c.arenas_per_sm == 0);
  j.field("cuda_fresh_context_per_point", true);
  j.begin_array("gpuos");
  for (const Point& p : g) write_point(j, p);
  j.end_array().begin_array("cuda_malloc");
  for (const Point& p : cu) write_point(j, p);
  j.end_array().begin_array("gpuos_plain");
  for (const Point& p : plain) write_point(j, p);
  j.end_array().begin_object("runtime_default_heap");
  j.field("pool_bytes", def.bytes).field("arenas", def.arenas).field("large_arena_bytes", def.large_bytes);
  j.begin_array("points");
  for (const Point& p : defaults) write_point(j, p);
  j.end_array().end_object().begin_array("arena_sweep");
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
  for (const Frag& f : frags)
    j.begin_object().field("bytes", f.bytes).field("mixed", f.bytes == 0).array("rounds", f.rounds).end_object();
  j.end_array();
  host.write(j, "host_alloc_free_us", false);
  j.begin_object("summary")
      .field("allocs_per_s_16", r16.value_or(0.0))
      .field("allocs_per_s_4096", r4k.value_or(0.0))
      .field("min_ratio_vs_cuda_malloc", min_ratio)
      .field("oom_fill_mixed", fills[0].requested_frac)
      .field("fragmentation_mixed_mean", frag_mean)
      .field("min_ratio_size", size_name(g[worst].bytes))
      .field("target_16_pass", r16 && *r16 >= kMinRate16)
      .field("target_4096_pass", r4k && *r4k >= kMinRate4k)
      .field("target_ratio_pass", min_ratio >= kMinOverCuda)
      .field("target_oom_pass", fills[0].requested_frac >= kMinOomFill)
      .field("target_frag_pass", frag_mean <= kMaxFrag)
      .field("check_failures", fail.n)
      .end_object();
  return v.conclude(j, c.json);
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_alloc", gpuos::bench::run, argc, argv); }
