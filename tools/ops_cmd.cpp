#include "tools/ops_cmd.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>

#include "common/config.hpp"
#include "host/op_registry.hpp"
#include "host/watcher.hpp"
#include "jit/cache.hpp"
#include "jit/compiler.hpp"
#include "jit/headers.hpp"

namespace gpuos::tools {

namespace fs = std::filesystem;

const char* const kCompileHelp =
    "usage: gpuos compile FILE...\n"
    "\n"
    "Compiles operator sources (gpuos/op.cuh, GPUOS_OPERATOR) with NVRTC to LTO-IR for the library's\n"
    "device arch, as `gpuos run --ops-dir` would, and prints NVRTC's diagnostics (file:line:col) and the\n"
    "operators each file declares. Needs no GPU. Uses the compile cache (GPUOS_CACHE_DIR).\n"
    "A file fails, as it would fail to load, when it declares an operator named like a built-in or like\n"
    "one an earlier FILE declares (files given together are checked as one operator directory).\n"
    "Exit status 0 when every file compiled, 1 otherwise, 2 usage error.\n"
    "\n";

const char* const kOpsHelp =
    "usage: gpuos ops --ops-dir DIR\n"
    "\n"
    "Prints the operator status a running (or the last) `gpuos run --ops-dir DIR` wrote to\n"
    "DIR/.gpuos-status: every operator's id, argument size, source and generation, and for each source\n"
    "whose latest version did not load, the error (file:line). Exit status 1 when some source has an\n"
    "error, 0 otherwise, 2 when there is no status file.\n"
    "\n";

std::string status_file_of(const std::string& dir) { return (fs::path(dir) / ".gpuos-status").string(); }

int cmd_compile(std::span<char*> args) {
  std::vector<std::string> files;
  for (char* a : args) {
    const std::string s = a;
    if (s == "--help" || s == "-h") {
      std::fputs(kCompileHelp, stdout);
      return 0;
    }
    if (s.starts_with("-")) throw std::invalid_argument("compile: unknown option '" + s + "'");
    files.push_back(s);
  }
  if (files.empty()) throw std::invalid_argument("compile: no FILE given");
  const common::Config cfg = common::Config::from_env();
  jit::set_compile_limit(static_cast<unsigned>(cfg.jit_max_compiles));
  jit::CompileOptions o;
  o.arch = GPUOS_CUDA_ARCH;
  o.include_dirs = jit::runtime_include_dirs(cfg);  // a clear error without the toolkit's CCCL
  jit::Cache cache(jit::CacheConfig::from(cfg));
  // The names a runtime would refuse, by the runtime's own rules: a built-in's name, or one that another
  // of the files declares (they would be loaded together, as `run --ops-dir` loads a directory).
  const detail::OpRegistry names;
  detail::Served together;
  int bad = 0;
  for (const std::string& f : files) {
    auto r = std::make_shared<const jit::CompileResult>(jit::compile_file(f, o, &cache));
    for (const jit::Diagnostic& d : r->diagnostics) {
      std::fprintf(stderr, "%s\n", jit::to_string(d).c_str());
      if (!d.context.empty()) std::fprintf(stderr, "%s\n", d.context.c_str());
    }
    const std::string clash = r->ok() ? names.clash(f, r->operators, together) : "";
    if (r->ok() && clash.empty()) {
      std::string ops;
      for (const std::string& op : r->operators) ops += (ops.empty() ? "" : ", ") + op;
      std::printf("%s: ok: %s (%.0f ms%s)\n", f.c_str(), ops.c_str(), r->seconds * 1e3, r->from_cache ? ", cached" : "");
      together.units[f] = detail::Unit{r, {}, 0};
    } else {
      if (!clash.empty()) std::fprintf(stderr, "%s: error: %s\n", f.c_str(), clash.c_str());
      std::printf("%s: FAILED\n", f.c_str());
      ++bad;
    }
  }
  return bad == 0 ? 0 : 1;
}

int cmd_ops(std::span<char*> args) {
  std::string dir;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string s = args[i];
    if (s == "--help" || s == "-h") {
      std::fputs(kOpsHelp, stdout);
      return 0;
    }
    if (s == "--ops-dir" && i + 1 < args.size())
      dir = args[++i];
    else if (s.starts_with("--ops-dir="))
      dir = s.substr(10);
    else
      throw std::invalid_argument("ops: unknown option '" + s + "'");
  }
  if (dir.empty()) throw std::invalid_argument("ops: --ops-dir DIR is required");
  std::ifstream f(status_file_of(dir));
  if (!f) {
    std::fprintf(stderr, "gpuos: error: no operator status in %s (is `gpuos run --ops-dir %s` running?)\n",
                 status_file_of(dir).c_str(), dir.c_str());
    return 2;
  }
  std::string line;
  bool errors = false;
  while (std::getline(f, line)) {
    errors = errors || line.starts_with("error ");
    std::printf("%s\n", line.c_str());
  }
  return errors ? 1 : 0;
}

