// bench_large: bandwidth of one large task, gpuos against the same code launched directly.
//
// out = a + b on n floats (3 x 4 B moved per element). The direct kernel calls the built-in add tile
// function (kernel/builtin_ops.cuh) with one block of 256 threads per tile, the way the resident kernel
// runs it, so the comparison is of scheduling, not of code:
//   direct  grid = gpuos_tiles_for(n) blocks; timed with events around the kernel (and, for reference,
//           on the host from launch to cuStreamSynchronize)
//   gpuos   one task of gpuos_tiles_for(n) tiles; timed on the host from submit to the end of wait
//   direct@R the direct kernel held to the resident kernel's blocks per SM R (dynamic shared memory it
//           does not use limits its occupancy): a diagnostic that separates what occupancy costs from
//           what scheduling costs
// The headline is the largest size: median GB/s over the repetitions, gpuos / direct (target >= 0.9).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpuos/limits.h"  // GPUOS_BLOCK_THREADS: the block size the tile functions are written for

#include "bench/bench_common.hpp"

namespace gpuos::bench {
namespace {

const char* kHelp =
    "usage: bench_large [--device N] [--sizes LIST] [--reps N] [--warmup N] [--sm-budget S] [--blocks-per-sm B] [--json FILE]\n"
    "\n"
    "Add of n floats (GB/s = 12 B x n / time), for each n in LIST:\n"
    "  direct  the built-in add tile function as a plain kernel, one block per tile (events around it)\n"
    "  gpuos   one gpuos add task of gpuos_tiles_for(n) tiles (host time, submit -> wait)\n"
    "  direct@R  the direct kernel at the resident kernel's R blocks per SM (diagnostic)\n"
    "Diagnostics after the table: a persistent grid at the resident kernel's register budget running the\n"
    "same tiles (inlined; through a function pointer, per tile or 8 per call; claimed or static; with the\n"
    "largest L1), which says what the call through the jump table costs.\n"
    "Outputs are checked against a + b for the largest n after each method.\n"
    "Target: gpuos median GB/s >= 0.9 x direct median GB/s at the largest n.\n"
    "\n"
    "Options:\n"
    "  --device N     CUDA device (default 0)\n"
    "  --sizes LIST   element counts, comma-separated (default 1048576,4194304,16777216,67108864)\n"
    "  --reps N       timed repetitions per size and method (default 30, at least 20 recommended)\n"
    "  --warmup N     untimed repetitions first (default 3)\n"
    "  --sm-budget S  gpuos SM budget (default 0 = all SMs)\n"
    "  --blocks-per-sm B  gpuos blocks per SM (default 0 = as many as fit)\n"
    "  --json FILE    result file (default bench_large.json)\n";

struct Config {
  int device = 0;
  std::vector<std::int64_t> sizes{1 << 20, 1 << 22, 1 << 24, 1 << 26};
  int reps = 30;
  int warmup = 3;
  std::uint32_t sm_budget = 0;
  std::uint32_t blocks_per_sm = 0;
  std::string json = "bench_large.json";
};

float input_a(std::uint64_t i) { return static_cast<float>(i % 4093) * 0.125f; }
float input_b(std::uint64_t i) { return static_cast<float>((i * 7) % 1021) * 0.25f - 64.0f; }

double gbps(std::uint64_t n, double us) { return 12.0 * static_cast<double>(n) / (us * 1e-6) / 1e9; }

/// Timings of one size, in microseconds.
struct SizeResult {
  std::uint64_t n = 0;
  std::vector<double> direct_event_us, direct_wall_us, gpuos_us;
  std::vector<double> direct_capped_us;  // direct@R (events)
  std::vector<double> persist_us[9];     // bench_persistent_add modes 0..6; 7, 8: modes 1, 5 with the
                                         // shared-memory carve-out set to the largest L1
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// Elements of out[0, n) that are not a + b (at most the first `n`).
std::uint64_t count_wrong(const Stream& s, const DeviceArray& out, std::uint64_t n) {
  std::vector<float> got(n);
  s.download(got.data(), out.ptr(), n * sizeof(float));
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < n; ++i) wrong += !(got[i] == input_a(i) + input_b(i));
  return wrong;
}

// ---- Direct kernel ----------------------------------------------------------------------------------

/// Dynamic shared memory that holds bench_direct_add to at most `per_sm` blocks per SM (0: none found
/// within the 48 KiB a kernel may ask for without opting in).
unsigned smem_for_blocks_per_sm(CUfunction fn, int per_sm) {
  for (unsigned smem = 0; smem <= 48u * 1024u; smem += 1024u) {
    int got = 0;
    BENCH_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&got, fn, GPUOS_BLOCK_THREADS, smem));
    if (got <= per_sm) return got == per_sm ? smem : 0u;
  }
  return 0u;
}

