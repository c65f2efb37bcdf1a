// The `gpuos` command: boots the resident kernel, runs a checked workload, describes the device.
//
//   gpuos run  [--device N] [--sm-budget S] [--tasks N] [--threads T] [--json FILE] [--timeout SEC]
//              [--ops-dir DIR] [--watch SEC]
//   gpuos info [--device N] [--sm-budget S]
//   gpuos compile FILE...            (tools/ops_cmd.cpp)
//   gpuos ops --ops-dir DIR          (tools/ops_cmd.cpp)
//   gpuos config [--markdown]
//
// The binary never links libcuda (the runtime's loader dlopens it), so it starts on any machine
// and reports a missing driver or device with exit status 3. A device fault while `run` serves exits 5,
// the runtime's watchdog giving up (a hung operator) 6: the process's CUDA context is lost, so a
// supervisor restarts the process (kExitCodesHelp).
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gpuos/gpuos.hpp"

#include "common/config.hpp"
#include "common/error.hpp"
#include "tools/cuda_support.hpp"
#include "tools/json_writer.hpp"
#include "tools/latency.hpp"
#include "tools/ops_cmd.hpp"

namespace gpuos::tools {
namespace {

// ---- Exit status and errors -------------------------------------------------------------------------

// 0-3 mean what they mean for the benchmarks (bench/bench_common.hpp), whose 4 is "a target missed":
// the device's failures while serving take 5 and 6, so that no status means two things in this project.
enum Exit : int {
  kExitOk = 0,
  kExitFailed = 1,
  kExitUsage = 2,
  kExitNoDevice = 3,
  kExitDeviceFault = 5,  ///< GPUOS_ERR_DEVICE_FAULT: the GPU faulted; the context is lost
  kExitHung = 6,         ///< GPUOS_ERR_HUNG: the runtime's watchdog gave up on a hung operator
};

/// A command-line mistake: reported with a hint to --help, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* kExitCodesHelp =
    "Exit status:\n"
    "  0  success (run: every result matched the CPU reference)\n"
    "  1  a wrong result, a failed runtime or driver call (other than 5 and 6), or run's --timeout\n"
    "  2  usage error\n"
    "  3  no CUDA driver, or no CUDA device with that index\n"
    "  5  the GPU faulted (GPUOS_ERR_DEVICE_FAULT: a trap, an illegal address, ... in an operator): the\n"
    "     process's CUDA context is lost; a supervisor should restart the process\n"
    "  6  the runtime's watchdog gave up (GPUOS_ERR_HUNG: an operator call ran past its deadline, or a\n"
    "     shutdown could not drain): the kernel was ended with a fault; restart the process\n";

constexpr const char* kTopHelp =
    "usage: gpuos <command> [options]\n"
    "       gpuos --help | --version\n"
    "\n"
    "A persistent-kernel GPU runtime: one resident kernel takes tasks from a queue in host memory.\n"
    "\n"
    "Commands:\n"
    "  run    boot on a device, run a checked workload through every built-in operator, report\n"
    "  info   describe the device and the grid gpuos would launch on it\n"
    "  compile  check operator sources with NVRTC (no GPU needed), print the diagnostics\n"
    "  ops    print the operator status of `gpuos run --ops-dir DIR`\n"
    "  config print the configuration in effect (GPUOS_* variables), or its documentation\n"
    "\n"
    "`gpuos <command> --help` describes a command.\n"
    "\n";

constexpr const char* kRunHelp =
    "usage: gpuos run [--device N] [--sm-budget S] [--tasks N] [--threads T] [--json FILE]\n"
    "                 [--timeout SEC]\n"
    "\n"
    "Boots the resident kernel and runs a mixed workload through every built-in operator (nop, fill,\n"
    "copy, add, mul, axpy, sum): N tiny tasks of 256 elements, each with its own output slice, and six\n"
    "large tasks of about 16M elements (one per operator with data, the last a sum reduction),\n"
    "submitted in batches from T host threads. Every output element is then compared with a CPU\n"
    "reference. Reports tasks, wall time (first submit to drain), throughput, the submit->wait latency\n"
    "of a sampled subset (1 task in 64, measured under load), per-operator counts from the runtime's\n"
    "statistics, the device and the grid.\n"
    "\n"
    "Options:\n"
    "  --device N      CUDA device ordinal (default 0)\n"
    "  --sm-budget S   SMs the resident kernel may occupy; 0 = all (default 0)\n"
    "  --tasks N       tiny tasks, 1..4194304 (default 200000)\n"
    "  --threads T     submitting host threads, 1..256 (default 4)\n"
    "  --json FILE     also write the report as JSON to FILE\n"
    "  --timeout SEC   give up (exit 1) if the run takes longer, 1..86400 (default 300)\n"
    "  --ops-dir DIR   load every operator source (*.cu) in DIR at boot and watch DIR: a saved file\n"
    "                  loads as a new generation (the old code finishes the tasks it took), a removed\n"
    "                  file retires its operators, a broken file is reported (file:line) and the\n"
    "                  working version keeps serving. The shipped examples (examples/ops: scale, relu,\n"
    "                  saxpby, softmax_row, rmsnorm_row) found there are run and checked against a CPU\n"
    "                  reference after the built-in workload. Status: DIR/.gpuos-status (gpuos ops).\n"
    "  --watch SEC     with --ops-dir: keep serving and reloading for SEC seconds after the workload\n"
    "                  (default 0); a nop task every 200 ms checks that the runtime still serves: a\n"
    "                  fault or a hang ends the run at once (exit 5 or 6)\n"
    "  --help          this text\n"
    "\n";

constexpr const char* kInfoHelp =
    "usage: gpuos info [--device N] [--sm-budget S]\n"
    "\n"
    "Prints the device's name, compute capability, SM count, memory and driver version, the grid the\n"
    "resident kernel would launch with (blocks per SM, blocks, threads per block) and the library's\n"
    "build information. Boots nothing.\n"
    "\n"
    "Options:\n"
    "  --device N      CUDA device ordinal (default 0)\n"
    "  --sm-budget S   SMs the resident kernel may occupy; 0 = all (default 0)\n"
    "  --help          this text\n"
    "\n";

constexpr const char* kConfigHelp =
    "usage: gpuos config [--markdown]\n"
    "\n"
    "Prints every setting gpuos reads from the environment with the value a runtime created now would\n"
    "use and where it comes from (default or environment); a malformed value is an error (exit 2) naming\n"
    "the variable and what it accepts. --markdown prints the configuration's documentation\n"
    "(docs/configuration.md is this output).\n"
    "\n";

/// The exit status of a failed runtime or driver call.
int exit_of(gpuos_status s) {
  switch (s) {
    case GPUOS_ERR_NO_DEVICE:
    case GPUOS_ERR_DRIVER: return kExitNoDevice;
    case GPUOS_ERR_DEVICE_FAULT: return kExitDeviceFault;
    case GPUOS_ERR_HUNG: return kExitHung;
    default: return kExitFailed;
  }
}

/// The one place errors become messages and exit statuses. Exactly one line on stderr (a usage error
/// adds a hint), so scripts can show it as is.
int report_error(std::exception_ptr ep) {
  auto one_line = [](std::string m) {
    std::replace(m.begin(), m.end(), '\n', ' ');
    return m;
  };
  try {
    std::rethrow_exception(ep);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gpuos: error: %s\n(see gpuos --help)\n", one_line(e.what()).c_str());
    return kExitUsage;
  } catch (const Error& e) {
    std::fprintf(stderr, "gpuos: error: %s\n", one_line(e.what()).c_str());
    return exit_of(e.status());
  } catch (const common::Failure& e) {  // a driver call of the tool's own (GPUOS_CU_TRY), the JIT, the watcher
    // A copy after a fault fails with the fault's sticky error: GPUOS_ERR_DEVICE_FAULT, exit 5.
    std::fprintf(stderr, "gpuos: error: %s\n", one_line(e.what()).c_str());
    return exit_of(e.status());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuos: error: %s\n", one_line(e.what()).c_str());
    return kExitFailed;
  } catch (...) {
    std::fprintf(stderr, "gpuos: error: unknown exception\n");
    return kExitFailed;
  }
}

// ---- Command line -----------------------------------------------------------------------------------

/// The arguments after the command name, consumed flag by flag.
class ArgReader {
 public:
  ArgReader(std::string_view command, std::span<char*> args) : command_(command), args_(args) {}

