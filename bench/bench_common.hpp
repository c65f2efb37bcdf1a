// What every benchmark shares: the device context and its description, command-line flags, the JSON
// header that says where and with what a result was measured, the verdicts and the exit status they
// make, the inputs and checks of the add benchmarks, GPU timing.
//
// CUDA resources are the project's one RAII set (tools/cuda_support.hpp) and every driver call goes
// through the library's loader and error path: GPUOS_CU_TRY(drv().cuXxx(...)) throws common::Failure
// naming the call, the driver's error name and file:line; run_main turns it into one line and exit
// status 1. Benchmarks run every method in one process, so ratios compare like with like. Rules they
// follow, because the resident kernel occupies the device while gpuos runs: load modules and measure
// the non-gpuos methods BEFORE booting gpuos, allocate before booting, free only after the runtime is
// destroyed, and while it runs touch device memory only with copies on a support::Stream.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuos/gpuos.hpp"
#include "host/cu_check.hpp"
#include "host/driver.hpp"
#include "tools/cuda_support.hpp"
#include "tools/json_writer.hpp"
#include "tools/latency.hpp"

// The benchmark kernels (bench/bench_kernels.cu), embedded as a cubin at build time (scripts/embed.py).
extern "C" const unsigned char bench_kernels_cubin[];
extern "C" const std::size_t bench_kernels_cubin_size;

namespace gpuos::bench {

using detail::drv;
using support::DeviceBuffer;
using support::Event;
using support::KernelGraph;
using support::KernelLaunch;
using support::MappedHost;
using support::Module;
using support::Stream;
using tools::JsonWriter;
using tools::LatencySummary;
using tools::now_ns;

// ---- Exit statuses ----------------------------------------------------------------------------------
// Every benchmark ends with one of these; bench/run_all.sh and scripts/gpu_run.sh read them.
inline constexpr int kExitMet = 0;        ///< ran, every result checked, every target met
inline constexpr int kExitError = 1;      ///< failed: an error, a wrong result, a hang
inline constexpr int kExitUsage = 2;      ///< bad command line
inline constexpr int kExitNoDevice = 3;   ///< no CUDA driver or device
inline constexpr int kExitMissed = 4;     ///< ran, every result checked, some target missed or not measured

/// The device's primary context (the one gpuos uses), current on the constructing thread, and what the
/// JSON header says about the device.
struct DeviceContext : support::PrimaryContext {
  explicit DeviceContext(int ordinal);

  int ordinal = 0;
  std::string name;
  int driver_version = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
};

/// `--name value` / `--name=value` flags. Unknown flags, a missing value or a bad number are usage
/// errors (exit status 2); --help prints the help and exits 0.
class Flags {
 public:
  Flags(int argc, char** argv, std::string help);
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t lo, std::int64_t hi);
  std::string text(const std::string& name, const std::string& fallback);
  /// Comma-separated integers, e.g. --threads 1,2,4,8.
  std::vector<std::int64_t> list(const std::string& name, const std::vector<std::int64_t>& fallback,
                                 std::int64_t lo, std::int64_t hi);
  /// Fails (exit status 2) on any flag no query asked for.
  void finish() const;

 private:
  [[noreturn]] void usage(const std::string& msg) const;
  std::string prog_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> used_;
};

/// --slice-us N, --park-us N: the runtime's residency (gpuos_options slice_us, park_us), defaulting to
/// the library's: an A/B of what bounded residency costs runs the same benchmark with both 0.
struct Residency {
  std::uint32_t slice_us = 0, park_us = 0;
  Options apply(Options o) const { return o.with_residency(slice_us, park_us); }
};
Residency residency_flags(Flags& f);
/// The help line of residency_flags' flags.
#define GPUOS_BENCH_RESIDENCY_HELP "  --slice-us N, --park-us N  the runtime's residency (gpuos_options; default: the library's)\n"

/// Writes the fields every benchmark result carries: benchmark, device, driver, build info, time.
void write_header(JsonWriter& j, const char* bench, const DeviceContext& d);
/// The gpuos grid of a running runtime, as a JSON object.
void write_grid(JsonWriter& j, const DeviceInfo& info);
/// Writes the document; exits 1 if the file cannot be written.
void save_json(const JsonWriter& j, const std::string& path);

