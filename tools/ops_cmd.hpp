// Operator commands of the `gpuos` tool: `gpuos compile`, `gpuos ops`, and the operator directory of
// `gpuos run --ops-dir` (load at boot, watch, reload, retire, status file, checked example workload).
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <thread>
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

/// An operator directory served by a runtime: every *.cu file in it is loaded at construction (compiled
/// concurrently, one generation for all that compile), then a thread watches the directory
/// (host/watcher.hpp: close-after-write and rename-into, editor temporaries ignored, debounce, content
/// dedupe): a new or changed file loads as a new generation, a removed one retires its operators. Broken
/// files are logged with file:line and kept in the status until fixed; the working version keeps serving.
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
  /// Files that failed to load at boot or since (their latest version).
  unsigned failures() const { return failures_.load(); }
  uint64_t reloads() const { return reloads_.load(); }

 private:
  void loop();
  void write_status();

  Runtime& rt_;
  std::string dir_;
  unsigned debounce_ms_;
  std::atomic<bool> stop_{false};
  std::atomic<unsigned> failures_{0};
  std::atomic<uint64_t> reloads_{0};
  struct WatcherBox;
  std::unique_ptr<WatcherBox> watcher_;
  std::thread thread_;
};

}  // namespace gpuos::tools
