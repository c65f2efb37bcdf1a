// Diagnosis: a plain-text report of a runtime's state, for hangs and bug reports (gpuos_diagnose).
//
// Gathering and formatting are apart: the runtime's components fill a Snapshot (host counters, the
// control words, the oldest pending task's slot and record, the device's scheduler state, the flight
// recorder), and diagnose() is a pure function over it, so its analysis is testable on the CPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernel/wire.h"

namespace gpuos::detail {

struct Snapshot {
  // Host side.
  std::string state;  ///< running, suspended, stopped
  std::uint64_t run_id = 0, launches = 0;
  std::uint64_t issued = 0, retired = 0, capacity = 0;
  std::uint32_t log2_capacity = 0;
  std::string fault;                   ///< empty: none
  std::vector<std::string> anomalies;  ///< scheduler invariants found violated at stops
  // The control block (mapped memory): read twice, 5 ms apart, to tell a moving heartbeat.
  bool have_control = false;
  std::uint64_t stop_run = 0, started_run = 0, heartbeat = 0, heartbeat_later = 0, fetched = 0;
  /// The oldest pending ticket's ring slot stamps and completion record (when one is pending).
  std::vector<std::uint32_t> oldest_stamps;
  std::uint64_t oldest_seq = 0;
  /// Completion records of the pending tickets [retired, issued), in ticket order.
  std::vector<abi::Completion> pending_records;
  // Device memory (copied on a stream of its own while the kernel runs); absent after a fault.
  bool have_device = false;
  std::string device_error;  ///< why the device state could not be read
  abi::DeviceState device{};
  std::vector<abi::TaskRecord> dq;       ///< the whole device queue, indexed by ticket % capacity
  std::vector<std::uint64_t> trace;   ///< the flight recorder (GPUOS_TRACE=1), else empty
};

/// The report: one fact per line.
std::string diagnose(const Snapshot& s);

/// The flight recorder's summary (where a task's time goes inside the front end, the polls around
/// ticket `focus`), appended to `out` line by line.
void trace_report(const std::vector<std::uint64_t>& trace, std::uint64_t focus, std::string& out);

}  // namespace gpuos::detail
