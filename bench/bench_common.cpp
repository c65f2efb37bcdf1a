#include "bench/bench_common.hpp"

#include <execinfo.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <stdexcept>

#include "common/error.hpp"

namespace gpuos::bench {

// ---- Device -----------------------------------------------------------------------------------------

DeviceContext::DeviceContext(int ord) : PrimaryContext(ord), ordinal(ord) {
  // PrimaryContext loads the driver through the library's loader (host/driver.cpp), which initialises it
  // as the runtime does (its module-loading choice included): baselines and gpuos run set up alike.
  GPUOS_CU_TRY(drv().cuDriverGetVersion(&driver_version));
  char buf[256] = {};
  GPUOS_CU_TRY(drv().cuDeviceGetName(buf, sizeof buf, device()));
  name = buf;
  GPUOS_CU_TRY(drv().cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device()));
  GPUOS_CU_TRY(drv().cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device()));
  GPUOS_CU_TRY(drv().cuDeviceGetAttribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device()));
}

// ---- Flags ------------------------------------------------------------------------------------------

Flags::Flags(int argc, char** argv, std::string help) : prog_(argv[0]) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(help.c_str(), stdout);
      std::exit(0);
    }
    if (!a.starts_with("--")) usage("unexpected argument '" + a + "'");
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      values_[a.substr(0, eq)] = a.substr(eq + 1);
    } else {
      if (i + 1 >= argc) usage(a + " needs a value");
      values_[a] = argv[++i];
    }
  }
}

void Flags::usage(const std::string& msg) const {
  std::fprintf(stderr, "%s: error: %s (see --help)\n", prog_.c_str(), msg.c_str());
  std::exit(kExitUsage);
}

