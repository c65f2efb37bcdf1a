// The slot encoding: one read of a slot must say both "ready" and what the task is, and a torn or stale
// slot must never look ready.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "kernel/wire.h"
#include "gpuos/builtin_ops.h"

using namespace gpuos::abi;

namespace {
Payload random_payload(std::mt19937_64& rng) {
  Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = static_cast<uint16_t>(rng() % GPUOS_MAX_OPS);
  p.arg_bytes = static_cast<uint8_t>(rng() % (GPUOS_MAX_ARG_BYTES + 1));
  p.hints = static_cast<uint8_t>(rng() % 2);
  p.tiles = static_cast<uint32_t>(rng() % GPUOS_MAX_TILES) + 1;
  for (auto& b : p.args) b = static_cast<unsigned char>(rng());
  return p;
}
}  // namespace

TEST_CASE("a slot round-trips its payload and stamp") {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 1000; ++i) {
    const Payload p = random_payload(rng);
    const uint64_t t = rng() >> 8;
    Slot s;
    encode_slot(p, stamp_of(t, 16), s);
    Payload q;
    REQUIRE(decode_slot(s, stamp_of(t, 16), q));
    CHECK(std::memcmp(&p, &q, sizeof(p)) == 0);
  }
}

TEST_CASE("a slot with any chunk from another lap is not ready") {
  std::mt19937_64 rng(2);
  const uint32_t log2 = 6;
  const uint64_t t = 1000;
  Slot now, before;
  encode_slot(random_payload(rng), stamp_of(t, log2), now);
  encode_slot(random_payload(rng), stamp_of(t - (1u << log2), log2), before);
  for (uint32_t torn = 0; torn < kSlotChunks; ++torn) {
    Slot s = now;
    s.c[torn] = before.c[torn];
    Payload q;
    CHECK_FALSE(decode_slot(s, stamp_of(t, log2), q));
  }
  Payload q;
  CHECK_FALSE(decode_slot(before, stamp_of(t, log2), q));
}

TEST_CASE("zeroed memory never looks like a task") {
  Slot zero;
  std::memset(&zero, 0, sizeof(zero));
  Payload q;
  CHECK_FALSE(decode_slot(zero, stamp_of(0, 16), q));
  CHECK(stamp_of(0, 16) != 0);
  CHECK(stamp_of((1ull << 16) - 1, 16) == stamp_of(0, 16));
  CHECK(stamp_of(1ull << 16, 16) != stamp_of(0, 16));
}

TEST_CASE("claim words: remaining count and tag") {
  uint64_t c = make_claim(3, 0x1234567890ull);
  CHECK(claim_remaining(c) == 3);
  CHECK(static_cast<uint32_t>(c) == 0x34567890u);
  for (int i = 2; i >= -5; --i) {
    c -= kClaimOne;
    CHECK(claim_remaining(c) == i);
    CHECK(static_cast<uint32_t>(c) == 0x34567890u);  // decrements never disturb the tag
  }
  CHECK(claim_remaining(0) == 0);  // a zeroed entry hands out nothing
}

TEST_CASE("the flight recorder's steps word: three 21-bit fields, saturating") {
  const uint64_t w = trace_steps(5, 70000, 2000000);
  CHECK(trace_step(w, 0) == 5);
  CHECK(trace_step(w, 1) == 70000);
  CHECK(trace_step(w, 2) == 2000000);
  const uint64_t big = trace_steps(1ull << 40, 1ull << 21, kTraceStepMask);
  CHECK(trace_step(big, 0) == kTraceStepMask);  // no field spills into its neighbour
  CHECK(trace_step(big, 1) == kTraceStepMask);
  CHECK(trace_step(big, 2) == kTraceStepMask);
  CHECK(trace_step(trace_steps(0, 1, 0), 0) == 0);
  CHECK(trace_step(trace_steps(0, 1, 0), 2) == 0);
}

TEST_CASE("tile counts of the built-ins") {
  CHECK(gpuos_tiles_for(0) == 1);
  CHECK(gpuos_tiles_for(1) == 1);
  CHECK(gpuos_tiles_for(GPUOS_ELEMS_PER_TILE) == 1);
  CHECK(gpuos_tiles_for(GPUOS_ELEMS_PER_TILE + 1) == 2);
  CHECK(gpuos_tiles_for(64ull << 20) == 16384);
}

TEST_CASE("heap requests: the reserved operator id, the request in a slot, the reply's layout") {
  CHECK(GPUOS_ABI_VERSION == 9u);
  CHECK(offsetof(DeviceState, max_batch) == 304);
  CHECK(offsetof(DeviceState, pace_limit_ns) == 308);
  CHECK(offsetof(DeviceState, claim_spread) == 312);
  CHECK(offsetof(DeviceState, claim_ahead_off) == 316);
  CHECK(GPUOS_OP_HEAP_CTL == GPUOS_MAX_OPS - 1);
  CHECK(GPUOS_OP_HEAP_CTL >= GPUOS_BUILTIN_OP_COUNT);
  CHECK(sizeof(LaunchParams) == 64);
  CHECK(offsetof(LaunchParams, heap) == 56);
  CHECK(sizeof(HeapCtlArgs) <= GPUOS_MAX_ARG_BYTES);
  // A request survives the slot encoding like any other payload.
  Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = GPUOS_OP_HEAP_CTL;
  p.arg_bytes = sizeof(HeapCtlArgs);
  p.tiles = 1;
  const HeapCtlArgs a{kHeapAlloc, 0, 4096, 256, 0x7f0000001000ull};
  std::memcpy(p.args, &a, sizeof(a));
  Slot s;
  encode_slot(p, stamp_of(9, 6), s);
  Payload q;
  REQUIRE(decode_slot(s, stamp_of(9, 6), q));
  HeapCtlArgs b;
  std::memcpy(&b, q.args, sizeof(b));
  CHECK(q.op == GPUOS_OP_HEAP_CTL);
  CHECK(b.cmd == kHeapAlloc);
  CHECK(b.a == 4096);
  CHECK(b.b == 256);
  CHECK(b.reply == 0x7f0000001000ull);
  CHECK(sizeof(HeapReply) == 384);
  CHECK(offsetof(HeapReply, stats) == 16);
  CHECK(offsetof(HeapReply, check_ok) == 136);
  CHECK(offsetof(HeapReply, message) == 152);
}
