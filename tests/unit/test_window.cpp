// The front end's poll window: how many ring slots one PCIe round trip reads.
#include <doctest/doctest.h>

#include <initializer_list>

#include "kernel/window.hpp"

using gpuos::kern::kMaxWindow;
using gpuos::kern::next_window;

TEST_CASE("the poll window stays within [1, kMaxWindow] for every window and readiness") {
  // The front end has registers for kMaxWindow slots; a larger window would count slots it never read
  // as ready and skip their tasks. Exhaustive over every reachable pair.
  for (uint32_t w = 1; w <= kMaxWindow; ++w)
    for (uint32_t r = 0; r <= w; ++r)
      for (const bool more : {false, true}) {
        const uint32_t n = next_window(w, r, more);
        CHECK_MESSAGE(n >= 1, "window ", w, " ready ", r, " more ", more);
        CHECK_MESSAGE(n <= kMaxWindow, "window ", w, " ready ", r, " more ", more);
        CHECK_MESSAGE(n >= r, "window ", w, " ready ", r, " more ", more);  // never below what was just ready
      }
}

TEST_CASE("the poll window grows in a burst, shrinks when idle") {
  CHECK(next_window(1, 1, true) == 2);
  CHECK(next_window(64, 64, false) == 128);
  CHECK(next_window(72, 72, false) == kMaxWindow);  // a non-power-of-two window must not double past the cap
  CHECK(next_window(kMaxWindow, kMaxWindow, true) == kMaxWindow);
  CHECK(next_window(34, 21, false) == 21);  // halved, but not below what was ready
  CHECK(next_window(128, 0, false) == 64);
  CHECK(next_window(1, 0, false) == 1);
  // From any start, a run of full polls whose first slot says more follow reaches the cap and stays.
  for (uint32_t w0 = 1; w0 <= kMaxWindow; ++w0) {
    uint32_t w = w0;
    for (int i = 0; i < 16; ++i) w = next_window(w, w, true);
    CHECK(w == kMaxWindow);
  }
}

TEST_CASE("a task found alone keeps the poll at one slot unless the host said more follow") {
  CHECK(next_window(1, 1, false) == 1);  // a waiting caller: the cheapest round trip
  CHECK(next_window(1, 1, true) == 2);   // a burst: grow
  // A burst whose hint was missed once (a race between submitting threads) still grows at the next one.
  uint32_t w = next_window(1, 1, false);
  w = next_window(w, 1, true);
  CHECK(w == 2);
}
