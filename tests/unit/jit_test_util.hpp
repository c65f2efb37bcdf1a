// Helpers shared by the JIT unit tests: a scratch directory, whole-file I/O, build-time paths.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "jit/compiler.hpp"
#include "jit/headers.hpp"

namespace gpuos::jit::test {

namespace fs = std::filesystem;

/// A fresh directory under the system temp dir, removed with its content at scope exit.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static std::atomic<int> n{0};
    path_ = fs::temp_directory_path() /
            ("gpuos-jit-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(n.fetch_add(1)));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << text;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline std::vector<char> read_bytes(const fs::path& p) {
  const std::string s = read_file(p);
  return {s.begin(), s.end()};
}

inline fs::path examples_dir() { return GPUOS_JIT_TEST_EXAMPLES; }
inline fs::path sched_stub_object() { return GPUOS_JIT_TEST_SCHED; }
inline fs::path kernel_object() { return GPUOS_JIT_TEST_KERNEL; }
/// The kernel's two units as generations link them with GPUOS_INLINE_OPERATORS=1 (kernel/meson.build).
inline fs::path scheduler_sass_object() { return GPUOS_JIT_TEST_SCHED_SASS; }
inline fs::path dispatch_lto_object() { return GPUOS_JIT_TEST_DISPATCH_LTO; }
inline unsigned test_arch() { return GPUOS_JIT_TEST_ARCH; }

/// Compile options for the test arch, with the operator headers and CCCL of the environment's
/// configuration (the embedded headers written out, the toolkit's CCCL).
inline CompileOptions test_compile_options() {
  CompileOptions o;
  o.arch = test_arch();
  o.include_dirs = runtime_include_dirs(common::Config::from_env());
  return o;
}

/// A minimal valid operator source declaring `name`.
inline std::string op_source(const std::string& name, const std::string& extra = {}) {
  return "#include \"gpuos/op.cuh\"\n"
         "struct " + name + "_args { float* x; unsigned long long n; float k; };\n"
         "__device__ void " + name + "_fn(const " + name + "_args& a, const gpuos::TileCtx& c) {\n"
         "  for (unsigned long long i = c.tile * 256ull + threadIdx.x; i < a.n; i += 256 * c.tiles) a.x[i] *= a.k;\n"
         "}\n" + extra +
         "GPUOS_OPERATOR(" + name + ", " + name + "_args, " + name + "_fn)\n";
}

}  // namespace gpuos::jit::test
