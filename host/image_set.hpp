// The image set: which device images are loaded. The current one runs; the previous one stays loaded
// for a generation rollback; older ones are retired, still loaded, until the device is idle.
//
// Why retired images are not unloaded at once: an unload, like a load, waits for an idle device (the
// driver does not return while the resident kernel runs) and does all its work after the kernel has
// exited (~200-400 us for the kernel's image on an H100), so it is left to a moment without tasks, a
// suspend or the shutdown; past kMaxRetiredBytes of them a switch unloads the oldest inside its pause.
//
// Contract: install, swap_previous and the unloads need the resident kernel stopped; the caller
// serializes every member but current_grid() (ResidentKernel's control lock; unload_all runs at
// shutdown, once no kernel runs).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <cuda.h>

#include "host/device.hpp"

namespace gpuos::detail {

/// A cuModuleLoadData on a thread of its own. The driver does the load's host-side work first and then
/// waits for an idle device (on an H100, a load started 2 ms before a spinning kernel's exit returns
/// ~40 us after it), so a switch starts the load while the old generation still serves and stops the
/// kernel once the host-side work is likely done. Shared with the thread: if the switch gives up, the thread finishes
/// on its own whenever the driver returns.
class PendingLoad {
 public:
  static std::shared_ptr<PendingLoad> start(CUcontext ctx, const std::vector<char>& image);
  /// Waits up to `d`; true once the load returned.
  bool wait_for(std::chrono::nanoseconds d);
  CUresult result() const;
  CUmodule module() const;
  std::chrono::steady_clock::time_point returned() const;

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  CUresult r_ = CUDA_SUCCESS;
  CUmodule module_ = nullptr;
  std::chrono::steady_clock::time_point returned_;
  std::vector<char> image_;  // a copy: the thread may outlive the switch that started it
};

/// One row of an image's jump table as the host needs it.
struct TableRow {
  std::uint32_t id;
  std::uint32_t arg_bytes;
};
/// The operators a loaded image's jump table holds (device memory reads; needs the image's context).
std::vector<TableRow> read_jump_table(CUmodule module);

class ImageSet {
 public:
  static constexpr std::size_t kMaxRetiredBytes = std::size_t{64} << 20;

  explicit ImageSet(Image boot) : current_(boot), grid_(boot.grid) {}

  const Image& current() const { return current_; }
  /// The current image's grid; lock-free (device_info reads it while switches go on).
  std::uint32_t current_grid() const { return grid_.load(std::memory_order_relaxed); }
  bool has_previous() const { return previous_.module != nullptr; }

  /// `next` becomes current, the current one previous, the previous one retired.
  void install(const Image& next);
  /// The previous image becomes current and the current one previous (a rollback).
  void swap_previous();
  /// Unloads every retired image.
  void unload_retired();
  /// Unloads the oldest retired images while they hold more than kMaxRetiredBytes; true if any went.
  bool trim_retired();
  std::uint32_t retired_count() const { return static_cast<std::uint32_t>(retired_.size()); }
  std::size_t retired_bytes() const { return retired_bytes_; }
  /// Unloads everything (shutdown, the device idle); never throws.
  void unload_all() noexcept;

  /// How long a switch lets a load's host-side work run before it stops the kernel (2 ms at first).
  /// adapt_load_lead doubles it, up to 16 ms, when a switch's load returned more than 150 us (`tail`)
  /// after the kernel had stopped.
  std::chrono::nanoseconds load_lead() const { return load_lead_; }
  void adapt_load_lead(std::chrono::nanoseconds tail);

 private:
  Image current_, previous_;
  std::atomic<std::uint32_t> grid_;
  std::vector<Image> retired_;
  std::size_t retired_bytes_ = 0;
  std::chrono::nanoseconds load_lead_{std::chrono::milliseconds(2)};
};

}  // namespace gpuos::detail
