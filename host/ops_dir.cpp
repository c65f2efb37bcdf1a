#include "host/ops_dir.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <vector>

#include "common/error.hpp"
#include "host/runtime.hpp"
#include "host/watcher.hpp"

namespace fs = std::filesystem;

namespace gpuos::detail {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Sources of the runtime whose latest version does not serve: none of their versions loaded, or a
/// later one was refused.
uint32_t failing_sources(const std::vector<gpuos_op_info>& ops) {
  uint32_t n = 0;
  for (const gpuos_op_info& o : ops) n += (o.kind == GPUOS_OP_KIND_FAILED || o.error[0]) ? 1u : 0u;
  return n;
}
}  // namespace

OpsDir::OpsDir(Runtime& rt, std::string dir, unsigned debounce_ms, Callback cb, void* user)
    : rt_(rt), dir_(std::move(dir)), cb_(cb), user_(user) {
  if (!fs::is_directory(dir_)) throw common::Failure(GPUOS_ERR_INVALID_ARG, "operator directory '" + dir_ + "' is not a directory");
  WatchOptions wo;
  wo.debounce = std::chrono::milliseconds(debounce_ms);
  wo.report_existing = false;  // loaded below, all in one generation
  watcher_ = std::make_unique<Watcher>(dir_, wo);
  std::vector<std::string> paths;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.is_regular_file() && is_watched_name(e.path().filename().string())) paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> errors;
  const gpuos_generation g = rt_.load_operators(paths, errors);  // compiled concurrently, one generation
  generation_ = g.number;
  loads_ = paths.size() - errors.size();
  failures_ = errors.size();
  const std::vector<gpuos_op_info> ops = rt_.list_ops();
  failing_ = failing_sources(ops);
  std::set<std::string> failed_sources;
  for (const gpuos_op_info& o : ops)
    if (o.kind == GPUOS_OP_KIND_FAILED) {
      failed_sources.insert(o.source);
      report(GPUOS_OPS_DIR_FAILED, o.source, nullptr, o.error, 0.0);
    }
  for (const std::string& p : paths)
    if (!failed_sources.count(p)) report(GPUOS_OPS_DIR_LOADED, p, &g, "", ms_since(t0));
  thread_ = std::thread([this] { loop(); });
}

OpsDir::~OpsDir() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

gpuos_ops_dir_stats OpsDir::stats() const {
  gpuos_ops_dir_stats s{};
  s.loads = loads_.load();
  s.failures = failures_.load();
  s.removals = removals_.load();
  s.generation = generation_.load();
  s.failing = failing_.load();
  s.watching = watcher_->watching() && !stop_.load() ? 1u : 0u;
  return s;
}

void OpsDir::report(gpuos_ops_dir_event_kind kind, const std::string& path, const gpuos_generation* g,
                    const std::string& msg, double ms) {
  if (!cb_) return;
  gpuos_ops_dir_event ev{};
  ev.kind = kind;
  ev.path = path.c_str();
  if (g) ev.generation = *g;
  ev.message = msg.c_str();
  ev.ms = ms;
  cb_(user_, &ev);
}

void OpsDir::loop() {
  while (!stop_.load()) {
    std::vector<WatchEvent> events;
    try {
      events = watcher_->poll(std::chrono::milliseconds(100));
    } catch (const std::exception& e) {
      report(GPUOS_OPS_DIR_FAILED, dir_, nullptr, std::string("watching the directory failed: ") + e.what(), 0.0);
      return;
    }
    for (const WatchEvent& ev : events) {
      if (stop_.load()) return;
      const std::string p = ev.path.string();
      const auto t0 = std::chrono::steady_clock::now();
      try {
        gpuos_generation g;
        if (ev.kind == WatchEventKind::removed) {
          g = rt_.remove_operator_source(p);
          ++removals_;
          generation_ = g.number;
          report(GPUOS_OPS_DIR_REMOVED, p, &g, "", ms_since(t0));
        } else {
          g = rt_.load_operator(p, &ev.content);
          ++loads_;
          generation_ = g.number;
          report(GPUOS_OPS_DIR_LOADED, p, &g, "", ms_since(t0));
        }
      } catch (const common::Failure& e) {
        ++failures_;
        report(GPUOS_OPS_DIR_FAILED, p, nullptr, e.what(), ms_since(t0));
      }
      failing_ = failing_sources(rt_.list_ops());
    }
  }
}

}  // namespace gpuos::detail
