// A device fault inside a graph launch fails the launch, the launches queued behind it and the tasks
// waiting for them, promptly and with the driver's error; nothing waits for ever. (Its own process: the
// fault takes the context with it.)
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

TEST_CASE("a fault in a graph node fails every pending launch and every task waiting for one") {
  test::DeviceBuffer y(1 << 16);
  Runtime rt;
  // 1000-node chains of small fills; node 600 writes through a bad pointer.
  Graph g;
  std::uint32_t prev = g.add(ops::fill(y.get(), 1.0f, 1 << 16));
  for (int v = 1; v < 1000; ++v) {
    float* out = v == 600 ? reinterpret_cast<float*>(0x10) : y.get();
    prev = g.add(ops::fill(out, float(v), 1 << 16), {prev});
  }
  GraphExec ge(rt, g);
  rt.suspend();  // everything below is pending when the fault happens
  std::vector<Ticket> pending;
  for (int k = 0; k < 5; ++k) {
    pending.push_back(ge.launch());
    pending.push_back(rt.submit_after(ops::nop(), std::span<const Ticket>(&pending.back(), 1)));
  }
  const auto t0 = std::chrono::steady_clock::now();
  rt.resume();
  const gpuos_status s = gpuos_wait(rt.handle(), pending[0], 10'000'000'000);
  CHECK(s == GPUOS_ERR_DEVICE_FAULT);
  CHECK(std::string(gpuos_last_error()).find("CUDA_ERROR_ILLEGAL_ADDRESS") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  for (Ticket t : pending) CHECK(gpuos_wait(rt.handle(), t, 1'000'000'000) == GPUOS_ERR_DEVICE_FAULT);
  // New launches are refused with the same cause; destroying the instance does not hang.
  uint64_t k = 0;
  CHECK(gpuos_graph_launch(rt.handle(), ge.handle(), nullptr, 0, nullptr, &k) == GPUOS_ERR_DEVICE_FAULT);
}
