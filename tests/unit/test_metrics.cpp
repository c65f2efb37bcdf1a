// The Prometheus text of gpuos_metrics (host/metrics.cpp): every family has its HELP and TYPE before its
// samples, sample lines parse, labels are escaped, and the heap's lines appear only when read.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "host/metrics.hpp"

using gpuos::detail::MetricsInput;
using gpuos::detail::prometheus_text;

namespace {

MetricsInput sample_input() {
  MetricsInput in;
  in.stats.submitted = 120;
  in.stats.completed = 100;
  in.stats.failed = 3;
  in.stats.queue_depth = 20;
  in.stats.launches = 7;
  in.state = "running";
  in.stream_not_run = 2;
  in.generation.number = 4;
  in.generation.pause_ns = 170000;
  in.switches = 4;
  gpuos_op_info a{};
  std::strcpy(a.name, "add");
  a.completed = 90;
  a.failed = 1;
  gpuos_op_info b{};
  std::strcpy(b.name, "we\"ird\\name");
  b.completed = 10;
  in.ops = {a, b};
  return in;
}

/// name{labels} -> value of every sample line; checks each family's HELP/TYPE come first.
std::map<std::string, double> parse(const std::string& text) {
  std::map<std::string, double> out;
  std::map<std::string, int> declared;  // family -> seen HELP (1) then TYPE (2)
  const std::regex help(R"(# HELP ([a-z_]+) .+)"), type(R"(# TYPE ([a-z_]+) (counter|gauge))"),
      sample(R"(([a-z_]+)(\{[a-z_]+="(?:[^"\\]|\\.)*"\})? (-?[0-9.e+-]+))");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, help)) {
      CHECK(declared[m[1]] == 0);
      declared[m[1]] = 1;
    } else if (std::regex_match(line, m, type)) {
      CHECK(declared[m[1]] == 1);
      declared[m[1]] = 2;
    } else {
      INFO(line);
      REQUIRE(std::regex_match(line, m, sample));
      CHECK(declared[m[1]] == 2);
      out[m[1].str() + m[2].str()] = std::stod(m[3]);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("metrics: the runtime's statistics as Prometheus text") {
  const std::map<std::string, double> v = parse(prometheus_text(sample_input()));
  CHECK(v.at("gpuos_kernel_state{state=\"running\"}") == 1);
  CHECK(v.at("gpuos_tasks_submitted_total") == 120);
  CHECK(v.at("gpuos_tasks_completed_total") == 100);
  CHECK(v.at("gpuos_tasks_failed_total") == 3);
  CHECK(v.at("gpuos_queue_depth") == 20);
  CHECK(v.at("gpuos_kernel_launches_total") == 7);
  CHECK(v.at("gpuos_stream_tasks_not_run_total") == 2);
  CHECK(v.at("gpuos_generation") == 4);
  CHECK(v.at("gpuos_generation_switches_total") == 4);
  CHECK(v.at("gpuos_generation_switch_pause_seconds") == doctest::Approx(170e-6));
  CHECK(v.at("gpuos_operator_tasks_completed_total{operator=\"add\"}") == 90);
  CHECK(v.at("gpuos_operator_tasks_failed_total{operator=\"add\"}") == 1);
  CHECK(v.at("gpuos_operator_tasks_completed_total{operator=\"we\\\"ird\\\\name\"}") == 10);
  CHECK(v.count("gpuos_heap_used_bytes") == 0);  // not read
}

TEST_CASE("metrics: the heap's lines when it was read") {
  MetricsInput in = sample_input();
  in.have_heap = true;
  in.heap.pool_bytes = 1 << 20;
  in.heap.used_bytes = 4096;
  in.heap.free_bytes = (1 << 20) - 4096;
  in.heap.largest_free = 1000000;
  in.heap.fragmentation = 0.25;
  in.heap.allocs = 5;
  in.heap.frees = 4;
  in.heap.bad_free = 1;
  in.heap.double_free = 2;
  const std::map<std::string, double> v = parse(prometheus_text(in));
  CHECK(v.at("gpuos_heap_pool_bytes") == 1 << 20);
  CHECK(v.at("gpuos_heap_used_bytes") == 4096);
  CHECK(v.at("gpuos_heap_fragmentation_ratio") == 0.25);
  CHECK(v.at("gpuos_heap_allocs_total") == 5);
  CHECK(v.at("gpuos_heap_refused_frees_total") == 3);
}
