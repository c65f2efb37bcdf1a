// The diagnosis report is a pure function of a snapshot: what it says about a stuck runtime is checked
// here on made-up states.
#include <doctest/doctest.h>

#include <string>

#include "host/diagnose.hpp"

using namespace gpuos::detail;
using namespace gpuos;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

Snapshot stuck() {
  Snapshot s;
  s.state = "running";
  s.run_id = 3;
  s.launches = 3;
  s.issued = 10;
  s.retired = 7;
  s.capacity = 64;
  s.log2_capacity = 6;
  s.have_control = true;
  s.heartbeat = 100;
  s.heartbeat_later = 164;
  s.fetched = 10;
  s.oldest_stamps.assign(abi::kSlotChunks, abi::stamp_of(7, 6));
  s.pending_records = {abi::Completion{0, 0, 0}, abi::Completion{9, 0, 1}, abi::Completion{0, 0, 0}};
  s.oldest_seq = 0;
  s.have_device = true;
  s.device.head = 10;
  s.device.claim = 11;
  s.device.completed = 9;
  s.device.board[5] = 0x7f0000001001;  // a ready batch (| 1)
  s.dq.resize(64);
  s.dq[7].ticket = 7;
  s.dq[7].pending = 2;
  s.dq[7].payload.op = GPUOS_OP_ADD;
  s.dq[7].payload.tiles = 4;
  return s;
}
}  // namespace

TEST_CASE("diagnose: a stuck task is named with its entry, and the tickets without a record are counted") {
  const std::string r = diagnose(stuck());
  CHECK(contains(r, "host: state=running run_id=3 launches=3 issued=10 retired=7 capacity=64"));
  CHECK(contains(r, "heartbeat=164 (moving)"));
  CHECK(contains(r, "oldest pending ticket 7"));
  CHECK(contains(r, "board (record, or batch|1): [5]=0x7f0000001001"));
  CHECK(contains(r, "completed=9"));
  CHECK(contains(r, "device queue entry of ticket 7: ticket=7"));
  CHECK(contains(r, "pending=2 op=3 tiles=4"));
  CHECK(contains(r, "missing ticket 7"));
  CHECK_FALSE(contains(r, "missing ticket 8"));  // its record is there
  CHECK(contains(r, "missing ticket 9"));
  CHECK(contains(r, "pending tickets without a completion: 2 of 3"));
}

TEST_CASE("diagnose: after a fault the report says why and reads no device state") {
  Snapshot s = stuck();
  s.fault = "the device faulted: CUDA_ERROR_ILLEGAL_ADDRESS";
  s.heartbeat_later = s.heartbeat;
  const std::string r = diagnose(s);
  CHECK(contains(r, "fault: the device faulted: CUDA_ERROR_ILLEGAL_ADDRESS"));
  CHECK(contains(r, "(still)"));
  CHECK_FALSE(contains(r, "device:"));
  CHECK_FALSE(contains(r, "missing ticket"));
}

TEST_CASE("diagnose: unreadable device state is reported, not hidden") {
  Snapshot s = stuck();
  s.have_device = false;
  s.device_error = "cuMemcpyDtoHAsync failed";
  CHECK(contains(diagnose(s), "device state unreadable: cuMemcpyDtoHAsync failed"));
}

TEST_CASE("diagnose: scheduler anomalies found at stops are listed") {
  Snapshot s = stuck();
  s.anomalies = {"run 2 (launch 2): closed=0"};
  CHECK(contains(diagnose(s), "scheduler invariant violated at stop: run 2 (launch 2): closed=0"));
}
