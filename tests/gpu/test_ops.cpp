// Every built-in operator against a CPU reference, at sizes that hit one tile, many tiles, partial
// tiles and unaligned pointers. Under GPUOS_TEST_SCALE the large sizes are smaller (still many tiles,
// partial ones included) and the time bounds longer (gpu_fixture.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;

namespace {
constexpr size_t kTile = GPUOS_ELEMS_PER_TILE;

/// 1 element, around one tile and its boundary, 10 tiles, and two large sizes: 256 tiles and 3 elements,
/// and 4,096 tiles, at full scale; divided by GPUOS_TEST_SCALE, at least 8 tiles and 3 elements, and 16
/// tiles.
std::vector<size_t> op_sizes() {
  return {1, 255, 256, 4096, 4097, 40000, kTile * test::scaled(256, 8) + 3, kTile * test::scaled(4096, 16)};
}

size_t mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += got[i] != want[i];
  return bad;
}
}  // namespace

TEST_CASE("element-wise built-ins match the CPU") {
  const std::vector<size_t> kSizes = op_sizes();
  const size_t max_n = *std::max_element(kSizes.begin(), kSizes.end());
  test::DeviceBuffer a(max_n + 1), b(max_n + 1), out(max_n + 1);
  Runtime rt;
  for (size_t n : kSizes) {
    for (size_t off : {size_t(0), size_t(1)}) {  // off = 1: pointers not 16-byte aligned
      CAPTURE(n);
      CAPTURE(off);
      const auto ha = test::random_floats(n, n * 3 + off), hb = test::random_floats(n, n * 7 + off);
      a.upload(ha, off);
      b.upload(hb, off);
      float* pa = a.get() + off;
      float* pb = b.get() + off;
      float* po = out.get() + off;
      std::vector<float> want(n);

      CHECK(rt.wait(rt.submit(ops::add(po, pa, pb, n)), test::slowed(10s)));
      for (size_t i = 0; i < n; ++i) want[i] = ha[i] + hb[i];
      CHECK(mismatches(out.download(n, off), want) == 0);

      CHECK(rt.wait(rt.submit(ops::mul(po, pa, pb, n)), test::slowed(10s)));
      for (size_t i = 0; i < n; ++i) want[i] = ha[i] * hb[i];
      CHECK(mismatches(out.download(n, off), want) == 0);

      CHECK(rt.wait(rt.submit(ops::copy(po, pa, n)), test::slowed(10s)));
      CHECK(mismatches(out.download(n, off), ha) == 0);

      CHECK(rt.wait(rt.submit(ops::fill(po, 0.5f + float(n % 7), n)), test::slowed(10s)));
      CHECK(mismatches(out.download(n, off), std::vector<float>(n, 0.5f + float(n % 7))) == 0);

      // y = alpha * x + y, in place on b.
      CHECK(rt.wait(rt.submit(ops::axpy(pb, -1.5f, pa, n)), test::slowed(10s)));
      for (size_t i = 0; i < n; ++i) want[i] = std::fma(-1.5f, ha[i], hb[i]);
      CHECK(mismatches(b.download(n, off), want) == 0);
    }
  }
  // A task of a partial tile writes nothing past its last element: a copy of 100, two sentinels after it.
  const auto ha = test::random_floats(100, 1);
  out.upload(std::vector<float>(2, 42.0f), 100);
  a.upload(ha);
  CHECK(rt.wait(rt.submit(ops::copy(out.get(), a.get(), 100)), test::slowed(10s)));
  CHECK(out.download(2, 100) == std::vector<float>(2, 42.0f));
}

TEST_CASE("sum reduces in float64 across tiles") {
  const std::vector<size_t> kSizes = op_sizes();
  const size_t max_n = *std::max_element(kSizes.begin(), kSizes.end());
  test::DeviceBuffer x(max_n + 1), out(1);
  Runtime rt;
  for (size_t n : kSizes) {
    for (size_t off : {size_t(0), size_t(1)}) {
      CAPTURE(n);
      CAPTURE(off);
      const auto hx = test::random_floats(n, n + off);
      x.upload(hx, off);
      out.upload({12345.0f});
      CHECK(rt.wait(rt.submit(ops::sum(out.get(), x.get() + off, n)), test::slowed(10s)));
      double ref = 0, mag = 0;
      for (float v : hx) {
        ref += v;
        mag += std::fabs(v);
      }
      const float got = out.download(1)[0];
      CHECK(std::fabs(double(got) - ref) <= 1e-6 * mag + 1e-6);
    }
  }
}

