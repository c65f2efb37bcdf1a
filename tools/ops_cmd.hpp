// Operator commands of the `gpuos` tool: `gpuos compile`, `gpuos ops`, and the operator directory of
// `gpuos run --ops-dir` (load at boot, watch, reload, retire, status file, checked example workload).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "gpuos/gpuos.hpp"

#include "tools/cuda_support.hpp"

namespace gpuos::tools {

using support::DeviceBuffer;
using support::Stream;

extern const char* const kCompileHelp;
extern const char* const kOpsHelp;

/// `gpuos compile FILE...`: NVRTC only (no GPU). Exit 0 when every file compiled, 1 otherwise, 2 usage.
int cmd_compile(std::span<char*> args);
/// `gpuos ops --ops-dir DIR`: prints the status a running `gpuos run --ops-dir DIR` keeps in
/// DIR/.gpuos-status (exit 1 when some source does not serve its latest version).
int cmd_ops(std::span<char*> args);

/// The status file `gpuos run --ops-dir DIR` writes after every change.
std::string status_file_of(const std::string& dir);

/// How long a file in the operator directory must stay unchanged before it is loaded (an editor's save
/// is several writes, or a write and a rename: one load per save). bench_hotpatch's save -> new code time
/// includes it.
inline constexpr unsigned kOpsDirDebounceMs = 20;

/// `gpuos run --ops-dir DIR`: the runtime's operator directory (gpuos::OpsDir: loaded at construction,
/// then watched), its events logged (broken files with file:line: the working version keeps serving) and
/// its status kept in DIR/.gpuos-status for `gpuos ops`.
class OpsDir {
 public:
  OpsDir(Runtime& rt, std::string dir, unsigned debounce_ms = kOpsDirDebounceMs);
  ~OpsDir();
  OpsDir(const OpsDir&) = delete;
  OpsDir& operator=(const OpsDir&) = delete;

  /// Device buffers of run_examples. Allocate them BEFORE the runtime boots and free them after it is
  /// gone: freeing device memory waits for an idle device, which it never is while the resident kernel
  /// runs.
  struct ExampleBuffers {
    ExampleBuffers();
    DeviceBuffer x, y, w;
  };
  /// Runs every shipped example operator that is loaded (scale, relu, saxpby, softmax_row,
  /// rmsnorm_row) on generated data and compares with a CPU reference. Returns one line per problem;
  /// prints one line per operator.
  std::vector<std::string> run_examples(const Stream& copier, const ExampleBuffers& buf);
  /// Loads refused, at boot and since.
  unsigned failures() const { return static_cast<unsigned>(dir_ ? dir_->stats().failures : 0); }

 private:
  static void on_event(void* self, const gpuos_ops_dir_event* ev);
  void write_status();

  Runtime& rt_;
  std::string path_;
  // The loads at open are summarized once, not logged one by one. Read by the watching thread, which
  // starts inside dir_'s construction, before the constructor sets it.
  std::atomic<bool> booted_{false};
  std::mutex status_mu_;  // the constructor and the watching thread both write the status file
  std::unique_ptr<gpuos::OpsDir> dir_;
};

}  // namespace gpuos::tools
