// Generations: operators compiled at run time, linked into new generations of the device image and
// switched to; aliases flipped in ticket order.
//
// A generation is one cubin: the resident kernel and the built-ins (an object embedded at build time),
// every live operator source (NVRTC LTO-IR) and a generated jump table, linked by nvJitLink
// (jit/image.hpp). Building it happens while the running generation serves. The switch is the suspend
// path: the front end stops taking tasks from the ring, the tasks it took finish on the old code, the
// kernel exits, the new module is loaded (a module load does not complete while the kernel runs; it
// starts before the stop, host/image_set.hpp) and the kernel is relaunched on the same memory: the
// tasks still in the ring run the new code. The
// previous image stays loaded, so a rollback is a quiesce and a relaunch.
//
// Aliases need no quiesce: an alias switch is a control task in the ring, applied by the front end in
// ticket order, which resolves every task's op through the alias table as it copies it to the device.
//
// Locking: one lock serializes every call here and guards the registry's mutations (lock order: this
// lock, then the resident kernel's control lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <cuda.h>

#include "common/config.hpp"
#include "gpuos/gpuos.h"
#include "host/op_registry.hpp"
#include "host/resident.hpp"
#include "host/run_state.hpp"
#include "host/submitter.hpp"

namespace gpuos::detail {

class Generations {
 public:
  Generations(CUcontext ctx, const gpuos_options& o, const gpuos_device_info& info, const common::Config& cfg,
              OpRegistry& reg, ResidentKernel& kernel, Submitter& sub, RunState& run);
  ~Generations();

  /// `text` null: read the file `source_name`. Throws Failure with the diagnostics on a broken source.
  gpuos_generation load(const std::string& source_name, const std::string* text);
  /// Compiles all (concurrently), then ONE generation with every source that compiled. Sources that
  /// failed are reported in `errors` (and by list()); the others load.
  gpuos_generation load_all(const std::vector<std::string>& paths, std::vector<std::string>& errors);
  gpuos_generation remove(const std::string& source_name);
  gpuos_generation rollback();
  gpuos_generation current();

  std::uint32_t op_id(const std::string& name);
  std::uint64_t alias_set(const std::string& alias, const std::string& target);
  std::uint64_t alias_rollback(const std::string& alias);
  std::vector<gpuos_op_info> list();
  /// The name of operator `id`, or nullopt while another call holds the lock (a switch may be waiting
  /// for a hung operator: the watchdog must not wait for it).
  std::optional<std::string> try_op_name(std::uint32_t id);

  /// Image switches so far (the monitor's idle detection counts them as activity).
  std::uint64_t switches() const { return switches_.load(); }

 private:
  struct Jit;
  struct Build;
  Jit& jit();  // created on first use: writes the operator headers out, opens the cache
  /// `lock` holds mu_ (and the caller change_mu_); released while the image is linked.
  gpuos_generation rebuild(Build& b, std::unique_lock<std::mutex>& lock);
  gpuos_generation load_locked(const std::string& source_name, const std::string* text);
  void switch_image(const std::vector<char>* cubin, gpuos_generation& g);
  /// Records `why` as the focus source's error and throws it (saying the loaded version keeps serving).
  [[noreturn]] void refuse(const std::string& focus, gpuos_status s, const std::string& why);

  CUcontext ctx_;
  const gpuos_options opts_;
  const gpuos_device_info info_;  ///< sm_count: a new image's grid uses the same SMs
  const common::Config& cfg_;
  OpRegistry& reg_;
  ResidentKernel& kernel_;
  Submitter& sub_;
  RunState& run_;

  /// change_mu_ serializes changes (loads, removals, rollbacks, aliases); mu_ guards what readers see (the
  /// registry, the current generation) and is released while a change compiles and links, which takes
  /// seconds with GPUOS_INLINE_OPERATORS: op_id, list and current answer from the generation serving.
  /// Order: change_mu_, then mu_.
  std::mutex change_mu_;
  std::mutex mu_;
  std::unique_ptr<Jit> jit_;
  gpuos_generation cur_{}, prev_{};
  std::uint64_t generations_ = 0;
  std::atomic<std::uint64_t> switches_{0};
};

}  // namespace gpuos::detail
