// An operator directory served by a runtime (gpuos_ops_dir_open): every *.cu file in it is loaded at
// open (compiled concurrently, one generation for all that compile), then a thread of its own watches
// the directory (host/watcher.hpp: close-after-write and rename-into, editor temporaries ignored,
// debounce, content dedupe): a new or changed file loads as a new generation, a removed one retires its
// operators. A file that does not compile is refused and its working version keeps serving; every event
// is counted and reported to the caller's callback, on the watching thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "gpuos/gpuos.h"

namespace gpuos::detail {

class Runtime;
class Watcher;

class OpsDir {
 public:
  using Callback = gpuos_ops_dir_callback;
  /// Loads the directory and starts watching it. Throws Failure (GPUOS_ERR_INVALID_ARG) when `dir` is
  /// not a directory or cannot be watched.
  OpsDir(Runtime& rt, std::string dir, unsigned debounce_ms, Callback cb, void* user);
  ~OpsDir();  ///< stops the watching thread (a load in progress finishes first)
  OpsDir(const OpsDir&) = delete;
  OpsDir& operator=(const OpsDir&) = delete;

  gpuos_ops_dir_stats stats() const;

 private:
  void loop();
  void report(gpuos_ops_dir_event_kind kind, const std::string& path, const gpuos_generation* g, const std::string& msg,
              double ms);

  Runtime& rt_;
  std::string dir_;
  Callback cb_;
  void* user_;
  std::unique_ptr<Watcher> watcher_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> loads_{0}, failures_{0}, removals_{0}, generation_{0};
  std::atomic<uint32_t> failing_{0};
  std::thread thread_;
};

}  // namespace gpuos::detail