  bool done() const { return pos_ >= args_.size(); }
  std::string_view next() { return args_[pos_++]; }

  /// The value of `flag`, as the next argument or after '=' (--tasks=10).
  std::string_view value(std::string_view flag, std::optional<std::string_view> inline_value) {
    if (inline_value) return *inline_value;
    if (done()) throw UsageError(std::string(flag) + " needs a value");
    return next();
  }

  static std::int64_t integer(std::string_view flag, std::string_view text, std::int64_t lo, std::int64_t hi) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
      throw UsageError(std::string(flag) + ": '" + std::string(text) + "' is not an integer");
    if (v < lo || v > hi)
      throw UsageError(std::string(flag) + ": " + std::to_string(v) + " is outside [" + std::to_string(lo) +
                       ", " + std::to_string(hi) + "]");
    return v;
  }

  std::string_view command() const { return command_; }

 private:
  std::string_view command_;
  std::span<char*> args_;
  std::size_t pos_ = 0;
};

/// Splits "--flag=value" into flag and value.
std::pair<std::string_view, std::optional<std::string_view>> split_flag(std::string_view arg) {
  auto eq = arg.find('=');
  if (arg.starts_with("--") && eq != std::string_view::npos) return {arg.substr(0, eq), arg.substr(eq + 1)};
  return {arg, std::nullopt};
}

struct RunConfig {
  int device = 0;
  std::uint32_t sm_budget = 0;
  std::uint64_t tasks = 200000;
  unsigned threads = 4;
  std::string json;
  unsigned timeout_s = 300;
  std::string ops_dir;
  unsigned watch_s = 0;
};

struct InfoConfig {
  int device = 0;
  std::uint32_t sm_budget = 0;
};

/// Parses options shared by the commands; false if `flag` is not one of them.
bool parse_device_flags(ArgReader& r, std::string_view flag, std::optional<std::string_view> v, int& device,
                        std::uint32_t& sm_budget) {
  if (flag == "--device") {
    device = static_cast<int>(ArgReader::integer(flag, r.value(flag, v), 0, 1023));
  } else if (flag == "--sm-budget") {
    sm_budget = static_cast<std::uint32_t>(ArgReader::integer(flag, r.value(flag, v), 0, 1 << 20));
  } else {
    return false;
  }
  return true;
}

/// nullopt when --help was asked for (the help is printed).
std::optional<RunConfig> parse_run(ArgReader& r) {
  RunConfig c;
  while (!r.done()) {
    auto [flag, v] = split_flag(r.next());
    if (flag == "--help" || flag == "-h") {
      std::fputs(kRunHelp, stdout);
      std::fputs(kExitCodesHelp, stdout);
      return std::nullopt;
    }
    if (parse_device_flags(r, flag, v, c.device, c.sm_budget)) continue;
    if (flag == "--tasks")
      c.tasks = static_cast<std::uint64_t>(ArgReader::integer(flag, r.value(flag, v), 1, 1 << 22));
    else if (flag == "--threads")
      c.threads = static_cast<unsigned>(ArgReader::integer(flag, r.value(flag, v), 1, 256));
    else if (flag == "--json") {
      c.json = std::string(r.value(flag, v));
      if (c.json.empty()) throw UsageError("--json: empty file name");
    }
    else if (flag == "--timeout")
      c.timeout_s = static_cast<unsigned>(ArgReader::integer(flag, r.value(flag, v), 1, 86400));
    else if (flag == "--ops-dir") {
      c.ops_dir = std::string(r.value(flag, v));
      if (c.ops_dir.empty()) throw UsageError("--ops-dir: empty directory name");
    } else if (flag == "--watch")
      c.watch_s = static_cast<unsigned>(ArgReader::integer(flag, r.value(flag, v), 0, 86400));
    else
      throw UsageError("run: unknown option '" + std::string(flag) + "'");
  }
  return c;
}

std::optional<InfoConfig> parse_info(ArgReader& r) {
  InfoConfig c;
  while (!r.done()) {
    auto [flag, v] = split_flag(r.next());
    if (flag == "--help" || flag == "-h") {
      std::fputs(kInfoHelp, stdout);
      std::fputs(kExitCodesHelp, stdout);
      return std::nullopt;
    }
    if (!parse_device_flags(r, flag, v, c.device, c.sm_budget))
      throw UsageError("info: unknown option '" + std::string(flag) + "'");
  }
  return c;
}

// ---- Device description -----------------------------------------------------------------------------

std::string driver_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) + " (" + std::to_string(v) + ")";
}