/// `capped_smem` != 0: the direct@R variant (events only, into direct_capped_us).
void measure_direct(const Config& c, const BenchModule& m, const Stream& s, const DeviceArray& out,
                    const DeviceArray& a, const DeviceArray& b, const DeviceArray& scratch,
                    std::vector<SizeResult>& results, unsigned capped_smem = 0) {
  CUfunction fn = m.get("bench_direct_add");
  CUevent start = nullptr, stop = nullptr;
  BENCH_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  BENCH_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  for (SizeResult& r : results) {
    gpuos_binary_args args{out.as<float>(), a.as<const float>(), b.as<const float>(), r.n};
    CUdeviceptr scratch_ptr = scratch.ptr();
    void* params[] = {&args, &scratch_ptr};
    const unsigned grid = gpuos_tiles_for(r.n);
    for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
      const std::int64_t t0 = now_ns();
      BENCH_CU(cuEventRecord(start, s.get()));
      BENCH_CU(cuLaunchKernel(fn, grid, 1, 1, GPUOS_BLOCK_THREADS, 1, 1, capped_smem, s.get(), params, nullptr));
      BENCH_CU(cuEventRecord(stop, s.get()));
      BENCH_CU(cuStreamSynchronize(s.get()));
      const std::int64_t t1 = now_ns();
      float ms = 0;
      BENCH_CU(cuEventElapsedTime(&ms, start, stop));
      if (rep < c.warmup) continue;
      if (capped_smem) {
        r.direct_capped_us.push_back(static_cast<double>(ms) * 1e3);
        continue;
      }
      r.direct_event_us.push_back(static_cast<double>(ms) * 1e3);
      r.direct_wall_us.push_back(static_cast<double>(t1 - t0) * 1e-3);
    }
  }
  BENCH_CU(cuEventDestroy(start));
  BENCH_CU(cuEventDestroy(stop));
}

/// The persistent diagnostics (bench_kernels.cu, bench_persistent_add): grid = R blocks per SM.
void measure_persistent(const Config& c, const BenchModule& m, const Stream& s, const DeviceArray& out,
                        const DeviceArray& a, const DeviceArray& b, int sms, std::vector<SizeResult>& results) {
  CUfunction fn = m.get("bench_persistent_add");
  DeviceArray counter(sizeof(unsigned));
  CUevent start = nullptr, stop = nullptr;
  BENCH_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  BENCH_CU(cuEventCreate(&stop, CU_EVENT_DEFAULT));
  const unsigned grid = static_cast<unsigned>(sms) * GPUOS_MIN_BLOCKS_PER_SM;
  for (SizeResult& r : results) {
    gpuos_binary_args args{out.as<float>(), a.as<const float>(), b.as<const float>(), r.n};
    unsigned tiles = gpuos_tiles_for(r.n);
    CUdeviceptr cptr = counter.ptr();
    for (unsigned slot = 0; slot < 9; ++slot) {
      unsigned mode = slot < 7 ? slot : (slot == 7 ? 1u : 5u);
      BENCH_CU(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                  slot < 7 ? -1 : static_cast<int>(CU_SHAREDMEM_CARVEOUT_MAX_L1)));
      void* params[] = {&args, &tiles, &mode, &cptr};
      for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
        BENCH_CU(cuMemsetD32Async(cptr, 0, 1, s.get()));
        BENCH_CU(cuEventRecord(start, s.get()));
        BENCH_CU(cuLaunchKernel(fn, grid, 1, 1, GPUOS_BLOCK_THREADS, 1, 1, 0, s.get(), params, nullptr));
        BENCH_CU(cuEventRecord(stop, s.get()));
        BENCH_CU(cuStreamSynchronize(s.get()));
        float ms = 0;
        BENCH_CU(cuEventElapsedTime(&ms, start, stop));
        if (rep >= c.warmup) r.persist_us[slot].push_back(static_cast<double>(ms) * 1e3);
      }
    }
  }
  BENCH_CU(cuEventDestroy(start));
  BENCH_CU(cuEventDestroy(stop));
}

// ---- gpuos ------------------------------------------------------------------------------------------

