// The runtime's statistics as Prometheus text (exposition format 0.0.4): gpuos_metrics and the Python
// package's collector (which parses this text, so both say the same). Pure: the runtime gathers the
// numbers (MetricsInput), this formats them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpuos/gpuos.h"

namespace gpuos::detail {

struct MetricsInput {
  gpuos_stats stats{};
  std::string state;                 ///< the kernel's: running, parked, suspended, stopped, faulted
  std::uint64_t stream_not_run = 0;  ///< stream-ordered tasks their stream reached too late
  gpuos_generation generation{};     ///< the serving generation (its switch's pause)
  std::uint64_t switches = 0;        ///< generation switches so far
  std::vector<gpuos_op_info> ops;
  bool have_heap = false;  ///< false: no heap, or not readable now (suspended, shut down)
  gpuos_heap_stats heap{};
};

/// Every metric with its HELP and TYPE lines; operator metrics labelled operator="<name>".
std::string prometheus_text(const MetricsInput& in);

}  // namespace gpuos::detail