static bool parse_int(const std::string& s, std::int64_t& v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

std::int64_t Flags::integer(const std::string& name, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  used_[name] = true;
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  std::int64_t v = 0;
  if (!parse_int(it->second, v)) usage(name + ": '" + it->second + "' is not an integer");
  if (v < lo || v > hi)
    usage(name + ": " + it->second + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

std::string Flags::text(const std::string& name, const std::string& fallback) {
  used_[name] = true;
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::vector<std::int64_t> Flags::list(const std::string& name, const std::vector<std::int64_t>& fallback,
                                      std::int64_t lo, std::int64_t hi) {
  used_[name] = true;
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  std::vector<std::int64_t> out;
  std::string s = it->second;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::int64_t v = 0;
    if (!parse_int(part, v) || v < lo || v > hi)
      usage(name + ": '" + part + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void Flags::finish() const {
  for (const auto& [k, v] : values_)
    if (!used_.count(k)) usage("unknown option '" + k + "'");
}

// ---- JSON -------------------------------------------------------------------------------------------

Residency residency_flags(Flags& f) {
  const Options d;
  Residency r;
  r.slice_us = static_cast<std::uint32_t>(f.integer("--slice-us", d.slice_us, 0, 10000000));
  r.park_us = static_cast<std::uint32_t>(f.integer("--park-us", d.park_us, 0, 10000000));
  return r;
}

void write_header(JsonWriter& j, const char* bench, const DeviceContext& d) {
  char when[64] = {};
  std::time_t t = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  j.field("benchmark", bench)
      .field("timestamp_utc", when)
      .field("build_info", gpuos_build_info())
      .begin_object("device")
      .field("ordinal", d.ordinal)
      .field("name", d.name)
      .field("cc", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor))
      .field("sm_count", d.sm_count)
      .end_object()
      .field("driver_version", d.driver_version)
      .field("cuda_headers_version", CUDA_VERSION);
}

void write_grid(JsonWriter& j, const DeviceInfo& info) {
  j.begin_object("gpuos_grid")
      .field("blocks_per_sm", info.blocks_per_sm)
      .field("blocks", info.grid_blocks)
      .field("threads_per_block", info.block_threads)
      .end_object();
}

void save_json(const JsonWriter& j, const std::string& path) {
  if (!j.write_file(path)) die("cannot write " + path);
  std::printf("wrote %s\n", path.c_str());
}

// ---- Errors -----------------------------------------------------------------------------------------

namespace {
std::string one_line(std::string m) {
  std::replace(m.begin(), m.end(), '\n', ' ');
  return m;
}
}  // namespace

void die(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "bench: error: %s\n", one_line(what).c_str());
  std::fflush(stderr);
  std::_Exit(kExitError);
}

namespace {
/// A crash says where: the stack's return addresses (binary+offset, for addr2line) on stderr, then the
/// signal's default action (the exit status stays 128 + signal).
void on_crash(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  const char msg[] = "bench: crashed; stack (resolve with addr2line -e <binary> -f -C <offset>):\n";
  (void)!write(2, msg, sizeof(msg) - 1);
  backtrace_symbols_fd(frames, n, 2);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
}  // namespace

int run_main(const char* bench, int (*fn)(int, char**), int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a log cut short by a timeout still shows the last line
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) std::signal(sig, on_crash);
  auto report = [&](const char* what, gpuos_status s) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", bench, one_line(what).c_str());
    return s == GPUOS_ERR_NO_DEVICE ? kExitNoDevice : kExitError;
  };
  try {
    return fn(argc, argv);
  } catch (const Error& e) {
    return report(e.what(), e.status());
  } catch (const common::Failure& e) {
    return report(e.what(), e.status());
  } catch (const std::exception& e) {
    return report(e.what(), GPUOS_ERR_INTERNAL);
  }
}

// ---- Verdicts ---------------------------------------------------------------------------------------

void Verdicts::target(const std::string& what, double value, const std::string& rule, bool met,
                      const std::string& note, const char* format) {
  targets_.push_back({what, rule, note, value, true, met});
  std::printf("TARGET %s  %s = %s (target %s)%s%s\n", met ? "PASS" : "MISS", what.c_str(), fmt(format, value).c_str(),
              rule.c_str(),
              note.empty() ? "" : "; ", note.c_str());
}

void Verdicts::not_measured(const std::string& what, const std::string& rule, const std::string& why) {
  targets_.push_back({what, rule, why, 0.0, false, false});
  std::printf("TARGET MISS  %s: not measured (target %s): %s\n", what.c_str(), rule.c_str(), why.c_str());
}

void Verdicts::check(const std::string& what, bool ok, const std::string& detail) {
  checks_.push_back({what, detail, ok});
  std::printf("CHECK  %s    %s%s%s\n", ok ? "OK  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ",
              detail.c_str());
}

bool Verdicts::checks_passed() const {
  return std::all_of(checks_.begin(), checks_.end(), [](const Check& c) { return c.ok; });
}

bool Verdicts::targets_met() const {
  return std::all_of(targets_.begin(), targets_.end(), [](const Target& t) { return t.met; });
}

int Verdicts::exit_status() const {
  if (!checks_passed()) return kExitError;
  return targets_met() ? kExitMet : kExitMissed;
}

int Verdicts::finish() const {
  const auto met = std::count_if(targets_.begin(), targets_.end(), [](const Target& t) { return t.met; });
  const auto failed = std::count_if(checks_.begin(), checks_.end(), [](const Check& c) { return !c.ok; });
  const std::string n = std::to_string(checks_.size());
  const std::string checks = failed ? std::to_string(failed) + " of " + n + " checks FAILED" : "all " + n + " checks passed";
  const int status = exit_status();
  const char* meaning = status == kExitMet ? "every target met" : status == kExitMissed ? "a target missed" : "failed";
  std::printf("RESULT %s: %lld of %zu targets met, %s -> exit %d (%s)\n", bench_.c_str(), static_cast<long long>(met),
              targets_.size(), checks.c_str(), status, meaning);
  return status;
}

void Verdicts::write(JsonWriter& j) const {
  j.begin_object("verdicts");
  j.begin_array("targets");
  for (const Target& t : targets_) {
    j.begin_object().field("what", t.what).field("rule", t.rule).field("measured", t.measured);
    if (t.measured) j.field("value", t.value);
    j.field("met", t.met).field("note", t.note).end_object();
  }
  j.end_array().begin_array("checks");
  for (const Check& c : checks_)
    j.begin_object().field("what", c.what).field("ok", c.ok).field("detail", c.detail).end_object();
  j.end_array();
  j.field("all_targets_met", targets_met()).field("all_checks_passed", checks_passed());
  j.field("exit_status", exit_status());
  j.end_object();
}

int Verdicts::conclude(JsonWriter& j, const std::string& path) const {
  write(j);
  j.end_object();
  save_json(j, path);
  return finish();
}

// ---- Statistics, inputs and checks ------------------------------------------------------------------

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

void upload_inputs(const Stream& s, const DeviceBuffer& a, const DeviceBuffer& b, std::uint64_t n) {
  std::vector<float> h(n);
  for (std::uint64_t i = 0; i < n; ++i) h[i] = input_a(i);
  s.upload(a.ptr(), h.data(), n * sizeof(float));
  for (std::uint64_t i = 0; i < n; ++i) h[i] = input_b(i);
  s.upload(b.ptr(), h.data(), n * sizeof(float));
}

std::uint64_t count_wrong_sums(const Stream& s, CUdeviceptr out, std::uint64_t n) {
  std::vector<float> got(n);
  s.download(got.data(), out, n * sizeof(float));
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < n; ++i) wrong += !(got[i] == input_a(i) + input_b(i));
  return wrong;
}

void poison_by_copy(const Stream& s, CUdeviceptr dst, std::size_t count) {
  const std::vector<float> nan(count, std::nanf(""));
  s.upload(dst, nan.data(), count * sizeof(float));
}

// ---- GPU timing --------------------------------------------------------------------------

void GpuTimer::start(CUstream s) const { GPUOS_CU_TRY(drv().cuEventRecord(start_.get(), s)); }

void GpuTimer::stop(CUstream s) const { GPUOS_CU_TRY(drv().cuEventRecord(stop_.get(), s)); }

double GpuTimer::ms() const {
  GPUOS_CU_TRY(drv().cuEventSynchronize(stop_.get()));
  float ms = 0;
  GPUOS_CU_TRY(drv().cuEventElapsedTime(&ms, start_.get(), stop_.get()));
  return static_cast<double>(ms);
}

}  // namespace gpuos::bench