DeviceInfo measure_gpuos(const Config& c, const DeviceArray& out, const DeviceArray& a, const DeviceArray& b,
                         std::vector<SizeResult>& results) {
  Options o = Options().with_device(c.device).with_sm_budget(c.sm_budget);
  o.blocks_per_sm = c.blocks_per_sm;
  Runtime rt(o);
  const DeviceInfo info = rt.device_info();
  for (SizeResult& r : results) {
    const Task t = ops::add(out.as<float>(), a.as<const float>(), b.as<const float>(), r.n);
    for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
      const std::int64_t t0 = now_ns();
      rt.wait(rt.submit(t));
      const std::int64_t t1 = now_ns();
      if (rep >= c.warmup) r.gpuos_us.push_back(static_cast<double>(t1 - t0) * 1e-3);
    }
  }
  return info;  // the runtime is destroyed here
}

// ---- Report -----------------------------------------------------------------------------------------

Config parse(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  Config c;
  c.device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  c.sizes = f.list("--sizes", c.sizes, 1, std::int64_t{1} << 32);
  c.reps = static_cast<int>(f.integer("--reps", c.reps, 1, 100000));
  c.warmup = static_cast<int>(f.integer("--warmup", c.warmup, 0, 100000));
  c.sm_budget = static_cast<std::uint32_t>(f.integer("--sm-budget", 0, 0, 1 << 20));
  c.blocks_per_sm = static_cast<std::uint32_t>(f.integer("--blocks-per-sm", 0, 0, 64));
  c.json = f.text("--json", c.json);
  f.finish();
  std::sort(c.sizes.begin(), c.sizes.end());
  c.sizes.erase(std::unique(c.sizes.begin(), c.sizes.end()), c.sizes.end());
  return c;
}

