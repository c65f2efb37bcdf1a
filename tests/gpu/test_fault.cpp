// A device fault fails every pending task promptly and says why; the process can start over.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

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
  // The runtime reset the context on destroy: a new one boots and works.
  Runtime again;
  CHECK(again.wait(again.submit(ops::nop()), 5s));
}
