// bench_dispatch: the round trip of ONE task in flight, host -> GPU -> host.
//
//   (a) ping-pong floor: a one-thread kernel polls a word in mapped host memory and echoes it back
//   (b) cuLaunchKernel of an empty kernel + cuStreamSynchronize
//   (c) a 1-node CUDA graph: cuGraphLaunch + cuStreamSynchronize
//   (d) gpuos: submit(ops::nop()) + wait, and submit(ops::add(256 elements)) + wait
//   (e) pacing: gpuos nop when the caller thinks a little between a completion and its next submit,
//       with the front end's post-completion pacing on and off
//
// (a)-(c) run before gpuos boots: the resident kernel occupies the GPU, and (a)'s kernel must have
// exited before it does. Every iteration is timed on the host with a monotonic clock.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include <immintrin.h>

#include "bench/bench_common.hpp"

namespace gpuos::bench {
namespace {

constexpr unsigned kPingStop = 0xffffffffu;  // BENCH_PING_STOP in bench_kernels.cu
constexpr std::uint64_t kAddElems = 256;

const char* kHelp =
    "usage: bench_dispatch [--device N] [--iters N] [--warmup N] [--ladder 0|1] [--think-ns N] [--json FILE]\n"
    "\n"
    "Round trip of one task in flight (p50/p99 over --iters iterations after --warmup):\n"
    "  ping-pong    one GPU thread polls a word in mapped host memory and echoes it (the floor)\n"
    "  launch+sync  cuLaunchKernel of an empty kernel + cuStreamSynchronize\n"
    "  graph+sync   1-node CUDA graph: cuGraphLaunch + cuStreamSynchronize\n"
    "  pp+...       the floor's ladder: the ping-pong plus one piece of the resident kernel's path\n"
    "               (fence.gpu / fence.sys / fence.release.gpu / fence.release.sys before the echo; a 16-byte read; a second line read each\n"
    "               poll; a one-warp poll; the front end's block-wide poll; K staggered reads in flight, into\n"
    "               registers or by cp.async into shared memory, x lanes of 16 bytes; the poll's shape, lanes\n"
    "               x bytes in one warp-wide read; the host writing the ping with a non-temporal store, or a\n"
    "               store and then clflush or cldemote)\n"
    "  gpuos nop    gpuos submit(nop) + wait\n"
    "  gpuos add256 gpuos submit(add of 256 floats) + wait\n"
    "  nop think N  gpuos nop when the caller waits N ns after each completion before submitting, with the\n"
    "               front end's poll pacing on (the default) and off (\"unpaced\"); diagnostic, no target\n"