std::string grid_text(const DeviceInfo& d) {
  return std::to_string(d.grid_blocks) + " blocks x " + std::to_string(d.block_threads) + " threads (" +
         std::to_string(d.blocks_per_sm) + " per SM)";
}

int cmd_info(const InfoConfig& c) {
  Options o;
  o.with_device(c.device).with_sm_budget(c.sm_budget);
  DeviceInfo d = query_device(o);
  std::printf("device        %d: %s\n", d.ordinal, d.name);
  std::printf("compute       %d.%d (sm_%d%d)\n", d.cc_major, d.cc_minor, d.cc_major, d.cc_minor);
  std::printf("SMs           %d\n", d.sm_count);
  std::printf("memory        %.1f GiB (%llu bytes)\n", static_cast<double>(d.total_mem) / (1u << 30),
              static_cast<unsigned long long>(d.total_mem));
  std::printf("driver        CUDA %s\n", driver_version_text(d.driver_version).c_str());
  std::printf("grid          %d blocks/SM, %d blocks, %d threads/block (on %d of %d SMs)\n", d.blocks_per_sm,
              d.grid_blocks, d.block_threads, d.blocks_per_sm > 0 ? d.grid_blocks / d.blocks_per_sm : 0, d.sm_count);
  std::printf("build         %s\n", gpuos_build_info());
  return kExitOk;
}

// ---- The `run` workload -----------------------------------------------------------------------------
//
// Tasks run concurrently and in any order, so no task reads what another writes: inputs A and B are
// read-only, every tiny task owns a 256-element output slice and a sum slot, every large task owns an
// output buffer. Input values are small multiples of 1/8 and 1/4, so every sum, product and
// alpha*x + y is exact in float32 (with or without FMA) and the check demands equality; sums are
// compared with a tolerance far below the contribution of one element.

constexpr std::uint64_t kTinyElems = 256;
// About 16M, deliberately not a multiple of a tile: the last tile of a large task is partial.
constexpr std::uint64_t kLargeElems = (std::uint64_t{16} << 20) + 1000;
constexpr unsigned kSampleEvery = 64;  // one task in 64 is submitted alone and timed submit->wait
constexpr std::size_t kBatch = 64;     // the others go in batches of up to this many
constexpr float kUntouchedSum = -12345.0f;

float input_a(std::uint64_t i) { return static_cast<float>((i * 7) % 2048) * 0.125f - 64.0f; }
float input_b(std::uint64_t i) { return static_cast<float>((i * 13 + 5) % 1024) * 0.25f - 128.0f; }
float initial_y(std::uint64_t i) { return static_cast<float>((i * 11 + 3) % 512) * 0.25f - 64.0f; }
float fill_value(std::uint64_t t) { return static_cast<float>(t % 1024) * 0.5f - 256.0f; }
float alpha_of(std::uint64_t t) {
  constexpr float k[] = {0.5f, -1.5f, 2.0f, 0.25f};
  return k[t % 4];
}

constexpr std::array<std::uint32_t, 7> kTinyCycle = {GPUOS_OP_NOP, GPUOS_OP_FILL, GPUOS_OP_COPY, GPUOS_OP_ADD,
                                                     GPUOS_OP_MUL, GPUOS_OP_AXPY, GPUOS_OP_SUM};
constexpr std::array<std::uint32_t, 6> kLargeOps = {GPUOS_OP_FILL, GPUOS_OP_COPY, GPUOS_OP_ADD,
                                                    GPUOS_OP_MUL,  GPUOS_OP_AXPY, GPUOS_OP_SUM};

std::uint32_t tiny_op(std::uint64_t t) { return kTinyCycle[t % kTinyCycle.size()]; }
/// Where tiny task t reads its inputs: spread over A and B, and misaligned for 3 tasks in 4 so the
/// unvectorized path runs too.
std::uint64_t tiny_input_offset(std::uint64_t t) {
  return (t * kTinyElems) % (kLargeElems - kTinyElems - 4) + t % 4;
}

