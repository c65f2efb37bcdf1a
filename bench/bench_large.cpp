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
// The verdict is at the target's size, 64M floats, whatever sizes ran: median GB/s over the
// repetitions, gpuos / direct (target >= 0.9); a run without that size misses it as "not measured".
// Every method's output is poisoned before its runs at a size and checked right after them, before the
// next method (a diagnostic kernel included) writes the same buffer.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpuos/limits.h"  // GPUOS_BLOCK_THREADS: the block size the tile functions are written for

#include "bench/bench_common.hpp"

namespace gpuos::bench {
namespace {

/// The target: at this many floats gpuos moves at least kMinRatio of the direct kernel's GB/s.
constexpr std::uint64_t kTargetN = 67108864;
constexpr double kMinRatio = 0.9;

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
    "Every method's output is poisoned before its runs at each n and checked against a + b right after.\n"
    "Target: gpuos median GB/s >= 0.9 x direct median GB/s at n = 67108864 (64M), whatever LIST holds; a\n"
    "LIST without it misses the target as not measured.\n"
    "Exit status: 0 target met, 4 target missed or not measured, 1 error or wrong result, 3 no device, 2 usage.\n"
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

double gbps(std::uint64_t n, double us) { return 12.0 * static_cast<double>(n) / (us * 1e-6) / 1e9; }

/// The diagnostic persistent grids (bench_persistent_add): mode, whether the shared-memory carve-out is
/// set to the largest L1, and the JSON key of their GB/s.
struct PersistentVariant {
  unsigned mode;
  bool max_l1;
  const char* key;
};
constexpr PersistentVariant kPersistent[] = {
    {0, false, "persistent_static_inline_gbps"},
    {1, false, "persistent_static_indirect_gbps"},
    {2, false, "persistent_claimed_indirect_gbps"},
    {3, false, "persistent_static_indirect_nobarrier_gbps"},
    {4, false, "persistent_static_inline_barrier_gbps"},
    {5, false, "persistent_range8_barrier_gbps"},
    {6, false, "persistent_range8_gbps"},
    {1, true, "persistent_static_indirect_barrier_maxl1_gbps"},
    {5, true, "persistent_range8_barrier_maxl1_gbps"},
};
constexpr std::size_t kVariants = std::size(kPersistent);

/// Timings (us) of one size, and the wrong elements each method left (checked right after its runs).
struct SizeResult {
  std::uint64_t n = 0;
  std::vector<double> direct_event_us, direct_wall_us, gpuos_us;
  std::vector<double> direct_capped_us;  // direct@R (events)
  std::vector<double> persist_us[kVariants];
  std::uint64_t direct_wrong = 0, capped_wrong = 0, gpuos_wrong = 0;
  std::uint64_t persist_wrong[kVariants] = {};
};

/// The device buffers of every method: inputs, output, the add's scratch word.
struct Buffers {
  explicit Buffers(std::uint64_t n) : a(n * 4), b(n * 4), out(n * 4), scratch(sizeof(double)) {}
  DeviceBuffer a, b, out, scratch;
  gpuos_binary_args args(std::uint64_t n) const {
    return gpuos_binary_args{out.as<float>(), a.as<const float>(), b.as<const float>(), n};
  }
};

// ---- Direct kernel ----------------------------------------------------------------------------------

/// Dynamic shared memory that holds bench_direct_add to at most `per_sm` blocks per SM (0: none found
/// within the 48 KiB a kernel may ask for without opting in).
unsigned smem_for_blocks_per_sm(CUfunction fn, int per_sm) {
  for (unsigned smem = 0; smem <= 48u * 1024u; smem += 1024u) {
    int got = 0;
    GPUOS_CU_TRY(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(&got, fn, GPUOS_BLOCK_THREADS, smem));
    if (got <= per_sm) return got == per_sm ? smem : 0u;
  }
  return 0u;
}

/// The direct kernel at every size, its output checked after each size's runs. `capped_smem` != 0: the
/// direct@R variant (events only, into direct_capped_us).
void measure_direct(const Config& c, const Module& m, const Stream& s, const Buffers& buf,
                    std::vector<SizeResult>& results, unsigned capped_smem = 0) {
  const GpuTimer timer;
  for (SizeResult& r : results) {
    gpuos_binary_args args = buf.args(r.n);
    CUdeviceptr scratch = buf.scratch.ptr();
    void* params[] = {&args, &scratch};
    const KernelLaunch k{m.get("bench_direct_add"), gpuos_tiles_for(r.n), GPUOS_BLOCK_THREADS, capped_smem, params};
    s.poison(buf.out.ptr(), r.n);
    for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
      const std::int64_t t0 = now_ns();
      timer.start(s.get());
      k.launch(s.get());
      timer.stop(s.get());
      s.sync();
      const std::int64_t t1 = now_ns();
      const double ms = timer.ms();
      if (rep < c.warmup) continue;
      if (capped_smem) {
        r.direct_capped_us.push_back(ms * 1e3);
        continue;
      }
      r.direct_event_us.push_back(ms * 1e3);
      r.direct_wall_us.push_back(static_cast<double>(t1 - t0) * 1e-3);
    }
    (capped_smem ? r.capped_wrong : r.direct_wrong) = count_wrong_sums(s, buf.out.ptr(), r.n);
  }
}

/// The persistent diagnostics (bench_persistent_add): grid = R blocks per SM.
void measure_persistent(const Config& c, const Module& m, const Stream& s, const Buffers& buf, int sms,
                        std::vector<SizeResult>& results) {
  CUfunction fn = m.get("bench_persistent_add");
  DeviceBuffer counter(sizeof(unsigned));
  const GpuTimer timer;
  const unsigned grid = static_cast<unsigned>(sms) * GPUOS_MIN_BLOCKS_PER_SM;
  for (SizeResult& r : results) {
    gpuos_binary_args args = buf.args(r.n);
    unsigned tiles = gpuos_tiles_for(r.n);
    CUdeviceptr cptr = counter.ptr();
    for (std::size_t v = 0; v < kVariants; ++v) {
      unsigned mode = kPersistent[v].mode;
      const int carveout = kPersistent[v].max_l1 ? static_cast<int>(CU_SHAREDMEM_CARVEOUT_MAX_L1) : -1;
      GPUOS_CU_TRY(drv().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, carveout));
      void* params[] = {&args, &tiles, &mode, &cptr};
      const KernelLaunch k{fn, grid, GPUOS_BLOCK_THREADS, 0, params};
      s.poison(buf.out.ptr(), r.n);
      for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
        GPUOS_CU_TRY(drv().cuMemsetD32Async(cptr, 0, 1, s.get()));
        timer.start(s.get());
        k.launch(s.get());
        timer.stop(s.get());
        const double ms = timer.ms();
        if (rep >= c.warmup) r.persist_us[v].push_back(ms * 1e3);
      }
      r.persist_wrong[v] = count_wrong_sums(s, buf.out.ptr(), r.n);
    }
  }
}