// ---- operator directory ------------------------------------------------------------------------------

namespace {
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}
}  // namespace

OpsDir::OpsDir(Runtime& rt, std::string dir, unsigned debounce_ms) : rt_(rt), path_(std::move(dir)) {
  if (!fs::is_directory(path_)) throw std::invalid_argument("--ops-dir: '" + path_ + "' is not a directory");
  const auto t0 = std::chrono::steady_clock::now();
  dir_ = std::make_unique<gpuos::OpsDir>(rt_, path_, debounce_ms, &OpsDir::on_event, this);
  const gpuos_ops_dir_stats st = dir_->stats();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ops-dir %s: %llu sources, %llu failed, generation %llu (%.0f ms)\n", path_.c_str(),
              static_cast<unsigned long long>(st.loads + st.failures), static_cast<unsigned long long>(st.failures),
              static_cast<unsigned long long>(st.generation), ms);
  booted_ = true;
  write_status();
}

OpsDir::~OpsDir() { dir_.reset(); }

void OpsDir::on_event(void* self_v, const gpuos_ops_dir_event* ev) {
  auto* self = static_cast<OpsDir*>(self_v);
  const gpuos_generation& g = ev->generation;
  if (ev->kind == GPUOS_OPS_DIR_FAILED) {
    std::fprintf(stderr, self->booted_ ? "gpuos: %s: %s\n" : "gpuos: operator %s did not load: %s\n", ev->path,
                 one_line(ev->message).c_str());
  } else if (!self->booted_) {
    return;  // the boot's loads: summarized by the constructor
  } else if (ev->kind == GPUOS_OPS_DIR_REMOVED) {
    std::printf("ops-dir: %s removed: its operators retired, generation %llu\n", ev->path,
                static_cast<unsigned long long>(g.number));
  } else if (g.changed) {
    std::printf("ops-dir: %s loaded: generation %llu from ticket %llu (%.1f ms, pause %.0f us)\n", ev->path,
                static_cast<unsigned long long>(g.number), static_cast<unsigned long long>(g.first_ticket), ev->ms,
                g.pause_ns * 1e-3);
  }
  std::fflush(stdout);
  if (self->booted_) self->write_status();
}

void OpsDir::write_status() {
  std::lock_guard<std::mutex> lock(status_mu_);
  std::string s;
  char buf[512];
  for (const auto& r : rt_.list_ops()) {
    if (r.kind == GPUOS_OP_KIND_FAILED) {
      s += "error " + std::string(r.source) + ": " + one_line(r.error) + "\n";
      continue;
    }
    const char* kind = r.kind == GPUOS_OP_KIND_BUILTIN ? "builtin" : r.kind == GPUOS_OP_KIND_ALIAS ? "alias" : "loaded";
    std::snprintf(buf, sizeof buf, "%-8s %-16s id %-3u args %-3u gen %-4llu %s", kind, r.name, r.id, r.arg_bytes,
                  static_cast<unsigned long long>(r.generation), r.source);
    s += buf;
    s += "\n";
    if (r.error[0]) s += "error " + std::string(r.source) + " (the loaded version keeps serving): " + one_line(r.error) + "\n";
  }
  const std::string path = status_file_of(path_);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << s;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
}

// ---- the example operators, checked against the CPU ---------------------------------------------------
namespace {

// Argument structs of examples/ops/*.cu (their layouts, for the host side).
struct ScaleArgs { float* y; const float* x; unsigned long long n; float alpha; };
struct ReluArgs { float* y; const float* x; unsigned long long n; };
struct SaxpbyArgs { float* y; const float* x; unsigned long long n; float alpha; float beta; };
struct SoftmaxRowArgs { float* y; const float* x; unsigned long long cols; unsigned long long ld; };
struct RmsnormRowArgs { float* y; const float* x; const float* w; unsigned long long cols; unsigned long long ld; float eps; };

bool close(float got, float want, float rel, float abs) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(got - want) <= abs + rel * std::fabs(want);
}

}  // namespace