/// Host copies of what the device holds before the run; the reference is computed from them.
struct HostData {
  std::vector<float> a, b, large_y0, tiny_y0;
};

/// Device buffers. Declared before the runtime so they outlive it (freed after it is destroyed).
struct DeviceData {
  DeviceBuffer a, b;
  std::array<DeviceBuffer, kLargeOps.size() - 1> large_out;  // fill, copy, add, mul, axpy
  DeviceBuffer large_sum;
  DeviceBuffer tiny_out, tiny_sum;
};

HostData make_host_data(std::uint64_t tiny_tasks) {
  HostData h;
  h.a.resize(kLargeElems);
  h.b.resize(kLargeElems);
  h.large_y0.resize(kLargeElems);
  for (std::uint64_t i = 0; i < kLargeElems; ++i) {
    h.a[i] = input_a(i);
    h.b[i] = input_b(i);
    h.large_y0[i] = initial_y(i);
  }
  h.tiny_y0.resize(tiny_tasks * kTinyElems);
  for (std::uint64_t i = 0; i < h.tiny_y0.size(); ++i) h.tiny_y0[i] = initial_y(i + 12345);
  return h;
}

DeviceData make_device_data(const HostData& h, std::uint64_t tiny_tasks, const Stream& s) {
  const std::size_t large_bytes = kLargeElems * sizeof(float);
  DeviceData d;
  d.a = DeviceBuffer(large_bytes);
  d.b = DeviceBuffer(large_bytes);
  for (auto& o : d.large_out) o = DeviceBuffer(large_bytes);
  d.large_sum = DeviceBuffer(sizeof(float));
  d.tiny_out = DeviceBuffer(tiny_tasks * kTinyElems * sizeof(float));
  d.tiny_sum = DeviceBuffer(tiny_tasks * sizeof(float));

  s.upload(d.a.ptr(), h.a.data(), large_bytes);
  s.upload(d.b.ptr(), h.b.data(), large_bytes);
  // Every output starts as y0 (axpy reads it; for the others it shows whether anything was written).
  for (auto& o : d.large_out) s.upload(o.ptr(), h.large_y0.data(), large_bytes);
  s.upload(d.tiny_out.ptr(), h.tiny_y0.data(), d.tiny_out.bytes());
  std::vector<float> sums(tiny_tasks, kUntouchedSum);
  s.upload(d.tiny_sum.ptr(), sums.data(), d.tiny_sum.bytes());
  s.upload(d.large_sum.ptr(), &kUntouchedSum, sizeof(float));
  return d;
}

Task tiny_task(const DeviceData& d, std::uint64_t t) {
  const std::uint64_t in = tiny_input_offset(t);
  float* out = d.tiny_out.as<float>() + t * kTinyElems;
  const float* a = d.a.as<const float>() + in;
  const float* b = d.b.as<const float>() + in;
  switch (tiny_op(t)) {
    case GPUOS_OP_FILL: return ops::fill(out, fill_value(t), kTinyElems);
    case GPUOS_OP_COPY: return ops::copy(out, a, kTinyElems);
    case GPUOS_OP_ADD: return ops::add(out, a, b, kTinyElems);
    case GPUOS_OP_MUL: return ops::mul(out, a, b, kTinyElems);
    case GPUOS_OP_AXPY: return ops::axpy(out, alpha_of(t), a, kTinyElems);
    case GPUOS_OP_SUM: return ops::sum(d.tiny_sum.as<float>() + t, a, kTinyElems);
    default: return ops::nop();
  }
}

constexpr float kLargeFill = 3.25f;
constexpr float kLargeAlpha = -1.5f;

Task large_task(const DeviceData& d, std::size_t j) {
  const float* a = d.a.as<const float>();
  const float* b = d.b.as<const float>();
  switch (kLargeOps[j]) {
    case GPUOS_OP_FILL: return ops::fill(d.large_out[j].as<float>(), kLargeFill, kLargeElems);
    case GPUOS_OP_COPY: return ops::copy(d.large_out[j].as<float>(), a, kLargeElems);
    case GPUOS_OP_ADD: return ops::add(d.large_out[j].as<float>(), a, b, kLargeElems);
    case GPUOS_OP_MUL: return ops::mul(d.large_out[j].as<float>(), a, b, kLargeElems);
    case GPUOS_OP_AXPY: return ops::axpy(d.large_out[j].as<float>(), kLargeAlpha, a, kLargeElems);
    default: return ops::sum(d.large_sum.as<float>(), a, kLargeElems);
  }
}

/// The submission order: tiny tasks in index order with the large ones spread evenly between them.
struct Plan {
  std::vector<Task> tasks;
  std::array<std::uint64_t, GPUOS_BUILTIN_OP_COUNT> per_op{};
};

Plan make_plan(const DeviceData& d, std::uint64_t tiny_tasks) {
  Plan p;
  const std::uint64_t total = tiny_tasks + kLargeOps.size();
  p.tasks.reserve(total);
  std::size_t next_large = 0;
  std::uint64_t next_tiny = 0;
  for (std::uint64_t k = 0; k < total; ++k) {
    // Large task j goes at position (j+1) * total / (L+1).
    bool large = next_large < kLargeOps.size() && k >= (next_large + 1) * total / (kLargeOps.size() + 1);
    if (large || next_tiny == tiny_tasks) {
      p.tasks.push_back(large_task(d, next_large));
      ++p.per_op[kLargeOps[next_large++]];
    } else {
      p.tasks.push_back(tiny_task(d, next_tiny));
      ++p.per_op[tiny_op(next_tiny++)];
    }
  }
  return p;
}

