// The heap's layout (host/heap_client.hpp heap_geometry): what the runtime boots with, and what
// bench_alloc measures the allocator at.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "host/heap_client.hpp"
#include "kernel/tlsf.hpp"

using gpuos::detail::heap_geometry;

TEST_CASE("heap geometry: a quarter of a heap of 16 MiB or more is the large arena") {
  const auto g = heap_geometry(256ull << 20, 0, 132);
  CHECK(g.bytes == 256ull << 20);
  CHECK(g.large_bytes == 64ull << 20);
  CHECK(g.large_bytes % gpuos::tlsf::kArenaGranule == 0);
  CHECK(heap_geometry(8ull << 20, 0, 132).large_bytes == 0);
  CHECK(heap_geometry((16ull << 20) + 15, 0, 132).bytes == 16ull << 20);  // rounded down to 16
}

TEST_CASE("heap geometry: automatic arenas are 8 per SM, none below 1 MiB, at least one") {
  CHECK(heap_geometry(8192ull << 20, 0, 132).arenas == 8 * 132);
  CHECK(heap_geometry(256ull << 20, 0, 132).arenas == 192);  // the default heap: 192 MiB of small arenas
  CHECK(heap_geometry(1ull << 20, 0, 132).arenas == 1);
}

TEST_CASE("heap geometry: an explicit arena count is kept, unless an arena would get less than 4 KiB") {
  CHECK(heap_geometry(256ull << 20, 1000, 132).arenas == 1000);
  try {
    (void)heap_geometry(1ull << 20, 4096, 132);
    FAIL("4096 arenas of a 1 MiB heap were accepted");
  } catch (const gpuos::common::Failure& f) {
    CHECK(f.status() == GPUOS_ERR_INVALID_ARG);
  }
}