int run(int argc, char** argv) {
  const Config c = parse(argc, argv);
  const auto n_max = static_cast<std::uint64_t>(c.sizes.back());
  DeviceContext dev(c.device);
  Stream s;
  DeviceArray a(n_max * 4), b(n_max * 4), out(n_max * 4), scratch(sizeof(double));
  {
    std::vector<float> ha(n_max), hb(n_max);
    for (std::uint64_t i = 0; i < n_max; ++i) {
      ha[i] = input_a(i);
      hb[i] = input_b(i);
    }
    s.upload(a.ptr(), ha.data(), a.bytes());
    s.upload(b.ptr(), hb.data(), b.bytes());
    s.poison(out.ptr(), n_max);
  }
  std::printf("bench_large on %s (driver %d, %s), %d reps after %d warm-up\n", dev.name.c_str(),
              dev.driver_version, gpuos_build_info(), c.reps, c.warmup);

  std::vector<SizeResult> results;
  for (std::int64_t n : c.sizes) results.push_back(SizeResult{static_cast<std::uint64_t>(n), {}, {}, {}, {}, {}});
  unsigned capped_smem = 0;
  {
    BenchModule m;  // loaded and unloaded while no resident kernel runs
    measure_direct(c, m, s, out, a, b, scratch, results);
    capped_smem = smem_for_blocks_per_sm(m.get("bench_direct_add"), static_cast<int>(GPUOS_MIN_BLOCKS_PER_SM));
    if (capped_smem) measure_direct(c, m, s, out, a, b, scratch, results, capped_smem);
    int sms = 0;
    BENCH_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev.dev));
    measure_persistent(c, m, s, out, a, b, sms, results);
  }
  const std::uint64_t direct_wrong = count_wrong(s, out, n_max);
  s.poison(out.ptr(), n_max);
  const DeviceInfo info = guarded("gpuos", [&] { return measure_gpuos(c, out, a, b, results); });
  const std::uint64_t gpuos_wrong = count_wrong(s, out, n_max);

  char capped_name[32];
  std::snprintf(capped_name, sizeof capped_name, "direct@%u GB/s", GPUOS_MIN_BLOCKS_PER_SM);
  std::printf("%12s %8s %14s %14s %16s %12s %14s\n", "n", "tiles", "direct GB/s", "direct(wall)", capped_name,
              "gpuos GB/s", "gpuos/direct");
  for (const SizeResult& r : results) {
    const double d = gbps(r.n, median(r.direct_event_us)), dw = gbps(r.n, median(r.direct_wall_us));
    const double g = gbps(r.n, median(r.gpuos_us));
    const double dc = r.direct_capped_us.empty() ? 0.0 : gbps(r.n, median(r.direct_capped_us));
    std::printf("%12llu %8u %14.1f %14.1f %16.1f %12.1f %14.3f\n", static_cast<unsigned long long>(r.n),
                gpuos_tiles_for(r.n), d, dw, dc, g, g / d);
  }
  std::printf("diagnostic, a persistent grid at the resident kernel's budget (GB/s): static+inline, "
              "static+indirect+barrier, claimed+indirect+barrier, static+indirect, static+inline+barrier, "
              "8-tile range call+barrier, 8-tile range call; max L1: static+indirect+barrier, range+barrier\n");
  for (const SizeResult& r : results)
    std::printf("%12llu %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", static_cast<unsigned long long>(r.n),
                gbps(r.n, median(r.persist_us[0])), gbps(r.n, median(r.persist_us[1])),
                gbps(r.n, median(r.persist_us[2])), gbps(r.n, median(r.persist_us[3])),
                gbps(r.n, median(r.persist_us[4])), gbps(r.n, median(r.persist_us[5])),
                gbps(r.n, median(r.persist_us[6])), gbps(r.n, median(r.persist_us[7])),
                gbps(r.n, median(r.persist_us[8])));
  const SizeResult& head = results.back();
  const double head_direct = gbps(head.n, median(head.direct_event_us));
  const double head_gpuos = gbps(head.n, median(head.gpuos_us));
  const double ratio = head_gpuos / head_direct;
  std::printf("n = %llu: gpuos %.1f GB/s / direct %.1f GB/s = %.3f (target >= 0.9: %s)\n",
              static_cast<unsigned long long>(head.n), head_gpuos, head_direct, ratio, verdict(ratio >= 0.9));
  std::printf("results: direct %s, gpuos %s\n", direct_wrong ? "WRONG" : "correct", gpuos_wrong ? "WRONG" : "correct");

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_large", dev);
  write_grid(j, info);
  j.field("direct_capped_blocks_per_sm", GPUOS_MIN_BLOCKS_PER_SM).field("direct_capped_smem", capped_smem);
  j.field("reps", c.reps).field("warmup", c.warmup).field("sm_budget", c.sm_budget).field("blocks_per_sm", c.blocks_per_sm).field("bytes_per_elem", 12);
  j.begin_array("sizes");
  for (const SizeResult& r : results) {
    j.begin_object().field("n", r.n).field("tiles", gpuos_tiles_for(r.n));
    LatencySummary::of(r.direct_event_us).write(j, "direct_event_us", false);
    LatencySummary::of(r.direct_wall_us).write(j, "direct_wall_us", false);
    LatencySummary::of(r.gpuos_us).write(j, "gpuos_us", false);
    j.array("direct_event_us_raw", r.direct_event_us).array("gpuos_us_raw", r.gpuos_us);
    if (!r.direct_capped_us.empty())
      j.field("direct_capped_median_gbps", gbps(r.n, median(r.direct_capped_us)));
    j.field("persistent_static_inline_gbps", gbps(r.n, median(r.persist_us[0])))
        .field("persistent_static_indirect_gbps", gbps(r.n, median(r.persist_us[1])))
        .field("persistent_claimed_indirect_gbps", gbps(r.n, median(r.persist_us[2])))
        .field("persistent_static_indirect_nobarrier_gbps", gbps(r.n, median(r.persist_us[3])))
        .field("persistent_static_inline_barrier_gbps", gbps(r.n, median(r.persist_us[4])))
        .field("persistent_range8_barrier_gbps", gbps(r.n, median(r.persist_us[5])))
        .field("persistent_range8_gbps", gbps(r.n, median(r.persist_us[6])))
        .field("persistent_static_indirect_barrier_maxl1_gbps", gbps(r.n, median(r.persist_us[7])))
        .field("persistent_range8_barrier_maxl1_gbps", gbps(r.n, median(r.persist_us[8])));
    j.field("direct_median_gbps", gbps(r.n, median(r.direct_event_us)))
        .field("direct_wall_median_gbps", gbps(r.n, median(r.direct_wall_us)))
        .field("gpuos_median_gbps", gbps(r.n, median(r.gpuos_us)))
        .field("gpuos_over_direct", gbps(r.n, median(r.gpuos_us)) / gbps(r.n, median(r.direct_event_us)))
        .end_object();
  }
  j.end_array();
  j.begin_object("summary")
      .field("n", head.n)
      .field("direct_median_gbps", head_direct)
      .field("gpuos_median_gbps", head_gpuos)
      .field("gpuos_over_direct", ratio)
      .field("target_min_ratio", 0.9)
      .field("ratio_pass", ratio >= 0.9)
      .field("direct_wrong_elems", direct_wrong)
      .field("gpuos_wrong_elems", gpuos_wrong)
      .end_object();
  j.end_object();
  save_json(j, c.json);
  return direct_wrong == 0 && gpuos_wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_large", gpuos::bench::run, argc, argv); }