// ---- Submission -------------------------------------------------------------------------------------

struct SubmitResult {
  std::vector<double> latency_ns;
  std::string error;          // empty: every submit and wait succeeded
  Status status = GPUOS_OK;   // the failed call's status (a fault or a hang decides the exit status)
};

/// Submits plan tasks t, t+T, t+2T, ...: batches of kBatch, and every kSampleEvery-th task alone,
/// timed from submit to the end of its wait.
void submit_share(Runtime& rt, const Plan& plan, unsigned t, unsigned threads, std::latch& start,
                  SubmitResult& out) {
  start.arrive_and_wait();
  try {
    std::vector<Task> batch;
    batch.reserve(kBatch);
    auto flush = [&] {
      if (!batch.empty()) rt.submit_batch(batch);
      batch.clear();
    };
    std::uint64_t mine = 0;
    for (std::size_t k = t; k < plan.tasks.size(); k += threads, ++mine) {
      if (mine % kSampleEvery == kSampleEvery - 1) {
        flush();
        std::int64_t t0 = now_ns();
        Ticket tk = rt.submit(plan.tasks[k]);
        rt.wait(tk);
        out.latency_ns.push_back(static_cast<double>(now_ns() - t0));
      } else {
        batch.push_back(plan.tasks[k]);
        if (batch.size() == kBatch) flush();
      }
    }
    flush();
  } catch (const Error& e) {
    out.error = e.what();
    out.status = e.status();
  } catch (const std::exception& e) {
    out.error = e.what();
    out.status = GPUOS_ERR_INTERNAL;
  }
}

// ---- Watchdog ---------------------------------------------------------------------------------------

/// Ends the process with a clear message if the run outlives its time limit: a hang must not look
/// like a slow run to whoever (or whatever script) is waiting for it.
class Watchdog {
 public:
  explicit Watchdog(unsigned seconds) : thread_([this, seconds] { watch(seconds); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void phase(const char* p) { phase_.store(p); }

 private:
  void watch(unsigned seconds) {
    std::unique_lock<std::mutex> l(m_);
    if (cv_.wait_for(l, std::chrono::seconds(seconds), [this] { return done_; })) return;
    std::fprintf(stderr, "gpuos: error: timed out after %u s while %s\n", seconds, phase_.load());
    std::fflush(stderr);
    std::_Exit(kExitFailed);
  }

  std::atomic<const char*> phase_{"starting"};
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// ---- Checking ---------------------------------------------------------------------------------------

/// Which output a mismatch is in, for the report.
struct Where {
  const char* kind;  ///< "tiny" or "large"
  std::uint64_t task;
  const char* part;  ///< "" or what was expected to stay untouched
};

/// Mismatch bookkeeping: counts per operator and the first few cases, for the report.
struct Checker {
  std::array<std::uint64_t, GPUOS_BUILTIN_OP_COUNT> bad_tasks{};
  std::vector<std::string> examples;
  std::uint64_t checked_tasks = 0;

  bool ok() const {
    for (auto b : bad_tasks) if (b) return false;
    return true;
  }
  void bad(std::uint32_t op, const Where& w, std::uint64_t i, double got, double want) {
    if (examples.size() < 8) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s %s task #%llu%s: element %llu is %.9g, expected %.9g", w.kind, gpuos_builtin_op_name(op),
                    static_cast<unsigned long long>(w.task), w.part, static_cast<unsigned long long>(i), got, want);
      examples.emplace_back(buf);
    }
  }
};

/// Compares n outputs with expect(i); returns false (and records the first mismatch) if any differ.
template <class Expect>
bool check_elems(Checker& c, std::uint32_t op, const Where& what, const float* got, std::uint64_t n,
                 Expect expect) {
  for (std::uint64_t i = 0; i < n; ++i) {
    float want = expect(i);
    // Bitwise-equal or equal values: the inputs make every result exact.
    if (!(got[i] == want)) {
      c.bad(op, what, i, got[i], want);
      return false;
    }
  }
  return true;
}

/// A float32 sum of exact multiples of 1/8: the tolerance allows rounding of the final result and of
/// float partial sums, far below the smallest input magnitude that can go missing.
bool check_sum(Checker& c, const Where& what, float got, const float* x, std::uint64_t n) {
  double exact = 0, magnitude = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    exact += x[i];
    magnitude += std::fabs(x[i]);
  }
  double tol = 1e-6 * magnitude + 1e-3;
  if (!(std::fabs(static_cast<double>(got) - exact) <= tol)) {
    c.bad(GPUOS_OP_SUM, what, 0, got, exact);
    return false;
  }
  return true;
}