namespace {
constexpr size_t kExN = 1u << 18, kExLd = 1024;
}  // namespace

OpsDir::ExampleBuffers::ExampleBuffers() : x(kExN * 4), y(kExN * 4), w(kExLd * 4) {}

std::vector<std::string> OpsDir::run_examples(const Stream& copier, const ExampleBuffers& buf) {
  std::vector<std::string> problems;
  constexpr size_t n = kExN, rows = 64, cols = 1000, ld = kExLd;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> x(n), y0(n), w(ld);
  for (float& v : x) v = dist(gen);
  for (float& v : y0) v = dist(gen);
  for (float& v : w) v = dist(gen);
  const DeviceBuffer &dx = buf.x, &dy = buf.y, &dw = buf.w;
  copier.upload(dx.ptr(), x.data(), n * 4);
  copier.upload(dw.ptr(), w.data(), ld * 4);
  auto id_of = [&](const char* name) -> int64_t {
    try {
      return rt_.op_id(name);
    } catch (const Error&) {
      return -1;
    }
  };
  auto run = [&](const char* name, uint32_t tiles, const auto& args, std::vector<float>& out) {
    const int64_t id = id_of(name);
    if (id < 0) return false;
    copier.upload(dy.ptr(), y0.data(), n * 4);
    const Ticket t = rt_.submit(Task::make(static_cast<uint32_t>(id), tiles, args));
    rt_.wait(t);
    out.resize(n);
    copier.download(out.data(), dy.ptr(), n * 4);
    return true;
  };
  auto report = [&](const char* name, size_t bad, size_t total) {
    std::printf("  %-12s %zu elements checked against the CPU: %s\n", name, total, bad ? "WRONG" : "ok");
    if (bad) problems.push_back(std::string(name) + ": " + std::to_string(bad) + " of " + std::to_string(total) + " elements differ");
  };
  const uint32_t tiles = static_cast<uint32_t>((n + 4095) / 4096);
  float* Y = dy.as<float>();
  const float* X = dx.as<float>();
  std::vector<float> out;
  if (run("scale", tiles, ScaleArgs{Y, X, n, 1.5f}, out)) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !close(out[i], 1.5f * x[i], 0, 0);
    report("scale", bad, n);
  }
  if (run("relu", tiles, ReluArgs{Y, X, n}, out)) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !close(out[i], x[i] > 0 ? x[i] : 0.0f, 0, 0);
    report("relu", bad, n);
  }
  if (run("saxpby", tiles, SaxpbyArgs{Y, X, n, 2.0f, -0.5f}, out)) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += !close(out[i], 2.0f * x[i] - 0.5f * y0[i], 1e-6f, 1e-6f);
    report("saxpby", bad, n);
  }
  if (run("softmax_row", rows, SoftmaxRowArgs{Y, X, cols, ld}, out)) {
    size_t bad = 0;
    for (size_t r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (size_t j = 0; j < cols; ++j) m = std::max<double>(m, x[r * ld + j]);
      for (size_t j = 0; j < cols; ++j) s += std::exp(x[r * ld + j] - m);
      for (size_t j = 0; j < cols; ++j)
        bad += !close(out[r * ld + j], static_cast<float>(std::exp(x[r * ld + j] - m) / s), 1e-4f, 1e-7f);
      for (size_t j = cols; j < ld; ++j) bad += out[r * ld + j] != y0[r * ld + j];  // padding untouched
    }
    report("softmax_row", bad, rows * ld);
  }
  if (run("rmsnorm_row", rows, RmsnormRowArgs{Y, X, dw.as<float>(), cols, ld, 1e-5f}, out)) {
    size_t bad = 0;
    for (size_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (size_t j = 0; j < cols; ++j) ss += double(x[r * ld + j]) * x[r * ld + j];
      const double inv = 1.0 / std::sqrt(ss / cols + 1e-5);
      for (size_t j = 0; j < cols; ++j)
        bad += !close(out[r * ld + j], static_cast<float>(x[r * ld + j] * inv * w[j]), 1e-4f, 1e-6f);
    }
    report("rmsnorm_row", bad, rows * cols);
  }
  return problems;
}

}  // namespace gpuos::tools
