// bench_module: what the driver's module load and unload cost, and whether either can overlap a
// running kernel. A generation switch (hot-patching) pauses serving for exactly these calls, so this
// is the pause's floor and the test of every idea to shorten it.
//
//   idle        cuModuleLoadData / cuModuleUnload of the gpuos image and of a small cubin, nothing running
//   overlap     the call is made on a second thread while a never-ending kernel runs (the ping-pong
//               kernel); the main thread waits --lead-us, stops the kernel through mapped memory, waits
//               for it to exit with cuStreamQuery (as the runtime does), and records when the call
//               returned, counted from the stop. If the driver does its host work before waiting for
//               the device, the call returns shortly after the exit, and a switch could start the
//               load before it stops the kernel.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_common.hpp"

extern "C" const unsigned char gpuos_image_cubin[];
extern "C" const std::size_t gpuos_image_cubin_size;
extern "C" const unsigned char bench_kernels_cubin[];
extern "C" const std::size_t bench_kernels_cubin_size;

namespace gpuos::bench {
namespace {

constexpr unsigned kPingStop = 0xffffffffu;  // BENCH_PING_STOP in bench_kernels.cu

const char* kHelp =
    "usage: bench_module [--device N] [--iters N] [--lead-us LIST] [--json FILE]\n"
    "\n"
    "Module load and unload by the driver (the floor of a generation switch's pause):\n"
    "  idle     cuModuleLoadData / cuModuleUnload with nothing running (gpuos image, small cubin)\n"
    "  overlap  the call made on another thread while a kernel runs; the kernel is stopped --lead-us\n"
    "           later; reports when the call returned, counted from the kernel's exit\n"
    "\n"
    "Options:\n"
    "  --device N      CUDA device (default 0)\n"
    "  --iters N       repetitions of each measurement (default 20)\n"
    "  --lead-us LIST  delays between starting the call and stopping the kernel (default 0,2000,20000)\n"
    "  --json FILE     result file (default bench_module.json)\n";

struct Image {
  const char* name;
  const unsigned char* data;
  std::size_t bytes;
};

double us_since(std::int64_t t0) { return static_cast<double>(now_ns() - t0) * 1e-3; }

/// A never-ending kernel (the ping-pong kernel) and the mapped words that start and stop it.
class Spinner {
 public:
  Spinner(const BenchModule& m, const Stream& s) : s_(s) {
    BENCH_CU(cuMemHostAlloc(&host_, 256, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    ping_ = static_cast<unsigned*>(host_);
    pong_ = static_cast<unsigned*>(host_) + 32;
    BENCH_CU(cuMemHostGetDevicePointer(&dping_, ping_, 0));
    BENCH_CU(cuMemHostGetDevicePointer(&dpong_, pong_, 0));
    fn_ = m.get("bench_ping_pong");
  }
  ~Spinner() { BENCH_CU(cuMemFreeHost(host_)); }

  /// Launches the kernel and returns once it runs (it echoed a value).
  void start() {
    std::atomic_ref<unsigned>(*ping_).store(0);
    std::atomic_ref<unsigned>(*pong_).store(0);
    void* params[] = {&dping_, &dpong_};
    BENCH_CU(cuLaunchKernel(fn_, 1, 1, 1, 1, 1, 1, 0, s_.get(), params, nullptr));
    std::atomic_ref<unsigned>(*ping_).store(++seq_);
    const std::int64_t t0 = now_ns();
    while (std::atomic_ref<unsigned>(*pong_).load() != seq_) {
      if (now_ns() - t0 > 5'000'000'000) {
        std::fprintf(stderr, "bench_module: error: the spinning kernel did not start\n");
        std::exit(1);
      }
    }
  }
  /// Asks the kernel to exit and waits for the stream with cuStreamQuery; returns the wait (us) and
  /// the time of the exit in *exit_ns.
  double stop(std::int64_t* exit_ns) {
    const std::int64_t t0 = now_ns();
    std::atomic_ref<unsigned>(*ping_).store(kPingStop);
    for (;;) {
      const CUresult r = cuStreamQuery(s_.get());
      if (r == CUDA_SUCCESS) break;
      if (r != CUDA_ERROR_NOT_READY) BENCH_CU(r);
    }
    *exit_ns = now_ns();
    return static_cast<double>(*exit_ns - t0) * 1e-3;
  }

 private:
  const Stream& s_;
  void* host_ = nullptr;
  unsigned* ping_ = nullptr;
  unsigned* pong_ = nullptr;
  CUdeviceptr dping_ = 0, dpong_ = 0;
  CUfunction fn_ = nullptr;
  unsigned seq_ = 0;
};

struct OverlapRow {
  std::string call;
  int lead_us = 0;
  std::vector<double> before_stop_us;   // the call returned before the kernel was asked to stop (count)
  std::vector<double> after_exit_us;    // call return - kernel exit (negative: returned before the exit)
  std::vector<double> stop_wait_us;     // stop request -> cuStreamQuery says done
};

int run(int argc, char** argv) {
  Flags f(argc, argv, kHelp);
  const int device = static_cast<int>(f.integer("--device", 0, 0, 1023));
  const int iters = static_cast<int>(f.integer("--iters", 20, 1, 100000));
  const std::vector<std::int64_t> leads = f.list("--lead-us", {0, 2000, 20000}, 0, 10'000'000);
  const std::string json = f.text("--json", "bench_module.json");
  f.finish();

  DeviceContext dev(device);
  Stream s;
  BenchModule m;
  const Image images[] = {{"gpuos image", gpuos_image_cubin, gpuos_image_cubin_size},
                          {"small cubin", bench_kernels_cubin, bench_kernels_cubin_size}};
  std::printf("bench_module on %s (driver %d, %s), %d iterations\n", dev.name.c_str(), dev.driver_version,
              gpuos_build_info(), iters);

  // ---- idle ----
  struct IdleRow {
    const Image* img;
    LatencySummary load, unload;
  };
  std::vector<IdleRow> idle;
  for (const Image& img : images) {
    std::vector<double> load, unload;
    for (int i = 0; i < iters + 2; ++i) {
      CUmodule mod = nullptr;
      std::int64_t t0 = now_ns();
      BENCH_CU(cuModuleLoadData(&mod, img.data));
      const double l = us_since(t0);
      t0 = now_ns();
      BENCH_CU(cuModuleUnload(mod));
      const double u = us_since(t0);
      if (i >= 2) {
        load.push_back(l);
        unload.push_back(u);
      }
    }
    idle.push_back({&img, LatencySummary::of(std::move(load)), LatencySummary::of(std::move(unload))});
  }
  std::printf("\nidle (nothing running)\n%-12s %10s %12s %12s %12s %12s\n", "image", "bytes", "load p50 us",
              "load p99 us", "unload p50", "unload p99");
  for (const IdleRow& r : idle)
    std::printf("%-12s %10zu %12.1f %12.1f %12.1f %12.1f\n", r.img->name, r.img->bytes, r.load.p50, r.load.p99,
                r.unload.p50, r.unload.p99);

  // ---- overlap ----
  Spinner spin(m, s);
  std::vector<OverlapRow> rows;
  for (const char* call : {"load", "unload"}) {
    for (const std::int64_t lead : leads) {
      OverlapRow row{call, static_cast<int>(lead), {}, {}, {}};
      for (int i = 0; i < iters; ++i) {
        CUmodule mod = nullptr;
        if (std::string(call) == "unload") BENCH_CU(cuModuleLoadData(&mod, gpuos_image_cubin));
        spin.start();
        std::atomic<std::int64_t> returned{0};
        std::thread t([&] {
          BENCH_CU(cuCtxSetCurrent(dev.ctx));
          if (std::string(call) == "load")
            BENCH_CU(cuModuleLoadData(&mod, gpuos_image_cubin));
          else
            BENCH_CU(cuModuleUnload(mod));
          returned.store(now_ns());
        });
        std::this_thread::sleep_for(std::chrono::microseconds(lead));
        const std::int64_t stop_at = now_ns();
        std::int64_t exit_ns = 0;
        row.stop_wait_us.push_back(spin.stop(&exit_ns));
        t.join();
        const std::int64_t r = returned.load();
        if (r < stop_at) row.before_stop_us.push_back(static_cast<double>(stop_at - r) * 1e-3);
        row.after_exit_us.push_back(static_cast<double>(r - exit_ns) * 1e-3);
        if (std::string(call) == "load") BENCH_CU(cuModuleUnload(mod));
      }
      rows.push_back(std::move(row));
    }
  }
  std::printf("\noverlap (the call made on another thread while a kernel runs; the kernel stopped lead us later)\n"
              "%-7s %8s %14s %14s %14s %14s %14s\n",
              "call", "lead us", "returned early", "ret-exit p50", "ret-exit p99", "ret-exit min", "stop wait p50");
  for (OverlapRow& r : rows) {
    const LatencySummary a = LatencySummary::of(r.after_exit_us);
    const LatencySummary w = LatencySummary::of(r.stop_wait_us);
    std::printf("%-7s %8d %14zu %14.1f %14.1f %14.1f %14.1f\n", r.call.c_str(), r.lead_us, r.before_stop_us.size(),
                a.p50, a.p99, a.min, w.p50);
  }

  JsonWriter j;
  j.begin_object();
  write_header(j, "bench_module", dev);
  j.field("iters", iters).field("unit", "us");
  j.begin_array("idle");
  for (const IdleRow& r : idle) {
    j.begin_object().field("image", r.img->name).field("bytes", static_cast<std::uint64_t>(r.img->bytes));
    r.load.write(j, "load");
    r.unload.write(j, "unload");
    j.end_object();
  }
  j.end_array();
  j.begin_array("overlap");
  for (OverlapRow& r : rows) {
    j.begin_object().field("call", r.call).field("lead_us", r.lead_us).field(
        "returned_before_stop", static_cast<std::uint64_t>(r.before_stop_us.size()));
    LatencySummary::of(r.after_exit_us).write(j, "return_minus_exit");
    LatencySummary::of(r.stop_wait_us).write(j, "stop_wait");
    j.end_object();
  }
  j.end_array();
  j.end_object();
  save_json(j, json);
  return 0;
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_module", gpuos::bench::run, argc, argv); }
