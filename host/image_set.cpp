#include "host/image_set.hpp"

#include <algorithm>
#include <thread>

#include "gpuos/op_entry.h"
#include "host/cu_check.hpp"
#include "host/driver.hpp"

namespace gpuos::detail {

std::shared_ptr<PendingLoad> PendingLoad::start(CUcontext ctx, const std::vector<char>& image) {
  auto p = std::make_shared<PendingLoad>();
  p->image_ = image;
  std::thread([p, ctx] {
    CUresult r = drv().cuCtxSetCurrent(ctx);
    CUmodule m = nullptr;
    if (r == CUDA_SUCCESS) r = drv().cuModuleLoadData(&m, p->image_.data());
    std::lock_guard<std::mutex> lock(p->m_);
    p->r_ = r;
    p->module_ = m;
    p->returned_ = std::chrono::steady_clock::now();
    p->done_ = true;
    p->cv_.notify_all();
  }).detach();
  return p;
}

bool PendingLoad::wait_for(std::chrono::nanoseconds d) {
  std::unique_lock<std::mutex> lock(m_);
  return cv_.wait_for(lock, d, [&] { return done_; });
}

CUresult PendingLoad::result() const {
  std::lock_guard<std::mutex> lock(m_);
  return r_;
}

CUmodule PendingLoad::module() const {
  std::lock_guard<std::mutex> lock(m_);
  return module_;
}

std::chrono::steady_clock::time_point PendingLoad::returned() const {
  std::lock_guard<std::mutex> lock(m_);
  return returned_;
}

std::vector<TableRow> read_jump_table(CUmodule module) {
  CUdeviceptr table = 0;
  size_t bytes = 0;
  GPUOS_CU_TRY(drv().cuModuleGetGlobal(&table, &bytes, module, "gpuos_op_table"));
  std::vector<CUdeviceptr> rows(GPUOS_MAX_OPS, 0);
  GPUOS_CU_TRY(drv().cuMemcpyDtoH(rows.data(), table, std::min<size_t>(bytes, rows.size() * sizeof(CUdeviceptr))));
  std::vector<TableRow> out;
  for (uint32_t id = 0; id < GPUOS_MAX_OPS; ++id) {
    if (rows[id] == 0) continue;
    OpEntry e{};
    GPUOS_CU_TRY(drv().cuMemcpyDtoH(&e, rows[id], sizeof(e)));
    if (e.tile != nullptr) out.push_back({id, e.arg_bytes});
  }
  return out;
}

void ImageSet::install(const Image& next) {
  if (previous_.module) {
    retired_.push_back(previous_);
    retired_bytes_ += previous_.bytes;
  }
  previous_ = current_;
  current_ = next;
  grid_.store(current_.grid, std::memory_order_relaxed);
}

void ImageSet::swap_previous() {
  std::swap(current_, previous_);
  grid_.store(current_.grid, std::memory_order_relaxed);
}

void ImageSet::unload_retired() {
  for (const Image& r : retired_) GPUOS_CU_TRY(drv().cuModuleUnload(r.module));
  retired_.clear();
  retired_bytes_ = 0;
}

bool ImageSet::trim_retired() {
  bool any = false;
  while (retired_bytes_ > kMaxRetiredBytes && !retired_.empty()) {
    drv().cuModuleUnload(retired_.front().module);
    retired_bytes_ -= retired_.front().bytes;
    retired_.erase(retired_.begin());
    any = true;
  }
  return any;
}

void ImageSet::unload_all() noexcept {
  for (const Image& r : retired_) drv().cuModuleUnload(r.module);
  retired_.clear();
  retired_bytes_ = 0;
  if (previous_.module) drv().cuModuleUnload(previous_.module);
  if (current_.module) drv().cuModuleUnload(current_.module);
  previous_ = current_ = Image{};
}

void ImageSet::adapt_load_lead(std::chrono::nanoseconds tail) {
  if (tail > std::chrono::microseconds(150))
    load_lead_ = std::min<std::chrono::nanoseconds>(2 * load_lead_, std::chrono::milliseconds(16));
}

}  // namespace gpuos::detail