    "Targets: gpuos nop p50 <= 1.25 x ping-pong p50; launch+sync p50 >= 2 x gpuos nop p50.\n"
    "\n"
    "Options:\n"
    "  --device N   CUDA device (default 0)\n"
    "  --iters N    timed iterations per method (default 20000)\n"
    "  --warmup N   untimed iterations first (default 2000)\n"
    "  --json FILE  result file (default bench_dispatch.json)\n"
    "  --ladder 0   skip the floor's ladder (default 1)\n"
    "  --think-ns N the pacing rows: a closed loop whose caller waits N ns after each completion before\n"
    "               its next submit, with the front end's pacing on and off (default 500; 0: no rows)\n";

struct Config {
  int device = 0;
  int iters = 20000;
  int warmup = 2000;
  std::string json = "bench_dispatch.json";
  bool ladder = true;  // the floor's ladder (--ladder 0: only the floor, launch, graph and gpuos)
  std::int64_t think_ns = 500;  // the pacing rows (--think-ns 0: none)
};

/// Times `warmup + iters` calls of round_trip(i) (i from 1); returns the timed samples in ns.
template <class F>
std::vector<double> time_round_trips(const Config& c, F round_trip) {
  std::vector<double> ns;
  ns.reserve(static_cast<std::size_t>(c.iters));
  for (int i = 1; i <= c.warmup + c.iters; ++i) {
    const std::int64_t t0 = now_ns();
    round_trip(static_cast<unsigned>(i));
    const std::int64_t t1 = now_ns();
    if (i > c.warmup) ns.push_back(static_cast<double>(t1 - t0));
  }
  return ns;
}

// ---- (a) ping-pong ----------------------------------------------------------------------------------

/// How the host writes the ping: a plain store (as the floor and SubmitQueue do); a non-temporal store
/// and a store fence (the line leaves the CPU's caches for memory); a plain store then `clflush`; a plain
/// store then `cldemote` (a hint: the line moves from the core's private caches to the shared one, where
/// the device's read finds it without a snoop of the core; a no-op on CPUs without it); `kLine`: the whole
/// 128-byte line in eight 16-byte stores, the ping in word 0 of each (as a slot is written).
enum class HostWrite { kPlain, kStream, kFlush, kDemote, kLine, kLineDemote };

void write_ping(unsigned* ping, unsigned v, HostWrite how) {
  switch (how) {
    case HostWrite::kPlain:
      std::atomic_ref<unsigned>(*ping).store(v, std::memory_order_release);
      break;
    case HostWrite::kStream:
      _mm_stream_si32(reinterpret_cast<int*>(ping), static_cast<int>(v));
      _mm_sfence();
      break;
    case HostWrite::kFlush:
      std::atomic_ref<unsigned>(*ping).store(v, std::memory_order_release);
      _mm_clflush(ping);
      break;
    case HostWrite::kDemote:
      std::atomic_ref<unsigned>(*ping).store(v, std::memory_order_release);
      asm volatile("cldemote (%0)" ::"r"(ping) : "memory");
      break;
    case HostWrite::kLine:
    case HostWrite::kLineDemote: {
      // Chunks 1..7 first, the ping's chunk last: the device sees a new ping only with the rest in.
      const __m128i x = _mm_set_epi32(0, 0, 0, static_cast<int>(v));
      for (int k = 7; k >= 0; --k) _mm_store_si128(reinterpret_cast<__m128i*>(ping) + k, x);
      if (how == HostWrite::kLineDemote) {
        asm volatile("cldemote (%0)" ::"r"(ping) : "memory");
        asm volatile("cldemote (%0)" ::"r"(ping + 16) : "memory");
      }
      break;
    }
  }
}

/// A ping-pong kernel and how it is launched: bench_ping_pong (the floor; mode 0), bench_ping_ladder (mode),
/// bench_ping_staggered (mode, interval_ns) or bench_ping_shape (lanes, width) (bench_kernels.cu).
struct PingKernel {
  const char* name = "bench_ping_pong";
  unsigned a = 0, b = 0;  // mode / lanes; interval_ns / width
  unsigned threads = 1;
  HostWrite write = HostWrite::kPlain;
};

/// Times the ping-pong of kernel `k`; a bench_ping_staggered kernel that stops echoing gives no samples
/// (its row says n/a) instead of ending the benchmark.
std::vector<double> measure_ping(const Config& c, const BenchModule& m, const Stream& s, const PingKernel& k) {
  const bool staggered = std::string(k.name) == "bench_ping_staggered";
  void* host = nullptr;
  // Ping and pong on separate 128-byte lines, a third line (the ladder's second read) after them.
  BENCH_CU(cuMemHostAlloc(&host, 512, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  std::memset(host, 0, 512);
  auto* ping = static_cast<unsigned*>(host);
  auto* pong = static_cast<unsigned*>(host) + 32;
  *ping = 0;
  *pong = 0;
  CUdeviceptr dping = 0, dpong = 0;
  BENCH_CU(cuMemHostGetDevicePointer(&dping, ping, 0));
  BENCH_CU(cuMemHostGetDevicePointer(&dpong, pong, 0));

  unsigned a = k.a, b = k.b;
  void* params[] = {&dping, &dpong, &a, &b};
  BENCH_CU(cuLaunchKernel(m.get(k.name), 1, 1, 1, k.threads, 1, 1, 0, s.get(), params, nullptr));

  std::atomic_ref<unsigned> ping_ref(*ping), pong_ref(*pong);
  bool lost = false;
  auto samples = time_round_trips(c, [&](unsigned i) {
    if (lost) return;
    write_ping(ping, i, k.write);
    // A lost echo must not hang the benchmark: look at the clock every 64K polls.
    const std::int64_t start = now_ns();
    for (unsigned spins = 1; pong_ref.load(std::memory_order_acquire) != i; ++spins) {
      if (spins % 65536 == 0 && now_ns() - start > 1'000'000'000) {
        std::fprintf(stderr, "bench_dispatch: %s: the ping-pong kernel stopped echoing (iteration %u)\n",
                     staggered ? "warning" : "error", i);
        if (!staggered) std::exit(1);
        lost = true;
        return;
      }
    }
  });
  if (lost) samples.clear();
  ping_ref.store(kPingStop, std::memory_order_release);
  s.sync();  // the ping-pong kernel has exited: the GPU is free for the next methods and gpuos
  BENCH_CU(cuMemFreeHost(host));
  return samples;
}

/// mode 0: bench_ping_pong (the floor); else bench_ping_ladder with that mode (bench_kernels.cu).
/// staggered: bench_ping_staggered with `mode` and `interval_ns`; a kernel that stops echoing then gives
/// no samples (the row says n/a) instead of ending the benchmark.
std::vector<double> measure_ping_pong(const Config& c, const BenchModule& m, const Stream& s, unsigned mode = 0,
                                      bool staggered = false, unsigned interval_ns = 0) {
  PingKernel k;
  k.name = staggered ? "bench_ping_staggered" : mode == 0 ? "bench_ping_pong" : "bench_ping_ladder";
  k.a = mode;
  k.b = interval_ns;
  k.threads = staggered ? 32u : (mode & (4u | 16u)) ? 256u : 1u;
  return measure_ping(c, m, s, k);
}

// ---- (b) launch + sync, (c) graph + sync ------------------------------------------------------------

std::vector<double> measure_launch(const Config& c, const BenchModule& m, const Stream& s) {
  CUfunction empty = m.get("bench_empty");
  return time_round_trips(c, [&](unsigned) {
    BENCH_CU(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s.get(), nullptr, nullptr));
    BENCH_CU(cuStreamSynchronize(s.get()));
  });
}

std::vector<double> measure_graph(const Config& c, const BenchModule& m, const Stream& s) {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUgraphNode node = nullptr;
  BENCH_CU(cuGraphCreate(&graph, 0));
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = m.get("bench_empty");
  p.gridDimX = p.gridDimY = p.gridDimZ = 1;
  p.blockDimX = p.blockDimY = p.blockDimZ = 1;
  BENCH_CU(cuGraphAddKernelNode(&node, graph, nullptr, 0, &p));
  BENCH_CU(cuGraphInstantiate(&exec, graph, 0));
  auto samples = time_round_trips(c, [&](unsigned) {
    BENCH_CU(cuGraphLaunch(exec, s.get()));
    BENCH_CU(cuStreamSynchronize(s.get()));
  });
  BENCH_CU(cuGraphExecDestroy(exec));
  BENCH_CU(cuGraphDestroy(graph));
  return samples;
}

// ---- (d) gpuos --------------------------------------------------------------------------------------

struct GpuosResult {
  std::vector<double> nop, add;
  DeviceInfo info{};
  Stats stats{};
};

GpuosResult measure_gpuos(const Config& c, const DeviceArray& out, const DeviceArray& a, const DeviceArray& b) {
  GpuosResult r;
  Runtime rt(Options().with_device(c.device));
  r.info = rt.device_info();
  r.nop = time_round_trips(c, [&](unsigned) { rt.wait(rt.submit(ops::nop())); });
  // With the front end's flight recorder on (GPUOS_TRACE=1), where the nop round trip goes on the device.
  if (const char* t = std::getenv("GPUOS_TRACE"); t && *t && *t != '0') {
    const std::string d = rt.diagnose();
    for (size_t pos = d.find("front-end timing"); pos != std::string::npos; pos = d.find("front-end timing", pos + 1))
      std::printf("nop, %s\n", d.substr(pos, d.find('\n', pos) - pos).c_str());
  }
  const Task add = ops::add(out.as<float>(), a.as<const float>(), b.as<const float>(), kAddElems);
  r.add = time_round_trips(c, [&](unsigned) { rt.wait(rt.submit(add)); });
  r.stats = rt.stats();
  return r;
}

/// A closed loop whose caller thinks `think_ns` between a completion and its next submit (busy, not
/// timed): the next task lands in the ring a little after the completion, which is when a front end
/// that polls at once comes back empty and the task waits a whole extra round trip. With pacing (the
/// default) the front end learns to wait that little; `pace` is GPUOS_POLL_PACE for this runtime
/// (null: unset, the runtime's default; "off" compares). Only the submit -> wait time is measured.
std::vector<double> measure_think(const Config& c, std::int64_t think_ns, const char* pace) {
  const char* old = std::getenv("GPUOS_POLL_PACE");
  const std::string saved = old ? old : "";
  if (pace) ::setenv("GPUOS_POLL_PACE", pace, 1); else ::unsetenv("GPUOS_POLL_PACE");
  std::vector<double> ns;
  {
    Runtime rt(Options().with_device(c.device));
    if (old) ::setenv("GPUOS_POLL_PACE", saved.c_str(), 1); else ::unsetenv("GPUOS_POLL_PACE");
    ns.reserve(static_cast<std::size_t>(c.iters));
    std::int64_t done = now_ns();
    for (int i = 1; i <= c.warmup + c.iters; ++i) {
      while (now_ns() - done < think_ns) {
      }
      const std::int64_t t0 = now_ns();
      rt.wait(rt.submit(ops::nop()));
      done = now_ns();
      if (i > c.warmup) ns.push_back(static_cast<double>(done - t0));
    }
  }
  return ns;
}

/// The add task ran (many times; once is enough to show the data path works).
bool check_add(const Stream& s, const DeviceArray& out) {
  std::vector<float> got(kAddElems);
  s.download(got.data(), out.ptr(), out.bytes());
  for (std::uint64_t i = 0; i < kAddElems; ++i)
    if (got[i] != static_cast<float>(i) + 0.5f * static_cast<float>(i)) return false;
  return true;
}

// ---- Report -----------------------------------------------------------------------------------------

struct Row {
  const char* name;
  LatencySummary us;
};

LatencySummary to_us(std::vector<double> ns) {
  for (double& v : ns) v *= 1e-3;
  return LatencySummary::of(std::move(ns));
}

int run(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  Config c;
  c.device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  c.iters = static_cast<int>(f.integer("--iters", c.iters, 1, 100000000));
  c.warmup = static_cast<int>(f.integer("--warmup", c.warmup, 0, 100000000));
  c.json = f.text("--json", c.json);
  c.ladder = f.integer("--ladder", 1, 0, 1) != 0;
  c.think_ns = f.integer("--think-ns", c.think_ns, 0, 100000);
  f.finish();

  DeviceContext dev(c.device);
  Stream s;
  DeviceArray a(kAddElems * sizeof(float)), b(kAddElems * sizeof(float)), out(kAddElems * sizeof(float));
  {
    std::vector<float> ha(kAddElems), hb(kAddElems);
    for (std::uint64_t i = 0; i < kAddElems; ++i) {
      ha[i] = static_cast<float>(i);
      hb[i] = 0.5f * static_cast<float>(i);
    }
    s.upload(a.ptr(), ha.data(), a.bytes());
    s.upload(b.ptr(), hb.data(), b.bytes());
    s.poison(out.ptr(), kAddElems);
  }

  std::printf("bench_dispatch on %s (driver %d, %s), %d iterations after %d warm-up\n", dev.name.c_str(),
              dev.driver_version, gpuos_build_info(), c.iters, c.warmup);
  std::vector<Row> rows;
  {
    BenchModule m;  // loaded and unloaded while no resident kernel runs
    rows.push_back({"ping-pong", to_us(measure_ping_pong(c, m, s))});
    rows.push_back({"launch+sync", to_us(measure_launch(c, m, s))});
    rows.push_back({"graph+sync", to_us(measure_graph(c, m, s))});
    // The floor's ladder: what each piece of the resident kernel's path adds to the ping-pong.
    if (c.ladder) {
      rows.push_back({"pp+fence.gpu", to_us(measure_ping_pong(c, m, s, 1))});
      rows.push_back({"pp+fence.sys", to_us(measure_ping_pong(c, m, s, 2))});
      rows.push_back({"pp v4", to_us(measure_ping_pong(c, m, s, 8))});
      rows.push_back({"pp v4+2nd line", to_us(measure_ping_pong(c, m, s, 8 | 32))});
      rows.push_back({"pp warp", to_us(measure_ping_pong(c, m, s, 16))});
      rows.push_back({"pp warp+gpu", to_us(measure_ping_pong(c, m, s, 16 | 1))});
      rows.push_back({"pp block", to_us(measure_ping_pong(c, m, s, 4))});
      rows.push_back({"pp block+2nd", to_us(measure_ping_pong(c, m, s, 4 | 32))});
      rows.push_back({"pp block+gpu", to_us(measure_ping_pong(c, m, s, 4 | 1))});
      rows.push_back({"pp+rel.gpu", to_us(measure_ping_pong(c, m, s, 64))});
      rows.push_back({"pp+rel.sys", to_us(measure_ping_pong(c, m, s, 128))});
      static std::deque<std::string> names;  // Row keeps a const char* (a deque does not move its strings)
      // The poll's shape: lanes x bytes per lane in one warp-wide load; how the host writes the ping.
      struct Shape {
        unsigned lanes, width;
        HostWrite write;
        const char* how;
      };
      for (const Shape& v : {Shape{1, 4, HostWrite::kPlain, ""}, Shape{1, 8, HostWrite::kPlain, ""},
                             Shape{1, 16, HostWrite::kPlain, ""}, Shape{2, 16, HostWrite::kPlain, ""},
                             Shape{8, 4, HostWrite::kPlain, ""}, Shape{4, 16, HostWrite::kPlain, ""},
                             Shape{32, 4, HostWrite::kPlain, ""}, Shape{16, 8, HostWrite::kPlain, ""},
                             Shape{8, 16, HostWrite::kPlain, ""}, Shape{8, 16, HostWrite::kLine, " line"},
                             Shape{8, 16, HostWrite::kLineDemote, " line+demote"},
                             Shape{32, 4, HostWrite::kLine, " line"}, Shape{1, 16, HostWrite::kDemote, " demote"},
                             Shape{1, 16, HostWrite::kStream, " nt"}}) {
        names.push_back("pp shape " + std::to_string(v.lanes) + "x" + std::to_string(v.width) + v.how);
        rows.push_back({names.back().c_str(),
                        to_us(measure_ping(c, m, s, PingKernel{"bench_ping_shape", v.lanes, v.width, 32, v.write}))});
      }
      for (const auto& [name, how] : {std::pair{"pp host nt", HostWrite::kStream},
                                      std::pair{"pp host clflush", HostWrite::kFlush},
                                      std::pair{"pp host cldemote", HostWrite::kDemote}})
        rows.push_back({name, to_us(measure_ping(c, m, s, PingKernel{"bench_ping_pong", 0, 0, 1, how}))});
      // Staggered polls: K reads of the line in flight, issued an interval apart (bench_ping_staggered).
      struct Stag {
        unsigned flags, k, lanes, interval;
      };
      for (const Stag& v : {Stag{0, 4, 1, 300}, Stag{1, 1, 8, 0}, Stag{1, 1, 16, 0}, Stag{1, 4, 8, 300},
                            Stag{3, 4, 8, 300}, Stag{1, 4, 16, 300}}) {
        names.push_back(std::string("pp ") + (v.flags & 1u ? "async" : "regs") + (v.flags & 2u ? "+call" : "") + " K" +
                        std::to_string(v.k) + " x" + std::to_string(v.lanes) +
                        (v.k > 1 ? " @" + std::to_string(v.interval) : std::string()));
        const unsigned mode = v.flags | (v.k << 8) | (v.lanes << 16);
        rows.push_back({names.back().c_str(), to_us(measure_ping_pong(c, m, s, mode, true, v.interval))});
      }
    }
  }
  GpuosResult g = guarded("gpuos", [&] { return measure_gpuos(c, out, a, b); });
  rows.push_back({"gpuos nop", to_us(std::move(g.nop))});
  rows.push_back({"gpuos add256", to_us(std::move(g.add))});
  // Pacing, shown on any machine: the caller thinks before each submit (diagnostic rows, no target).
  if (c.think_ns > 0) {
    static std::string on, off;
    on = "nop think " + std::to_string(c.think_ns) + "ns";
    off = on + " unpaced";
    rows.push_back({on.c_str(), to_us(guarded("gpuos", [&] { return measure_think(c, c.think_ns, nullptr); }))});
    rows.push_back({off.c_str(), to_us(guarded("gpuos", [&] { return measure_think(c, c.think_ns, "off"); }))});
  }

  const bool add_ok = check_add(s, out);

  std::printf("%-24s %10s %10s %10s %10s %10s\n", "method", "p50 us", "p90 us", "p99 us", "p99.9 us", "max us");
  for (const Row& r : rows)
    std::printf("%-24s %10.2f %10.2f %10.2f %10.2f %10.2f\n", r.name, r.us.p50, r.us.p90, r.us.p99, r.us.p999,
                r.us.max);
  auto p50 = [&](const char* name) {
    for (const Row& r : rows)
      if (std::string(name) == r.name) return r.us.p50;
    return 0.0;
  };
  const double ping = p50("ping-pong"), launch = p50("launch+sync"), nop = p50("gpuos nop");
  const double floor_ratio = nop / ping, launch_ratio = launch / nop;
  std::printf("gpuos nop p50 / ping-pong p50   = %.2f (target <= 1.25: %s)\n", floor_ratio,
              verdict(floor_ratio <= 1.25));
  const double demoted = p50("pp host cldemote");  // 0 without the ladder
  if (demoted > 0)
    std::printf("gpuos nop p50 / ping-pong p50 with the host's cldemote = %.2f (diagnostic: a lower floor)\n",
                nop / demoted);
  std::printf("launch+sync p50 / gpuos nop p50 = %.2f (target >= 2: %s)\n", launch_ratio,
              verdict(launch_ratio >= 2.0));
  std::printf("gpuos grid: %d blocks x %d threads; add256 result %s\n", g.info.grid_blocks, g.info.block_threads,
              add_ok ? "correct" : "WRONG");

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_dispatch", dev);
  write_grid(j, g.info);
  j.field("iters", c.iters).field("warmup", c.warmup).field("unit", "us");
  j.begin_object("methods");
  for (const Row& r : rows) r.us.write(j, r.name);
  j.end_object();
  j.begin_object("ratios")
      .field("gpuos_nop_p50_over_ping_pong_p50", floor_ratio)
      .field("target_max_gpuos_over_ping_pong", 1.25)
      .field("gpuos_vs_ping_pong_pass", floor_ratio <= 1.25)
      .field("launch_p50_over_gpuos_nop_p50", launch_ratio)
      .field("target_min_launch_over_gpuos", 2.0)
      .field("launch_vs_gpuos_pass", launch_ratio >= 2.0)
      .field("graph_p50_over_gpuos_nop_p50", p50("graph+sync") / nop)
      .field("gpuos_nop_p50_over_ping_pong_cldemote_p50", demoted > 0 ? nop / demoted : 0.0)
      .end_object();
  j.field("add256_result_ok", add_ok).field("gpuos_tasks_completed", g.stats.completed);
  j.end_object();
  save_json(j, c.json);
  return add_ok ? 0 : 1;
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_dispatch", gpuos::bench::run, argc, argv); }