/// Checks every tiny task's slice and sum slot, including that nop and non-sum tasks left theirs alone.
void check_tiny(Checker& c, const HostData& h, const std::vector<float>& out, const std::vector<float>& sums,
                std::uint64_t tiny_tasks) {
  for (std::uint64_t t = 0; t < tiny_tasks; ++t) {
    const std::uint32_t op = tiny_op(t);
    const float* got = out.data() + t * kTinyElems;
    const float* y0 = h.tiny_y0.data() + t * kTinyElems;
    const float* a = h.a.data() + tiny_input_offset(t);
    const float* b = h.b.data() + tiny_input_offset(t);
    const Where what{"tiny", t, ""};
    bool ok = true;
    switch (op) {
      case GPUOS_OP_FILL: ok = check_elems(c, op, what, got, kTinyElems, [&](auto) { return fill_value(t); }); break;
      case GPUOS_OP_COPY: ok = check_elems(c, op, what, got, kTinyElems, [&](auto i) { return a[i]; }); break;
      case GPUOS_OP_ADD: ok = check_elems(c, op, what, got, kTinyElems, [&](auto i) { return a[i] + b[i]; }); break;
      case GPUOS_OP_MUL: ok = check_elems(c, op, what, got, kTinyElems, [&](auto i) { return a[i] * b[i]; }); break;
      case GPUOS_OP_AXPY:
        ok = check_elems(c, op, what, got, kTinyElems, [&](auto i) { return alpha_of(t) * a[i] + y0[i]; });
        break;
      case GPUOS_OP_SUM: ok = check_sum(c, what, sums[t], a, kTinyElems); break;
      default: break;
    }
    // Whatever the task did not own must be untouched.
    if (ok && (op == GPUOS_OP_SUM || op == GPUOS_OP_NOP))
      ok = check_elems(c, op, Where{"tiny", t, " (untouched output slice)"}, got, kTinyElems, [&](auto i) { return y0[i]; });
    if (ok && op != GPUOS_OP_SUM && !(sums[t] == kUntouchedSum)) {
      c.bad(op, Where{"tiny", t, " (untouched sum slot)"}, 0, sums[t], kUntouchedSum);
      ok = false;
    }
    if (!ok) ++c.bad_tasks[op];
    ++c.checked_tasks;
  }
}

void check_large(Checker& c, const HostData& h, const std::array<std::vector<float>, 5>& out, float sum) {
  const float* a = h.a.data();
  const float* b = h.b.data();
  const float* y0 = h.large_y0.data();
  for (std::size_t j = 0; j < kLargeOps.size(); ++j) {
    const std::uint32_t op = kLargeOps[j];
    const Where what{"large", j, ""};
    bool ok = true;
    switch (op) {
      case GPUOS_OP_FILL: ok = check_elems(c, op, what, out[j].data(), kLargeElems, [](auto) { return kLargeFill; }); break;
      case GPUOS_OP_COPY: ok = check_elems(c, op, what, out[j].data(), kLargeElems, [&](auto i) { return a[i]; }); break;
      case GPUOS_OP_ADD:
        ok = check_elems(c, op, what, out[j].data(), kLargeElems, [&](auto i) { return a[i] + b[i]; });
        break;
      case GPUOS_OP_MUL:
        ok = check_elems(c, op, what, out[j].data(), kLargeElems, [&](auto i) { return a[i] * b[i]; });
        break;
      case GPUOS_OP_AXPY:
        ok = check_elems(c, op, what, out[j].data(), kLargeElems,
                         [&](auto i) { return kLargeAlpha * a[i] + y0[i]; });
        break;
      default: ok = check_sum(c, what, sum, a, kLargeElems); break;
    }
    if (!ok) ++c.bad_tasks[op];
    ++c.checked_tasks;
  }
}

/// The runtime's own accounting must agree with what was submitted.
using PerOp = std::array<std::uint64_t, GPUOS_BUILTIN_OP_COUNT>;

/// Tasks completed per built-in operator, from the runtime's operator list.
PerOp completed_per_op(const Runtime& rt) {
  PerOp n{};
  for (const Runtime::OpInfo& o : rt.list_ops())
    if (o.kind == GPUOS_OP_KIND_BUILTIN && o.id < n.size()) n[o.id] = o.completed;
  return n;
}

std::vector<std::string> check_stats(const Stats& s, const PerOp& per_op, const Plan& plan) {
  std::vector<std::string> problems;
  const std::uint64_t total = plan.tasks.size();
  if (s.submitted != total || s.completed != total)
    problems.push_back("stats: submitted " + std::to_string(s.submitted) + ", completed " +
                       std::to_string(s.completed) + ", expected " + std::to_string(total));
  if (s.failed != 0) problems.push_back("stats: " + std::to_string(s.failed) + " tasks failed on the device");
  for (int op = 0; op < GPUOS_BUILTIN_OP_COUNT; ++op)
    if (per_op[op] != plan.per_op[op])
      problems.push_back(std::string("stats: ") + gpuos_builtin_op_name(op) + " completed " +
                         std::to_string(per_op[op]) + ", expected " + std::to_string(plan.per_op[op]));
  return problems;
}

// ---- Report -----------------------------------------------------------------------------------------

struct RunReport {
  DeviceInfo device{};
  std::uint64_t tasks = 0;
  double wall_s = 0;
  LatencySummary latency_us;
  Stats stats{};
  PerOp per_op{};
  std::vector<std::string> stats_problems;
  Checker check;
};