/// Prints "bench: error: <what>" and ends the process at once with status 1, before any destructor
/// runs: for failures while a kernel may still run (a device buffer's free would wait for it forever)
/// or after a fault (the context may be gone; a failing free must not hide the real error).
[[noreturn]] void die(const std::string& what);

/// Runs f(); an exception inside it (a gpuos::Error after a device fault, say) ends the process through
/// die(), with `what` naming the part that failed.
template <class F>
decltype(auto) guarded(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    die(std::string(what) + ": " + e.what());
  }
}

/// Runs fn() and turns an exception into one line on stderr and an exit status: kExitNoDevice when the
/// driver or the device is missing, kExitError otherwise.
int run_main(const char* bench, int (*fn)(int, char**), int argc, char** argv);

// ---- Verdicts ---------------------------------------------------------------------------------------

/// The targets of one run and the checks of its results. Each prints one line as it is decided:
///   TARGET PASS|MISS  <what> = <value> (target <rule>)[; note]
///   CHECK  OK|FAIL    <what>[: detail]
/// and finish() prints the RESULT line and returns the exit status: kExitError if any check failed,
/// else kExitMissed if any target was missed or could not be measured, else kExitMet.
class Verdicts {
 public:
  explicit Verdicts(std::string bench) : bench_(std::move(bench)) {}
  /// A measured target. `value` is printed with `format` (printf, one double).
  void target(const std::string& what, double value, const std::string& rule, bool met,
              const std::string& note = "", const char* format = "%.3f");
  /// A target this run could not measure (a size not run, a phase skipped): a miss.
  void not_measured(const std::string& what, const std::string& rule, const std::string& why);
  void check(const std::string& what, bool ok, const std::string& detail = "");
  bool checks_passed() const;
  bool targets_met() const;
  int exit_status() const;
  /// Prints the RESULT line; returns exit_status().
  int finish() const;
  /// "verdicts": every target and check, and the exit status.
  void write(JsonWriter& j) const;
  /// The end of a run: writes the verdicts into `j`, closes the document (opened with begin_object()),
  /// saves it to `path`, prints the RESULT line and returns the exit status.
  int conclude(JsonWriter& j, const std::string& path) const;

 private:
  struct Target {
    std::string what, rule, note;
    double value;
    bool measured, met;
  };
  struct Check {
    std::string what, detail;
    bool ok;
  };
  std::string bench_;
  std::vector<Target> targets_;
  std::vector<Check> checks_;
};

// ---- Statistics, inputs and checks of the add benchmarks ---------------------------------------------

/// One number printed with a printf format ("%g", "%.1f").
std::string fmt(const char* format, double v);

/// The median (the upper one of an even count); 0 for none.
double median(std::vector<double> v);

/// Inputs of the add benchmarks: small multiples of 1/8 and 1/4, so a + b is exact and checks demand
/// equality.
inline float input_a(std::uint64_t i) { return static_cast<float>(i % 4093) * 0.125f; }
inline float input_b(std::uint64_t i) { return static_cast<float>((i * 7) % 1021) * 0.25f - 64.0f; }

/// Uploads input_a / input_b for elements [0, n) into a and b.
void upload_inputs(const Stream& s, const DeviceBuffer& a, const DeviceBuffer& b, std::uint64_t n);

/// Elements of out[0, n) that are not input_a + input_b (a NaN left by the poison counts).
std::uint64_t count_wrong_sums(const Stream& s, CUdeviceptr out, std::uint64_t n);

/// Sets `count` 32-bit words to a quiet NaN with a host-to-device copy, for use while the resident kernel
/// runs: copies on a support::Stream are known to run beside it (gpu-facts.md §6), a memset is not.
void poison_by_copy(const Stream& s, CUdeviceptr dst, std::size_t count);

// ---- GPU timing --------------------------------------------------------------------------------------

/// GPU time of what a stream runs between start() and stop(), from a pair of events.
class GpuTimer {
 public:
  void start(CUstream s) const;
  void stop(CUstream s) const;
  /// Waits for the stop event; milliseconds from start to stop.
  double ms() const;

 private:
  Event start_, stop_;
};

}  // namespace gpuos::bench
