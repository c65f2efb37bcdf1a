// Latency samples -> percentiles, shared by the `gpuos` tool and the benchmarks.
//
// Percentiles use the nearest-rank rule on the sorted samples, so every reported value is a measured
// sample (no interpolation hides a tail). Times are in nanoseconds.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string_view>
#include <vector>

#include "tools/json_writer.hpp"

namespace gpuos::tools {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Nearest-rank percentile q in [0, 100] of sorted samples (0 for none).
inline double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  auto rank = static_cast<std::size_t>(std::ceil(q / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

struct LatencySummary {
  std::size_t count = 0;
  double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  std::vector<double> quantiles;  ///< 201 points: percentiles 0, 0.5, ..., 100 (for CDF plots)

  static LatencySummary of(std::vector<double> samples) {
    LatencySummary s;
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    s.count = samples.size();
    s.min = samples.front();
    s.max = samples.back();
    s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.count);
    s.p50 = percentile(samples, 50);
    s.p90 = percentile(samples, 90);
    s.p99 = percentile(samples, 99);
    s.p999 = percentile(samples, 99.9);
    s.quantiles.reserve(201);
    for (int i = 0; i <= 200; ++i) s.quantiles.push_back(percentile(samples, i * 0.5));
    return s;
  }

  /// Writes the summary as a JSON object under key, values in the unit of the samples.
  void write(JsonWriter& j, std::string_view key, bool with_quantiles = true) const {
    j.begin_object(key)
        .field("count", static_cast<std::uint64_t>(count))
        .field("min", min)
        .field("mean", mean)
        .field("p50", p50)
        .field("p90", p90)
        .field("p99", p99)
        .field("p99_9", p999)
        .field("max", max);
    if (with_quantiles) j.array("quantiles_0_to_100_step_0_5", quantiles);
    j.end_object();
  }
};

}  // namespace gpuos::tools