// ---- gpuos ------------------------------------------------------------------------------------------

/// One task per repetition at every size; the output poisoned (by copy: the resident kernel runs) before
/// each size's runs and checked right after them.
DeviceInfo measure_gpuos(const Config& c, const Stream& s, const Buffers& buf, std::vector<SizeResult>& results) {
  Options o = Options().with_device(c.device).with_sm_budget(c.sm_budget);
  o.blocks_per_sm = c.blocks_per_sm;
  Runtime rt(o);
  const DeviceInfo info = rt.device_info();
  for (SizeResult& r : results) {
    const gpuos_binary_args args = buf.args(r.n);
    const Task t = ops::add(args.out, args.a, args.b, r.n);
    poison_by_copy(s, buf.out.ptr(), r.n);
    for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
      const std::int64_t t0 = now_ns();
      rt.wait(rt.submit(t));
      const std::int64_t t1 = now_ns();
      if (rep >= c.warmup) r.gpuos_us.push_back(static_cast<double>(t1 - t0) * 1e-3);
    }
    r.gpuos_wrong = count_wrong_sums(s, buf.out.ptr(), r.n);
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

/// "n=...: count" for every size where `wrong` is not zero ("" when none).
template <class F>
std::string wrong_sizes(const std::vector<SizeResult>& results, F wrong) {
  std::string out;
  for (const SizeResult& r : results)
    if (const std::uint64_t w = wrong(r))
      out += (out.empty() ? "" : ", ") + std::to_string(w) + " wrong at n = " + std::to_string(r.n);
  return out;
}

int run(int argc, char** argv) {
  const Config c = parse(argc, argv);
  const auto n_max = static_cast<std::uint64_t>(c.sizes.back());
  DeviceContext dev(c.device);
  Stream s;
  const Buffers buf(n_max);
  upload_inputs(s, buf.a, buf.b, n_max);
  std::printf("bench_large on %s (driver %d, %s), %d reps after %d warm-up\n", dev.name.c_str(),
              dev.driver_version, gpuos_build_info(), c.reps, c.warmup);

  std::vector<SizeResult> results;
  for (std::int64_t n : c.sizes) {
    results.emplace_back();
    results.back().n = static_cast<std::uint64_t>(n);
  }
  unsigned capped_smem = 0;
  {
    const Module m(bench_kernels_cubin);  // loaded and unloaded while no resident kernel runs
    measure_direct(c, m, s, buf, results);
    capped_smem = smem_for_blocks_per_sm(m.get("bench_direct_add"), static_cast<int>(GPUOS_MIN_BLOCKS_PER_SM));
    if (capped_smem) measure_direct(c, m, s, buf, results, capped_smem);
    measure_persistent(c, m, s, buf, dev.sm_count, results);
  }
  const DeviceInfo info = guarded("gpuos", [&] { return measure_gpuos(c, s, buf, results); });

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
  for (const SizeResult& r : results) {
    std::printf("%12llu", static_cast<unsigned long long>(r.n));
    for (std::size_t v = 0; v < kVariants; ++v) std::printf(" %10.1f", gbps(r.n, median(r.persist_us[v])));
    std::printf("\n");
  }

  Verdicts verdicts("bench_large");
  const auto head = std::find_if(results.begin(), results.end(), [](const SizeResult& r) { return r.n == kTargetN; });
  const std::string what = "gpuos / direct median GB/s at n = " + std::to_string(kTargetN);
  const std::string rule = ">= " + fmt("%g", kMinRatio);
  double head_direct = 0, head_gpuos = 0, ratio = 0;
  if (head != results.end()) {
    head_direct = gbps(head->n, median(head->direct_event_us));
    head_gpuos = gbps(head->n, median(head->gpuos_us));
    ratio = head_gpuos / head_direct;
    verdicts.target(what, ratio, rule, ratio >= kMinRatio,
                    "gpuos " + fmt("%.1f", head_gpuos) + " GB/s, direct " + fmt("%.1f", head_direct) + " GB/s");
  } else {
    verdicts.not_measured(what, rule, "--sizes did not include " + std::to_string(kTargetN));
  }
  auto check = [&](const std::string& method, auto wrong) {
    const std::string w = wrong_sizes(results, wrong);
    verdicts.check(method + " output at every size", w.empty(), w);
  };
  check("direct", [](const SizeResult& r) { return r.direct_wrong; });
  if (capped_smem) check(capped_name, [](const SizeResult& r) { return r.capped_wrong; });
  for (std::size_t v = 0; v < kVariants; ++v)
    check(kPersistent[v].key, [v](const SizeResult& r) { return r.persist_wrong[v]; });
  check("gpuos", [](const SizeResult& r) { return r.gpuos_wrong; });

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_large", dev);
  write_grid(j, info);
  j.field("direct_capped_blocks_per_sm", GPUOS_MIN_BLOCKS_PER_SM).field("direct_capped_smem", capped_smem);
  j.field("reps", c.reps).field("warmup", c.warmup).field("sm_budget", c.sm_budget);
  j.field("blocks_per_sm", c.blocks_per_sm).field("bytes_per_elem", 12);
  j.begin_array("sizes");
  for (const SizeResult& r : results) {
    j.begin_object().field("n", r.n).field("tiles", gpuos_tiles_for(r.n));
    LatencySummary::of(r.direct_event_us).write(j, "direct_event_us", false);
    LatencySummary::of(r.direct_wall_us).write(j, "direct_wall_us", false);
    LatencySummary::of(r.gpuos_us).write(j, "gpuos_us", false);
    j.array("direct_event_us_raw", r.direct_event_us).array("gpuos_us_raw", r.gpuos_us);
    if (!r.direct_capped_us.empty())
      j.field("direct_capped_median_gbps", gbps(r.n, median(r.direct_capped_us)))
          .field("direct_capped_wrong_elems", r.capped_wrong);
    for (std::size_t v = 0; v < kVariants; ++v) j.field(kPersistent[v].key, gbps(r.n, median(r.persist_us[v])));
    j.field("direct_median_gbps", gbps(r.n, median(r.direct_event_us)))
        .field("direct_wall_median_gbps", gbps(r.n, median(r.direct_wall_us)))
        .field("gpuos_median_gbps", gbps(r.n, median(r.gpuos_us)))
        .field("gpuos_over_direct", gbps(r.n, median(r.gpuos_us)) / gbps(r.n, median(r.direct_event_us)))
        .field("direct_wrong_elems", r.direct_wrong)
        .field("gpuos_wrong_elems", r.gpuos_wrong)
        .end_object();
  }
  j.end_array();
  // The target's size; its GB/s fields only when it was measured.
  j.begin_object("summary").field("n", kTargetN).field("measured", head != results.end());
  if (head != results.end())
    j.field("direct_median_gbps", head_direct)
        .field("gpuos_median_gbps", head_gpuos)
        .field("gpuos_over_direct", ratio)
        .field("ratio_pass", ratio >= kMinRatio)
        .field("direct_wrong_elems", head->direct_wrong)
        .field("gpuos_wrong_elems", head->gpuos_wrong);
  j.field("target_min_ratio", kMinRatio).end_object();
  return verdicts.conclude(j, c.json);
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_large", gpuos::bench::run, argc, argv); }
