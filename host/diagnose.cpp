#include "host/diagnose.hpp"

#include <algorithm>
#include <cstdio>

namespace gpuos::detail {
namespace {

std::string u(std::uint64_t v) { return std::to_string(v); }
std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

std::string diagnose(const Snapshot& s) {
  std::string out;
  auto line = [&](const std::string& l) { out += l + "\n"; };
  line("host: state=" + s.state + " run_id=" + u(s.run_id) + " launches=" + u(s.launches) + " issued=" + u(s.issued) +
       " retired=" + u(s.retired) + " capacity=" + u(s.capacity));
  if (!s.fault.empty()) line("fault: " + s.fault);
  for (const std::string& a : s.anomalies) line("scheduler invariant violated at stop: " + a);
  if (!s.have_control) return out;
  std::string control = "control: stop_run=" + u(s.stop_run) + " started_run=" + u(s.started_run);
  control += " heartbeat=" + u(s.heartbeat_later) + (s.heartbeat_later != s.heartbeat ? " (moving)" : " (still)");
  control += " fetched=" + u(s.fetched);
  line(control);
  if (!s.fault.empty()) return out;
  const std::uint64_t t = s.retired, mask = s.capacity - 1;
  if (t < s.issued && !s.oldest_stamps.empty()) {
    std::string stamps;
    for (std::size_t i = 0; i < s.oldest_stamps.size(); ++i) {
      if (i) stamps += ',';
      stamps += u(s.oldest_stamps[i]);
    }
    line("oldest pending ticket " + u(t) + ": ring stamps=[" + stamps + "] expected=" +
         u(abi::stamp_of(t, s.log2_capacity)) + "; completion seq=" + u(s.oldest_seq) + " (done when " + u(t + 1) + ")");
  }
  if (!s.have_device) {
    if (!s.device_error.empty()) line("device state unreadable: " + s.device_error);
    return out;
  }
  const abi::DeviceState& ds = s.device;
  std::string board;
  for (std::uint32_t i = 0; i < abi::kBoardSize; ++i)
    if (ds.board[i]) board += " [" + std::to_string(i) + "]=" + hex(ds.board[i]);
  line("device: head=" + u(ds.head) + " claim=" + u(ds.claim) + " completed=" + u(ds.completed) + " closed=" + u(ds.closed) +
       " launches=" + u(ds.launches) + " special post/taken/done=" + u(ds.special_post) + "/" + u(ds.special_taken) + "/" +
       u(ds.special_done) + " board (record, or batch|1):" + (board.empty() ? " empty" : board));
  if (t < s.issued) {
    const abi::TaskRecord& e = s.dq[t & mask];
    line("device queue entry of ticket " + u(t) + ": ticket=" + u(e.ticket) + " claim.remaining=" +
         std::to_string(abi::claim_remaining(e.claim)) + " claim.tag=" + u(static_cast<std::uint32_t>(e.claim)) +
         " pending=" + u(e.pending) + " op=" + u(e.payload.op) + " tiles=" + u(e.payload.tiles) + " mark=" + u(e.mark) +
         " deps_left=" + std::to_string(e.deps_left) + " waiters=" + hex(e.waiters) + " cause=" + u(e.cause) + " exec=" + hex(e.exec));
  }
  // Every pending ticket without a completion record (the first few in detail).
  std::uint64_t missing = 0;
  for (std::uint64_t k = t; k < s.issued && k - t < s.pending_records.size(); ++k) {
    const abi::Completion& c = s.pending_records[k - t];
    if (c.seq == k + 1) continue;
    if (++missing <= 16) {
      const abi::TaskRecord& d = s.dq[k & mask];
      line("  missing ticket " + u(k) + ": completion seq=" + u(c.seq) + " status=" + u(c.status) + " detail=" +
           u(c.detail) + "; entry ticket=" + u(d.ticket) + " remaining=" + std::to_string(abi::claim_remaining(d.claim)) +
           " pending=" + u(d.pending) + " mark=" + u(d.mark));
    }
  }
  if (t < s.issued) line("pending tickets without a completion: " + u(missing) + " of " + u(s.issued - t));
  if (!s.trace.empty()) trace_report(s.trace, t, out);
  return out;
}

void trace_report(const std::vector<std::uint64_t>& trace, std::uint64_t t, std::string& out) {
  using std::uint64_t;
  using std::uint32_t;
  auto line = [&](const std::string& l) { out += l + "\n"; };
  // The recorder's position is kept in a register while the kernel runs: order the records by
  // (launch, head) instead, then show discontinuities (a poll that did not start where the previous one
  // ended) and the polls around the oldest pending ticket.
  struct Rec { uint64_t head, ready, window, launch, t_issue, t_return, t_done, steps, t[7], cycles; };
  std::vector<Rec> recs;
  for (uint32_t i = 0; i < abi::kTraceRecords; ++i) {
    const uint64_t* w = &trace[abi::kTraceWords * i];
    if (w[1] != 0) recs.push_back({w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], {w[8], w[9], w[10], w[11], w[12], w[13], w[14]}, w[15]});
  }
  // Where a task's time goes inside the front end (device clock): the poll's round trip over the
  // bus, and the hand-over (a lone task: run + completion record; else: copy + publish).
  auto is_lone = [](const Rec& r) { return ((r.window >> 32) & 1u) != 0; };
  auto pct = [](std::vector<double>& v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  };
  for (const bool lone : {true, false}) {
    std::vector<double> rt, work, barrier, tiled, recorded, pace;
    for (const Rec& r : recs) {
      if (is_lone(r) != lone || r.t_return < r.t_issue || r.t_done < r.t_return) continue;
      rt.push_back(static_cast<double>(r.t_return - r.t_issue) * 1e-3);
      work.push_back(static_cast<double>(r.t_done - r.t_return) * 1e-3);
      pace.push_back(static_cast<double>(r.window >> 40) * 1e-3);
      if (r.steps) {
        barrier.push_back(static_cast<double>(abi::trace_step(r.steps, 0)) * 1e-3);
        tiled.push_back(static_cast<double>(abi::trace_step(r.steps, 1)) * 1e-3);
        recorded.push_back(static_cast<double>(abi::trace_step(r.steps, 2)) * 1e-3);
      }
    }
    if (rt.empty()) continue;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "front-end timing (%s, %zu polls): poll round trip p50 %.2f us p90 %.2f us; %s p50 %.2f us "
                  "p90 %.2f us; pacing p50 %.2f us",
                  lone ? "lone tasks" : "copied tasks", rt.size(), pct(rt, 0.5), pct(rt, 0.9),
                  lone ? "run + completion record" : "copy + publish", pct(work, 0.5), pct(work, 0.9),
                  pct(pace, 0.5));
    line(buf);
    if (!tiled.empty()) {
      std::snprintf(buf, sizeof buf,
                    "front-end timing (lone tasks): after the poll, all chunks in p50 %.2f us, tile done p50 "
                    "%.2f us, completion record written p50 %.2f us",
                    pct(barrier, 0.5), pct(tiled, 0.5), pct(recorded, 0.5));
      line(buf);
    }
  }
  {
    // A lone task's steps inside the front end (words 8-14 of its record), p50 of each.
    static const char* const names[6] = {"to the call", "call entered", "staged, validated", "operator returned",
                                          "tile barrier", "record written"};
    std::vector<double> d[6], mhz;
    for (const Rec& r : recs) {
      if (!is_lone(r) || r.t[0] == 0 || r.t[6] == 0) continue;
      bool ordered = true;
      for (int k = 0; k < 6; ++k) ordered = ordered && r.t[k + 1] >= r.t[k];
      if (!ordered) continue;
      for (int k = 0; k < 6; ++k) d[k].push_back(static_cast<double>(r.t[k + 1] - r.t[k]) * 1e-3);
      if (r.t[6] > r.t[2]) mhz.push_back(static_cast<double>(r.cycles) * 1e3 / static_cast<double>(r.t[6] - r.t[2]));
    }
    if (!d[0].empty()) {
      std::string l = "front-end timing (lone tasks, steps after all chunks are in, p50 us):";
      for (int k = 0; k < 6; ++k) {
        char b[64];
        std::snprintf(b, sizeof b, " %s +%.3f", names[k], pct(d[k], 0.5));
        l += b;
      }
      if (!mhz.empty()) {
        char b[64];
        std::snprintf(b, sizeof b, "; SM clock p50 %.0f MHz", pct(mhz, 0.5));
        l += b;
      }
      line(l);
    }
  }
  {
    // Lone tasks back to back (the closed loop): from one's completion record to the next one's
    // poll issue, and whether an empty poll came between (the slow mode pacing is meant to remove).
    std::vector<Rec> by_time(recs);
    std::sort(by_time.begin(), by_time.end(), [](const Rec& a, const Rec& b) { return a.t_issue < b.t_issue; });
    std::vector<double> gap;
    size_t extra = 0;
    for (size_t i = 1; i < by_time.size(); ++i) {
      const Rec &a = by_time[i - 1], &b = by_time[i];
      if (!is_lone(a) || !is_lone(b) || b.head != a.head + 1 || b.t_issue < a.t_done) continue;
      const double g = static_cast<double>(b.t_issue - a.t_done) * 1e-3;
      gap.push_back(g);
      // An empty poll in between: the finding poll began later than the pacing alone explains.
      if (g > static_cast<double>(b.window >> 40) * 1e-3 + 0.6) ++extra;
    }
    if (!gap.empty()) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "front-end timing (lone after lone, %zu pairs): record -> next finding poll issued p50 %.2f us "
                    "p90 %.2f us; an empty poll between in %.1f%%",
                    gap.size(), pct(gap, 0.5), pct(gap, 0.9), 100.0 * static_cast<double>(extra) / static_cast<double>(gap.size()));
      line(buf);
    }
  }
  std::sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) {
    return a.launch != b.launch ? a.launch < b.launch : a.head < b.head;
  });
  line("front-end trace: " + u(recs.size()) + " records");
  uint64_t shown = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    const Rec& r = recs[i];
    const bool covers = t >= r.head && t < r.head + r.ready;
    const bool jump = i > 0 && r.head != recs[i - 1].head + recs[i - 1].ready;
    const bool near = r.head + r.ready + 300 > t && r.head < t + 300;
    if ((jump || covers || near) && shown++ < 50) {
      // Device times (us): since the previous record's hand-over ended, the poll's round trip, the hand-over.
      char times[128];
      const Rec* prev = i > 0 && recs[i - 1].launch == r.launch ? &recs[i - 1] : nullptr;
      std::snprintf(times, sizeof times, " after %.2f, poll %.2f, hand-over %.2f",
                    prev && r.t_issue >= prev->t_done ? static_cast<double>(r.t_issue - prev->t_done) * 1e-3 : -1.0,
                    static_cast<double>(r.t_return - r.t_issue) * 1e-3, static_cast<double>(r.t_done - r.t_return) * 1e-3);
      line("  head=" + u(r.head) + " ready=" + u(r.ready) + " window=" + u(r.window & 0xffffffffu) +
           " lone=" + u((r.window >> 32) & 1u) + " launch=" + u(r.launch) + times + (jump ? " JUMP" : "") +
           (covers ? " COVERS" : ""));
    }
  }
}

}  // namespace gpuos::detail
