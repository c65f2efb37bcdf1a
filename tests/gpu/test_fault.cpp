// A device fault fails every pending task promptly and says why.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

TEST_CASE("an illegal address in an operator fails all pending tasks with the driver's error") {
  {
    Runtime rt;
    rt.suspend();  // queue tasks behind the faulting one so they are pending when it faults
    float* bad = reinterpret_cast<float*>(0x10);
    const Ticket f = rt.submit(ops::fill(bad, 1.0f, 1u << 20));
    std::vector<Ticket> behind;
    for (int i = 0; i < 100; ++i) behind.push_back(rt.submit(ops::nop()));
    const auto t0 = std::chrono::steady_clock::now();
    rt.resume();
    gpuos_status s = gpuos_wait(rt.handle(), f, 10'000'000'000);
    const auto dt = std::chrono::steady_clock::now() - t0;
    CHECK(s == GPUOS_ERR_DEVICE_FAULT);
    const std::string why = gpuos_last_error();
    CHECK(why.find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
    CHECK(dt < 2s);  // promptly, not at a timeout
    // Each task behind it either completed before the fault or fails with it; none hangs.
    size_t settled = 0;
    for (Ticket t : behind) {
      const gpuos_status w = gpuos_wait(rt.handle(), t, 1'000'000'000);
      settled += w == GPUOS_OK || w == GPUOS_ERR_DEVICE_FAULT;
    }
    CHECK(settled == behind.size());
    // New work is refused with the same cause.
    uint64_t k;
    gpuos_task nop{GPUOS_OP_NOP, 1, nullptr, 0, 0};
    CHECK(gpuos_submit(rt.handle(), &nop, &k) == GPUOS_ERR_DEVICE_FAULT);
  }
  // The context died with the fault. Booting again in this process is refused with a clear error
  // naming the cause (no hang): recovering means restarting the process, as serving systems do.
  gpuos_runtime* again = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const gpuos_status s = gpuos_create(nullptr, &again);
  if (s == GPUOS_OK) {
    // A driver that lets the reset primary context recover: then it must work.
    uint64_t k = 0;
    gpuos_task nop{GPUOS_OP_NOP, 1, nullptr, 0, 0};
    CHECK(gpuos_submit(again, &nop, &k) == GPUOS_OK);
    CHECK(gpuos_wait(again, k, 5'000'000'000) == GPUOS_OK);
    gpuos_destroy(again);
  } else {
    CHECK(s == GPUOS_ERR_DEVICE_FAULT);
    CHECK(std::string(gpuos_last_error()).find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}