void print_report(const RunConfig& c, const RunReport& r) {
  const auto& d = r.device;
  std::printf("device      %d: %s (sm_%d%d, %d SMs)\n", d.ordinal, d.name, d.cc_major, d.cc_minor, d.sm_count);
  std::printf("grid        %s\n", grid_text(d).c_str());
  std::printf("tasks       %llu: %llu tiny x %llu elements + %zu large x %llu elements, from %u threads\n",
              static_cast<unsigned long long>(r.tasks), static_cast<unsigned long long>(c.tasks),
              static_cast<unsigned long long>(kTinyElems), kLargeOps.size(),
              static_cast<unsigned long long>(kLargeElems), c.threads);
  std::printf("wall time   %.3f ms (first submit to drain)\n", r.wall_s * 1e3);
  std::printf("throughput  %.3f M tasks/s\n", static_cast<double>(r.tasks) / r.wall_s / 1e6);
  std::printf("latency     p50 %.1f us, p99 %.1f us, max %.1f us (%zu sampled tasks, submit->wait, under load)\n",
              r.latency_us.p50, r.latency_us.p99, r.latency_us.max, r.latency_us.count);
  std::printf("per op     ");
  for (int op = 0; op < GPUOS_BUILTIN_OP_COUNT; ++op)
    std::printf(" %s %llu", gpuos_builtin_op_name(op), static_cast<unsigned long long>(r.per_op[op]));
  std::printf("\n");
  for (const auto& p : r.stats_problems) std::printf("PROBLEM     %s\n", p.c_str());
  if (r.check.ok()) {
    std::printf("results     OK: %llu tasks checked against the CPU reference\n",
                static_cast<unsigned long long>(r.check.checked_tasks));
  } else {
    std::printf("results     WRONG:");
    for (int op = 0; op < GPUOS_BUILTIN_OP_COUNT; ++op)
      if (r.check.bad_tasks[op])
        std::printf(" %s %llu", gpuos_builtin_op_name(op), static_cast<unsigned long long>(r.check.bad_tasks[op]));
    std::printf(" tasks wrong, of %llu checked\n", static_cast<unsigned long long>(r.check.checked_tasks));
    for (const auto& e : r.check.examples) std::printf("            %s\n", e.c_str());
  }
}

void write_json(const RunConfig& c, const RunReport& r) {
  JsonWriter j;
  j.begin_object()
      .field("command", "run")
      .field("build_info", gpuos_build_info())
      .begin_object("device")
      .field("ordinal", r.device.ordinal)
      .field("name", r.device.name)
      .field("cc", std::to_string(r.device.cc_major) + "." + std::to_string(r.device.cc_minor))
      .field("sm_count", r.device.sm_count)
      .field("driver_version", r.device.driver_version)
      .end_object()
      .begin_object("grid")
      .field("blocks_per_sm", r.device.blocks_per_sm)
      .field("blocks", r.device.grid_blocks)
      .field("threads_per_block", r.device.block_threads)
      .field("sm_budget", c.sm_budget)
      .end_object()
      .field("tasks", r.tasks)
      .field("tiny_tasks", c.tasks)
      .field("tiny_elems", kTinyElems)
      .field("large_tasks", static_cast<std::uint64_t>(kLargeOps.size()))
      .field("large_elems", kLargeElems)
      .field("threads", c.threads)
      .field("wall_s", r.wall_s)
      .field("tasks_per_s", static_cast<double>(r.tasks) / r.wall_s);
  r.latency_us.write(j, "latency_us");
  j.begin_object("per_op_completed");
  for (int op = 0; op < GPUOS_BUILTIN_OP_COUNT; ++op) j.field(gpuos_builtin_op_name(op), r.per_op[op]);
  j.end_object();
  j.array("stats_problems", r.stats_problems);
  j.field("results_ok", r.check.ok()).field("checked_tasks", r.check.checked_tasks);
  j.begin_object("wrong_tasks_per_op");
  for (int op = 0; op < GPUOS_BUILTIN_OP_COUNT; ++op) j.field(gpuos_builtin_op_name(op), r.check.bad_tasks[op]);
  j.end_object();
  j.array("wrong_examples", r.check.examples);
  j.end_object();
  if (!j.write_file(c.json)) throw std::runtime_error("cannot write " + c.json);
}