TEST_CASE("many multi-tile tasks in flight at once") {
  // 64 tasks of 1M elements (256 tiles) each at full scale, all submitted before any wait: the board
  // spreads their tiles. Under GPUOS_TEST_SCALE at least 16 tasks of 8 tiles.
  const size_t n = kTile * test::scaled(256, 8), k = test::scaled(64, 16);
  test::DeviceBuffer a(n * k), out(n * k);
  const auto ha = test::random_floats(n * k, 99);
  a.upload(ha);
  Runtime rt;
  std::vector<Ticket> ts;
  for (size_t i = 0; i < k; ++i) ts.push_back(rt.submit(ops::mul(out.get() + i * n, a.get() + i * n, a.get() + i * n, n)));
  for (Ticket t : ts) CHECK(rt.wait(t, test::slowed(20s)));
  std::vector<float> want(n * k);
  for (size_t i = 0; i < n * k; ++i) want[i] = ha[i] * ha[i];
  CHECK(mismatches(out.download(), want) == 0);
}

TEST_CASE("a large task's claims: every tile exactly once under each claim setting") {
  // How blocks claim a large task's tiles is tunable (common/config.hpp: GPUOS_CLAIM_SPREAD,
  // GPUOS_CLAIM_AHEAD, GPUOS_TILE_BATCH, read at boot). A sum of ones counts the tiles' elements: a tile
  // run twice or skipped changes it. Sizes: fewer tiles than blocks, about a grid, many grids.
  struct Setting {
    const char* spread;
    const char* ahead;
    const char* batch;
  };
  const Setting settings[] = {{nullptr, nullptr, nullptr}, {"1", nullptr, nullptr}, {"1", "0", nullptr},
                              {nullptr, "0", nullptr},     {"64", nullptr, "1"},   {"1", nullptr, "64"}};
  // 10, 513 and 4096 tiles at full scale; under GPUOS_TEST_SCALE the last two divided by the scale, at
  // least 33 and 64 tiles (both with a partial last tile).
  const size_t sizes[] = {40000, kTile * test::scaled(512, 32) + 7, kTile * test::scaled(4096, 64) - 5};
  const size_t max_n = sizes[2];
  test::DeviceBuffer ones(max_n), a(max_n), out(max_n), sum(1);
  ones.upload(std::vector<float>(max_n, 1.0f));
  const auto ha = test::random_floats(max_n, 5);
  a.upload(ha);
  auto set = [](const char* name, const char* v) {
    if (v) ::setenv(name, v, 1); else ::unsetenv(name);
  };
  for (const Setting& st : settings) {
    CAPTURE(std::string(st.spread ? st.spread : "-") + "/" + (st.ahead ? st.ahead : "-") + "/" + (st.batch ? st.batch : "-"));
    set("GPUOS_CLAIM_SPREAD", st.spread);
    set("GPUOS_CLAIM_AHEAD", st.ahead);
    set("GPUOS_TILE_BATCH", st.batch);
    Runtime rt;
    set("GPUOS_CLAIM_SPREAD", nullptr);
    set("GPUOS_CLAIM_AHEAD", nullptr);
    set("GPUOS_TILE_BATCH", nullptr);
    for (size_t n : sizes) {
      CAPTURE(n);
      sum.upload({-1.0f});
      CHECK(rt.wait(rt.submit(ops::sum(sum.get(), ones.get(), n)), test::slowed(10s)));
      CHECK(sum.download(1)[0] == static_cast<float>(n));
      out.upload(std::vector<float>(n, -7.0f));
      CHECK(rt.wait(rt.submit(ops::add(out.get(), a.get(), a.get(), n)), test::slowed(10s)));
      const auto got = out.download(n);
      size_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad += got[i] != ha[i] + ha[i];
      CHECK(bad == 0);
    }
  }
}
