// What every benchmark shares: the checked driver calls, the device context, the embedded kernels,
// command-line flags, and the JSON header that says where and with what a result was measured.
//
// Benchmarks link libcuda directly (they only ever run on a GPU machine) and run every method in one
// process, so ratios compare like with like. Rules they follow, because the resident kernel occupies
// the device while gpuos runs: load modules and measure the non-gpuos methods BEFORE booting gpuos,
// allocate before booting, free only after the runtime is destroyed.
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
#include "tools/json_writer.hpp"
#include "tools/latency.hpp"

namespace gpuos::bench {

using tools::JsonWriter;
using tools::LatencySummary;
using tools::now_ns;

/// Reports a failed driver call through the library's error path (host/error.hpp: the call, the
/// driver's error name, file:line) and exits with status 1.
[[noreturn]] void cu_fail(CUresult r, const char* call, const char* file, int line);
inline void cu_check(CUresult r, const char* call, const char* file, int line) {
  if (r != CUDA_SUCCESS) cu_fail(r, call, file, line);
}

}  // namespace gpuos::bench

/// Every driver call of the benchmarks: on failure prints the call, the driver's error name and
/// file:line, and exits with status 1.
#define BENCH_CU(call) ::gpuos::bench::cu_check((call), #call, __FILE__, __LINE__)

namespace gpuos::bench {

/// The device's primary context (the one gpuos uses), current on the constructing thread.
struct DeviceContext {
  explicit DeviceContext(int ordinal);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int ordinal = 0;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  std::string name;
  int driver_version = 0;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
};

/// The benchmark kernels (bench/bench_kernels.cu), embedded as a cubin at build time. Load before
/// booting gpuos: a module load does not return while a resident kernel runs.
class BenchModule {
 public:
  BenchModule();
  ~BenchModule();
  BenchModule(const BenchModule&) = delete;
  BenchModule& operator=(const BenchModule&) = delete;
  CUfunction get(const char* name) const;

 private:
  CUmodule mod_ = nullptr;
};

/// A device allocation; freed by the destructor, which must run after the runtime is destroyed.
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t bytes);
  ~DeviceArray();
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  CUdeviceptr ptr() const { return ptr_; }
  template <class T>
  T* as(std::size_t offset_elems = 0) const { return reinterpret_cast<T*>(ptr_) + offset_elems; }
  std::size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

/// A CU_STREAM_NON_BLOCKING stream: it does not synchronize with the legacy stream, so copies on it
/// can run while the resident kernel runs.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return s_; }
  void sync() const;
  void upload(CUdeviceptr dst, const void* src, std::size_t bytes) const;
  void download(void* dst, CUdeviceptr src, std::size_t bytes) const;
  /// Sets `count` 32-bit words to a quiet NaN, so a result nobody wrote never passes a check.
  void poison(CUdeviceptr dst, std::size_t count) const;

 private:
  CUstream s_ = nullptr;
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

/// Writes the fields every benchmark result carries: benchmark, device, driver, build info, time.
void write_header(JsonWriter& j, const char* bench, const DeviceContext& d);
/// The gpuos grid of a running runtime, as a JSON object.
void write_grid(JsonWriter& j, const DeviceInfo& info);
/// Writes the document; exits 1 if the file cannot be written.
void save_json(const JsonWriter& j, const std::string& path);

/// Runs f(); an exception inside it (a gpuos::Error after a device fault, say) ends the process at once
/// with status 1, before the destructors of outer buffers run: after a fault the context may be gone,
/// and a failing free must not hide the real error.
template <class F>
decltype(auto) guarded(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "bench: error: %s: %s\n", what, e.what());
    std::_Exit(1);
  }
}

/// Runs fn() and turns a gpuos::Error or other exception into a message and exit status 1.
int run_main(const char* bench, int (*fn)(int, char**), int argc, char** argv);

/// How a result compares with its target, for the tables.
inline const char* verdict(bool ok) { return ok ? "PASS" : "MISS"; }

}  // namespace gpuos::bench