int cmd_run(const RunConfig& c) {
  Watchdog watchdog(c.timeout_s + c.watch_s);
  Options o;
  o.with_device(c.device).with_sm_budget(c.sm_budget);
  watchdog.phase("querying the device");
  (void)query_device(o);  // no driver or no device: exit 3 before anything else is done

  support::PrimaryContext ctx(c.device);
  Stream copier;

  watchdog.phase("preparing buffers");
  const HostData host = make_host_data(c.tasks);
  const DeviceData dev = make_device_data(host, c.tasks, copier);
  const Plan plan = make_plan(dev, c.tasks);

  RunReport r;
  r.tasks = plan.tasks.size();
  std::vector<std::string> ops_problems;
  std::vector<float> tiny_out(c.tasks * kTinyElems), tiny_sum(c.tasks), large_sum(1);
  std::array<std::vector<float>, 5> large_out;
  // An error while the runtime lives ends the process here, before the buffers would be freed: after
  // a device fault the context may be gone, and a failing free must not hide the real error.
  try {
    watchdog.phase("booting the runtime");
    std::unique_ptr<OpsDir::ExampleBuffers> example_buffers;  // outlives rt: frees need an idle device
    if (!c.ops_dir.empty()) example_buffers = std::make_unique<OpsDir::ExampleBuffers>();
    Runtime rt(o);
    r.device = rt.device_info();
    std::unique_ptr<OpsDir> ops;
    if (!c.ops_dir.empty()) {
      watchdog.phase("loading the operator directory");
      ops = std::make_unique<OpsDir>(rt, c.ops_dir);
    }

    watchdog.phase("running the workload");
    std::vector<SubmitResult> results(c.threads);
    std::vector<std::thread> threads;
    std::latch start(c.threads + 1);
    for (unsigned t = 0; t < c.threads; ++t)
      threads.emplace_back(submit_share, std::ref(rt), std::cref(plan), t, c.threads, std::ref(start),
                           std::ref(results[t]));
    start.arrive_and_wait();
    const std::int64_t t0 = now_ns();
    for (auto& th : threads) th.join();
    // A fault or a hang first (it decides the exit status), else the first error.
    const SubmitResult* failed = nullptr;
    for (const auto& res : results)
      if (!res.error.empty() && (!failed || exit_of(res.status) > exit_of(failed->status))) failed = &res;
    if (failed) throw Error(failed->status, "submitting: " + failed->error);
    rt.drain();
    r.wall_s = static_cast<double>(now_ns() - t0) * 1e-9;

    std::vector<double> latency_us;
    for (const auto& res : results)
      for (double ns : res.latency_ns) latency_us.push_back(ns * 1e-3);
    r.latency_us = LatencySummary::of(std::move(latency_us));
    r.stats = rt.stats();
    r.per_op = completed_per_op(rt);
    r.stats_problems = check_stats(r.stats, r.per_op, plan);

    // Copied while the runtime still runs, as an application would: the copy stream is non-blocking.
    watchdog.phase("copying results back");
    copier.download(tiny_out.data(), dev.tiny_out.ptr(), dev.tiny_out.bytes());
    copier.download(tiny_sum.data(), dev.tiny_sum.ptr(), dev.tiny_sum.bytes());
    copier.download(large_sum.data(), dev.large_sum.ptr(), sizeof(float));
    for (std::size_t j = 0; j < large_out.size(); ++j) {
      large_out[j].resize(kLargeElems);
      copier.download(large_out[j].data(), dev.large_out[j].ptr(), dev.large_out[j].bytes());
    }
    if (ops) {
      watchdog.phase("running the example operators");
      std::printf("operators from %s:\n", c.ops_dir.c_str());
      ops_problems = ops->run_examples(copier, *example_buffers);
      if (c.watch_s) {
        watchdog.phase("watching the operator directory");
        std::printf("watching %s for %u s (gpuos ops --ops-dir %s)\n", c.ops_dir.c_str(), c.watch_s, c.ops_dir.c_str());
        std::fflush(stdout);
        // Still serving? A nop every 200 ms: a fault or a hang meanwhile (the runtime's watchdog fails
        // every pending task) throws here, and the run ends with exit 5 or 6 instead of at the watch's end.
        using Clock = std::chrono::steady_clock;
        const auto end = Clock::now() + std::chrono::seconds(c.watch_s);
        for (auto now = Clock::now(); now < end; now = Clock::now()) {
          std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(200), end - now));
          rt.wait(rt.submit(ops::nop()));
        }
      }
      if (ops->failures()) ops_problems.push_back(std::to_string(ops->failures()) + " operator source load(s) failed");
      ops.reset();
    }
    watchdog.phase("shutting the runtime down");
  } catch (...) {  // the runtime is destroyed by now; the buffers are not
    std::fflush(stdout);
    std::exit(report_error(std::current_exception()));
  }

  watchdog.phase("checking results");
  check_tiny(r.check, host, tiny_out, tiny_sum, c.tasks);
  check_large(r.check, host, large_out, large_sum[0]);
  print_report(c, r);
  if (!c.json.empty()) write_json(c, r);
  for (const std::string& p : ops_problems) std::printf("operators: %s\n", p.c_str());
  return r.check.ok() && r.stats_problems.empty() && ops_problems.empty() ? kExitOk : kExitFailed;
}

// ---- Entry ------------------------------------------------------------------------------------------

int cmd_config(bool markdown) {
  if (markdown) {
    std::fputs(common::markdown().c_str(), stdout);
    return kExitOk;
  }
  common::Config c;
  try {
    c = common::Config::from_env();
  } catch (const common::Failure& e) {
    throw UsageError(e.what());
  }
  const std::vector<std::string> lines = c.describe();
  const auto& rows = common::rows();
  for (std::size_t i = 0; i < lines.size(); ++i)
    std::printf("%-40s %s\n", lines[i].c_str(),
                c.source_of(rows[i].name) == common::Source::environment ? "(environment)" : "(default)");
  return kExitOk;
}

int dispatch(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines reach a log file as they happen
  if (argc < 2) throw UsageError("no command given");
  std::string_view cmd = argv[1];
  ArgReader r(cmd, std::span<char*>(argv + 2, static_cast<std::size_t>(argc - 2)));
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kTopHelp, stdout);
    std::fputs(kExitCodesHelp, stdout);
    return kExitOk;
  }
  if (cmd == "--version") {
    // The build info names the library already ("gpuos 0.1.0 (...)"); say it once.
    std::string_view info = gpuos_build_info();
    std::printf("%s%.*s\n", info.starts_with("gpuos") ? "" : "gpuos ", static_cast<int>(info.size()), info.data());
    return kExitOk;
  }
  if (cmd == "run") {
    auto c = parse_run(r);
    return c ? cmd_run(*c) : kExitOk;
  }
  if (cmd == "info") {
    auto c = parse_info(r);
    return c ? cmd_info(*c) : kExitOk;
  }
  if (cmd == "config") {
    bool markdown = false;
    while (!r.done()) {
      const std::string_view a = r.next();
      if (a == "--help" || a == "-h") {
        std::fputs(kConfigHelp, stdout);
        return kExitOk;
      }
      if (a != "--markdown") throw UsageError("config: unknown option '" + std::string(a) + "'");
      markdown = true;
    }
    return cmd_config(markdown);
  }
  try {
    if (cmd == "compile") return cmd_compile(std::span<char*>(argv + 2, static_cast<std::size_t>(argc - 2)));
    if (cmd == "ops") return cmd_ops(std::span<char*>(argv + 2, static_cast<std::size_t>(argc - 2)));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  throw UsageError("unknown command '" + std::string(cmd) + "'");
}

}  // namespace
}  // namespace gpuos::tools

int main(int argc, char** argv) {
  try {
    return gpuos::tools::dispatch(argc, argv);
  } catch (...) {
    return gpuos::tools::report_error(std::current_exception());
  }
}
