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
#include "common/wait.hpp"

extern "C" const unsigned char gpuos_image_cubin[];
extern "C" const std::size_t gpuos_image_cubin_size;

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
    "No targets (a diagnostic). Exit status: 0 ran, 1 error, 3 no device, 2 usage.\n"
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
  Spinner(const Module& m, const Stream& s)
      : s_(s),
        host_(256),
        ping_(host_.host<unsigned>()),
        pong_(host_.host<unsigned>(32)),
        fn_(m.get("bench_ping_pong")) {}

  /// Launches the kernel and returns once it runs (it echoed a value).
  void start() {
    std::atomic_ref<unsigned>(*ping_).store(0);
    std::atomic_ref<unsigned>(*pong_).store(0);
    CUdeviceptr dping = host_.device<unsigned>(), dpong = host_.device<unsigned>(32);
    void* params[] = {&dping, &dpong};
    KernelLaunch{fn_, 1, 1, 0, params}.launch(s_.get());
    std::atomic_ref<unsigned>(*ping_).store(++seq_);
    if (!common::wait_until([&] { return std::atomic_ref<unsigned>(*pong_).load() == seq_; },
                            common::Deadline::after(std::chrono::seconds(5)), common::kControlBackoff))
      die("the spinning kernel did not start within 5 s");  // it may yet run: no destructor may wait for it
  }
  /// Asks the kernel to exit and waits for the stream with cuStreamQuery (as the runtime does); returns
  /// the wait (us) and the time of the exit in *exit_ns.
  double stop(std::int64_t* exit_ns) {
    const std::int64_t t0 = now_ns();
    std::atomic_ref<unsigned>(*ping_).store(kPingStop);
    const bool exited = common::wait_until(
        [&] {
          const CUresult r = drv().cuStreamQuery(s_.get());
          if (r != CUDA_ERROR_NOT_READY) GPUOS_CU_TRY(r);
          return r == CUDA_SUCCESS;
        },
        common::Deadline::after(std::chrono::seconds(5)), common::kControlBackoff);
    if (!exited) die("the spinning kernel did not exit within 5 s of its stop");
    *exit_ns = now_ns();
    return static_cast<double>(*exit_ns - t0) * 1e-3;
  }

 private:
  const Stream& s_;
  const MappedHost host_;
  unsigned* ping_;
  unsigned* pong_;
  CUfunction fn_;
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
  const Module m(bench_kernels_cubin);
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
      GPUOS_CU_TRY(drv().cuModuleLoadData(&mod, img.data));
      const double l = us_since(t0);
      t0 = now_ns();
      GPUOS_CU_TRY(drv().cuModuleUnload(mod));
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
        if (std::string(call) == "unload") GPUOS_CU_TRY(drv().cuModuleLoadData(&mod, gpuos_image_cubin));
        spin.start();
        std::atomic<std::int64_t> returned{0};
        // The call's thread: a failure there ends the process (the spinning kernel may still run).
        std::thread t([&] {
          guarded(call, [&] {
            dev.make_current();
            if (std::string(call) == "load")
              GPUOS_CU_TRY(drv().cuModuleLoadData(&mod, gpuos_image_cubin));
            else
              GPUOS_CU_TRY(drv().cuModuleUnload(mod));
          });
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
        if (std::string(call) == "load") GPUOS_CU_TRY(drv().cuModuleUnload(mod));
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
  std::printf("no targets: bench_module is a diagnostic (the floor of a generation switch's pause)\n");
  return Verdicts("bench_module").conclude(j, json);
}

}  // namespace
}  // namespace gpuos::bench

int main(int argc, char** argv) { return gpuos::bench::run_main("bench_module", gpuos::bench::run, argc, argv); }
