// How many ring slots the front end reads in one poll (one PCIe round trip).
//
// The window doubles while every slot it read was ready (a burst: read more per round trip) and halves
// when it was not, but never below what was ready. From one slot it grows only when that slot carried the
// host's hint that more follow (abi::kHintMore): a task found alone is usually a caller waiting for it,
// whose next task comes after the completion, and a one-slot poll is the shortest round trip (a second
// line costs ~0.3 us on an H100, docs/benchmarks.md, Dispatch). It is always in [1, kMaxWindow]: the
// front end has registers for exactly kMaxWindow slots, and a slot beyond them would be neither read nor
// checked. A pure function, compiled for host and device, so CPU tests pin its bounds.
#pragma once

#include "kernel/wire.h"

namespace gpuos::kern {

inline constexpr abi::uint32_t kMaxWindow = 128;  // slots per poll: 1024 chunks, 4 per thread

GPUOS_HD inline constexpr abi::uint32_t next_window(abi::uint32_t window, abi::uint32_t ready, bool more) {
  abi::uint32_t w = ready >= window && (window > 1 || more) ? window * 2 : window / 2;
  if (w < ready) w = ready;
  if (w < 1) w = 1;
  return w > kMaxWindow ? kMaxWindow : w;
}

}  // namespace gpuos::kern
