// `gpuos compile`: a file fails as it would fail to load: an operator named like a built-in, or like one
// that another of the files declares. Needs NVRTC, not a GPU.
#include <doctest/doctest.h>

#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "tests/unit/jit_test_util.hpp"
#include "tools/ops_cmd.hpp"

using namespace gpuos::jit::test;

namespace {

int compile(const std::vector<fs::path>& files) {
  std::vector<std::string> s;
  for (const fs::path& f : files) s.push_back(f.string());
  std::vector<char*> argv;
  for (std::string& a : s) argv.push_back(a.data());
  return gpuos::tools::cmd_compile(std::span<char*>(argv.data(), argv.size()));
}

}  // namespace

TEST_CASE("gpuos compile: built-in names and names declared twice among the files are refused") {
  ScratchDir dir("compile_cmd");
  ScratchDir cache("compile_cmd_cache");
  const char* old = std::getenv("GPUOS_CACHE_DIR");
  const std::string saved = old ? old : "";
  ::setenv("GPUOS_CACHE_DIR", cache.path().c_str(), 1);
  write_file(dir / "scale2.cu", op_source("scale2"));
  write_file(dir / "also_scale2.cu", op_source("scale2"));
  write_file(dir / "other.cu", op_source("other"));
  write_file(dir / "add.cu", op_source("add"));  // the name of a built-in operator
  CHECK(compile({dir / "scale2.cu"}) == 0);
  CHECK(compile({dir / "scale2.cu", dir / "other.cu"}) == 0);
  CHECK(compile({dir / "add.cu"}) == 1);
  CHECK(compile({dir / "scale2.cu", dir / "also_scale2.cu"}) == 1);
  CHECK(compile({dir / "also_scale2.cu", dir / "other.cu", dir / "scale2.cu"}) == 1);
  // Each file alone compiles: the clash is between files given together.
  CHECK(compile({dir / "also_scale2.cu"}) == 0);
  if (old)
    ::setenv("GPUOS_CACHE_DIR", saved.c_str(), 1);
  else
    ::unsetenv("GPUOS_CACHE_DIR");
}
