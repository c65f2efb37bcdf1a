#include "jit/headers.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include "common/error.hpp"
#include "jit/hash.hpp"

#ifndef GPUOS_JIT_CCCL_DIR
#define GPUOS_JIT_CCCL_DIR ""
#endif

extern "C" {
struct gpuos_embedded_file {
  const char* name;
  const char* data;
  size_t size;
};
extern const struct gpuos_embedded_file gpuos_operator_headers[];
}

namespace gpuos::jit {
namespace {

namespace fs = std::filesystem;

bool same_content(const fs::path& p, const gpuos_embedded_file& f) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  const std::string got{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return got.size() == f.size && got.compare(0, f.size, f.data, f.size) == 0;
}

bool complete(const fs::path& dir) {
  for (const gpuos_embedded_file* f = gpuos_operator_headers; f->name; ++f)
    if (!same_content(dir / f->name, *f)) return false;
  return true;
}

std::string materialize() {
  Hasher h;
  h.add("gpuos-operator-headers/1");
  for (const gpuos_embedded_file* f = gpuos_operator_headers; f->name; ++f)
    h.add(std::string_view(f->name)).add(std::string_view(f->data, f->size));
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  const fs::path final_dir = base / ("gpuos-include-" + std::to_string(::getuid()) + "-" + h.digest().hex().substr(0, 16));
  if (complete(final_dir)) return final_dir.string();
  // Write a private copy, then rename it into place; a racing writer's identical copy is as good.
  const fs::path tmp = final_dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  for (const gpuos_embedded_file* f = gpuos_operator_headers; f->name; ++f) {
    const fs::path p = tmp / f->name;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(f->data, static_cast<std::streamsize>(f->size));
    if (!out.flush())
      throw common::Failure(GPUOS_ERR_INTERNAL, "cannot write the operator headers to " + p.string() +
                                           " (set GPUOS_INCLUDE_DIR to a directory holding gpuos/op.cuh)");
  }
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    if (complete(final_dir)) {
      fs::remove_all(tmp, ec);
      return final_dir.string();
    }
    return tmp.string();  // the shared name holds something else: keep the private copy
  }
  return final_dir.string();
}

}  // namespace

std::string operator_include_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  static std::mutex mu;
  static std::string dir;
  std::lock_guard<std::mutex> lock(mu);
  if (dir.empty() || !complete(dir)) dir = materialize();
  return dir;
}

std::string cccl_include_dir(const std::string& configured) {
  const std::string d = configured.empty() ? std::string(GPUOS_JIT_CCCL_DIR) : configured;
  std::error_code ec;
  if (d.empty() || !fs::is_regular_file(fs::path(d) / "cuda" / "std" / "type_traits", ec))
    throw common::Failure(GPUOS_ERR_UNSUPPORTED,
                          "CCCL (libcu++) headers not found: '" + d + "' holds no cuda/std/type_traits (" +
                              (configured.empty() ? "the CUDA toolkit's include/cccl at build time; set GPUOS_CCCL_DIR"
                                                  : "from GPUOS_CCCL_DIR or gpuos_options.cccl_dir") +
                              "). Operators are compiled at run time and need the CUDA toolkit's CCCL headers.");
  return d;
}

std::vector<std::string> runtime_include_dirs(const common::Config& cfg) {
  return {operator_include_dir(cfg.include_dir), cccl_include_dir(cfg.cccl_dir)};
}

}  // namespace gpuos::jit
