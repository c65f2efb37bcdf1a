// The staging ring of graph launches' updates (host/staging.hpp), against a model: rooms never overlap,
// stay inside the ring, and come back once their launch retires.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "host/staging.hpp"

using namespace gpuos::detail;

TEST_CASE("staging ring: rooms never overlap and come back in ticket order") {
  std::mt19937_64 rng(3);
  for (std::uint64_t size : {64ull, 1000ull, 4096ull}) {
    StagingRing ring(size);
    struct Room {
      std::uint64_t begin, end, ticket;
    };
    std::vector<Room> live;
    std::uint64_t ticket = 0, retired = 0, taken = 0, waits = 0;
    for (int step = 0; step < 20000; ++step) {
      if (rng() % 3 == 0 && retired < ticket) {
        retired += 1 + rng() % (ticket - retired);
        ring.reclaim(retired);
        std::erase_if(live, [&](const Room& r) { return r.ticket < retired; });
      }
      const std::uint64_t bytes = 1 + rng() % (size / 3);
      const auto at = ring.take(bytes);
      if (!at) {
        ++waits;
        if (live.empty()) FAIL("a take found no room in an empty ring");
        continue;
      }
      CHECK(*at + bytes <= size);
      for (const Room& r : live) CHECK((*at + bytes <= r.begin || *at >= r.end));
      if (rng() % 10 == 0) {
        ring.abort();
        continue;
      }
      ring.commit(ticket);
      live.push_back({*at, *at + bytes, ticket++});
      ++taken;
      std::uint64_t used = 0;
      for (const Room& r : live) used += r.end - r.begin;
      CHECK(ring.used() == used);
    }
    CHECK(taken > 1000);
    CHECK(waits > 0);
  }
}

TEST_CASE("staging ring: a room as large as the ring fits once the ring is empty") {
  StagingRing ring(256);
  REQUIRE(ring.take(256));
  ring.commit(7);
  CHECK_FALSE(ring.take(1));
  ring.reclaim(8);
  CHECK(ring.take(256) == 0u);
}
