// Operator source -> LTO-IR, with NVRTC.
//
// An operator source includes "gpuos/op.cuh" and declares one or more operators with GPUOS_OPERATOR.
// compile() turns it into LTO-IR for one arch (`-arch=sm_XX -rdc=true -dlto`), ready for nvJitLink to
// link into the same image as the resident kernel (linker.hpp, image.hpp). NVRTC's log comes back as
// structured diagnostics (file:line:col, severity, message). The operators a source declares are found
// by its GPUOS_OPERATOR uses and confirmed by NVRTC: each `gpuos_op_<name>_entry` is registered as a
// name expression, so a compile succeeds only if the symbol really exists with C linkage.
//
// Errors in the user's source (syntax, a wrong tile signature, no operator, unknown include, empty or
// binary file) are results: ok() is false and `diagnostics` says why. Failures of the library itself
// (NVRTC out of memory, an internal error) throw gpuos::common::Failure.
//
// At most max_concurrent_compiles() NVRTC compiles run at once in the process (a counting semaphore;
// each compile takes hundreds of MB); set_compile_limit sets the bound (a runtime sets it from
// GPUOS_JIT_MAX_COMPILES), default min(hardware threads, 8). All functions are thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "jit/hash.hpp"

namespace gpuos::jit {

class Cache;

enum class Severity { error, warning, remark };

struct Diagnostic {
  Severity severity = Severity::error;
  std::string file;     ///< as NVRTC names it; empty when about no file (a bad option)
  int line = 0;         ///< 1-based; 0 = unknown
  int column = 0;       ///< 1-based, from NVRTC's caret; 0 = unknown
  std::string code;     ///< NVRTC's diagnostic number ("177-D"); empty if none
  std::string message;  ///< one line
  std::string context;  ///< the source line, the caret and "detected during ..." notes, as printed
};

/// "file:line:col: error: message" (parts that are unknown are left out).
std::string to_string(const Diagnostic& d);
/// Splits an NVRTC program log into diagnostics; summary lines ("1 error detected ...") are dropped.
std::vector<Diagnostic> parse_nvrtc_log(std::string_view log);

struct CompileOptions {
  unsigned arch = 90;  ///< sm_<arch>; must match the image the LTO-IR is linked into
  /// -I directories, searched in order after the source's own directory (compile_file). An operator
  /// source needs gpuos/op.cuh and CCCL: jit::runtime_include_dirs (jit/headers.hpp) gives both.
  std::vector<std::string> include_dirs;
  std::vector<std::string> defines;        ///< "NAME" or "NAME=VALUE"
  std::vector<std::string> extra_options;  ///< passed to NVRTC as they are
  bool lineinfo = true;                    ///< -lineinfo: source lines in profiles and fault reports
  /// An operator source must declare at least one operator. False for sources that declare none on
  /// purpose (a jump table).
  bool require_operator = true;
};

/// The exact NVRTC options of a compile (`source_dir`: directory searched first; may be empty).
std::vector<std::string> nvrtc_options(const CompileOptions& o, const std::string& source_dir = {});

struct CompileResult {
  std::string source_name;
  std::vector<char> ltoir;                ///< non-empty iff ok()
  std::vector<std::string> operators;     ///< names declared (gpuos_op_<name>_entry exists)
  std::vector<Diagnostic> diagnostics;    ///< errors first cause a failure; warnings may come with success
  std::string log;                        ///< NVRTC's raw log
  Hash128 key;                            ///< cache key (zero when the source was rejected before NVRTC)
  bool from_cache = false;
  double seconds = 0;                     ///< wall time of this call

  bool ok() const { return !ltoir.empty(); }
  /// Every error diagnostic, formatted with its context, one after the other. Empty when ok().
  std::string error_text() const;
};

/// Compiles `source`, named `source_name` in diagnostics. With a cache, a source whose key is stored is
/// not compiled again. Quoted includes are searched as NVRTC searches them: in the directory of
/// `source_name` (relative to the working directory), then in `source_dir` (when given), then in
/// o.include_dirs.
CompileResult compile(std::string_view source_name, std::string_view source, const CompileOptions& o,
                      Cache* cache = nullptr, const std::string& source_dir = {});
/// Reads `path` and compiles it; the file's directory is searched first for quoted includes. An
/// unreadable file is a failed result, not an exception.
CompileResult compile_file(const std::filesystem::path& path, const CompileOptions& o, Cache* cache = nullptr);

/// Operator names a source declares with GPUOS_OPERATOR / _FLAGS / _WITH_FINISH / _WITH_FINISH_FLAGS / _NOARGS / _NOARGS_FLAGS,
/// in order, each once,
/// ignoring comments and string literals. (Candidates: compile() confirms them with NVRTC.)
std::vector<std::string> scan_operator_names(std::string_view source);

struct ToolchainVersions {
  int nvrtc_major = 0, nvrtc_minor = 0;
  unsigned nvjitlink_major = 0, nvjitlink_minor = 0;
};
const ToolchainVersions& toolchain_versions();

struct CompileStats {
  std::uint64_t nvrtc_compiles = 0;  ///< NVRTC invocations (cache hits do not count)
  unsigned in_flight = 0;
  unsigned peak_in_flight = 0;
  unsigned limit = 0;
};
CompileStats compile_stats();
unsigned max_concurrent_compiles();
/// Sets the bound (GPUOS_JIT_MAX_COMPILES; 0 = the number of hardware threads, at most 8). Compiles
/// already running are not interrupted.
void set_compile_limit(unsigned n);

}  // namespace gpuos::jit
