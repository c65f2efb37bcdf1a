#include "host/metrics.hpp"

#include <cstdio>

namespace gpuos::detail {
namespace {

/// A label value with the format's escapes (backslash, double quote, newline).
std::string escaped(const char* s) {
  std::string out;
  for (; *s; ++s) {
    if (*s == '\\') out += "\\\\";
    else if (*s == '"') out += "\\\"";
    else if (*s == '\n') out += "\\n";
    else out += *s;
  }
  return out;
}

class Writer {
 public:
  /// HELP and TYPE lines of a metric family.
  void family(const char* name, const char* type, const char* help) {
    out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const char* name, double v, const std::string& labels = "") {
    char num[64];
    std::snprintf(num, sizeof num, "%.17g", v);
    out_ += std::string(name) + (labels.empty() ? "" : "{" + labels + "}") + " " + num + "\n";
  }
  void one(const char* name, const char* type, const char* help, double v) {
    family(name, type, help);
    sample(name, v);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string prometheus_text(const MetricsInput& in) {
  Writer w;
  const gpuos_stats& s = in.stats;
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  w.family("gpuos_kernel_state", "gauge", "1 for the resident kernel's state");
  w.sample("gpuos_kernel_state", 1, "state=\"" + escaped(in.state.c_str()) + "\"");
  w.one("gpuos_tasks_submitted_total", "counter", "Tickets issued.", d(s.submitted));
  w.one("gpuos_tasks_completed_total", "counter", "Tasks completed (ran or were rejected).", d(s.completed));
  w.one("gpuos_tasks_failed_total", "counter", "Tasks the device rejected or that failed with a dependency.", d(s.failed));
  w.one("gpuos_queue_depth", "gauge", "Tasks submitted and not yet completed.", d(s.queue_depth));
  w.one("gpuos_kernel_launches_total", "counter",
        "Resident kernel launches: boot, resumes, generation switches, slices, parks.", d(s.launches));
  w.one("gpuos_stream_tasks_not_run_total", "counter",
        "Stream-ordered tasks their stream reached after the runtime closed or faulted.", d(in.stream_not_run));
  w.one("gpuos_generation", "gauge", "The serving generation (0: the built-in image).", d(in.generation.number));
  w.one("gpuos_generation_switches_total", "counter", "Generation switches so far.", d(in.switches));
  w.one("gpuos_generation_switch_pause_seconds", "gauge",
        "How long the serving generation's switch dispatched nothing.", d(in.generation.pause_ns) * 1e-9);
  w.family("gpuos_operator_tasks_completed_total", "counter", "Tasks of an operator that completed.");
  for (const gpuos_op_info& o : in.ops)
    w.sample("gpuos_operator_tasks_completed_total", d(o.completed), "operator=\"" + escaped(o.name) + "\"");
  w.family("gpuos_operator_tasks_failed_total", "counter", "Tasks of an operator the device rejected.");
  for (const gpuos_op_info& o : in.ops)
    w.sample("gpuos_operator_tasks_failed_total", d(o.failed), "operator=\"" + escaped(o.name) + "\"");
  if (in.have_heap) {
    const gpuos_heap_stats& h = in.heap;
    w.one("gpuos_heap_pool_bytes", "gauge", "The device heap's pool.", d(h.pool_bytes));
    w.one("gpuos_heap_used_bytes", "gauge", "Bytes of used blocks, headers included.", d(h.used_bytes));
    w.one("gpuos_heap_free_bytes", "gauge", "Bytes of free blocks.", d(h.free_bytes));
    w.one("gpuos_heap_largest_free_bytes", "gauge", "The largest free block.", d(h.largest_free));
    w.one("gpuos_heap_used_blocks", "gauge", "Blocks in use.", d(h.used_blocks));
    w.one("gpuos_heap_fragmentation_ratio", "gauge",
          "1 - (sum over arenas of the largest free block) / free bytes; 0: unfragmented.", h.fragmentation);
    w.one("gpuos_heap_allocs_total", "counter", "Successful allocations (host and device).", d(h.allocs));
    w.one("gpuos_heap_frees_total", "counter", "Frees.", d(h.frees));
    w.one("gpuos_heap_failed_allocs_total", "counter", "Allocations that failed.", d(h.failed_allocs));
    w.one("gpuos_heap_refused_frees_total", "counter", "Frees refused: foreign or double.", d(h.bad_free + h.double_free));
  }
  return w.take();
}

}  // namespace gpuos::detail
