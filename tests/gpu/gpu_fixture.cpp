#include "tests/gpu/gpu_fixture.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace gpuos::test {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::size_t scale() {
  static const std::size_t value = [] {
    const char* v = std::getenv("GPUOS_TEST_SCALE");
    if (v == nullptr || *v == '\0') return std::size_t{1};
    char* end = nullptr;
    const unsigned long long s = std::strtoull(v, &end, 10);
    if (*end != '\0' || s == 0) {
      std::fprintf(stderr, "GPUOS_TEST_SCALE=%s: not a whole number >= 1\n", v);
      std::exit(2);
    }
    return static_cast<std::size_t>(s);
  }();
  return value;
}

std::chrono::milliseconds slowed(std::chrono::milliseconds d) {
  return d * static_cast<std::chrono::milliseconds::rep>(scale());
}

std::size_t scaled(std::size_t n, std::size_t at_least) {
  const std::size_t m = n / scale();
  return m < at_least ? (at_least < n ? at_least : n) : m;
}

void check_next_boot() {
  gpuos_runtime* again = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const gpuos_status s = gpuos_create(nullptr, &again);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("a new runtime in this process: " << std::string(gpuos_status_name(s)) << " "
                                            << std::string(gpuos_last_error()) << " (" << ms << " ms)");
  if (s == GPUOS_OK) {
    uint64_t k = 0;
    gpuos_task nop{GPUOS_OP_NOP, 1, nullptr, 0, 0};
    CHECK(gpuos_submit(again, &nop, &k) == GPUOS_OK);
    CHECK(gpuos_wait(again, k, 5'000'000'000) == GPUOS_OK);
    CHECK(gpuos_destroy(again) == GPUOS_OK);
  } else {
    CHECK(s == GPUOS_ERR_DEVICE_FAULT);
  }
  CHECK(ms < 5000);
}

}  // namespace gpuos::test
