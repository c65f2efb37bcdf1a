#include "host/submitter.hpp"

#include <cstring>
#include <vector>

namespace gpuos::detail {
namespace {

/// Name of an operator id for messages.
std::string op_label(std::uint32_t id) {
  std::string s = id < GPUOS_BUILTIN_OP_COUNT ? "'" : "#";
  s += id < GPUOS_BUILTIN_OP_COUNT ? gpuos_builtin_op_name(id) : std::to_string(id);
  if (id < GPUOS_BUILTIN_OP_COUNT) s += "'";
  return s;
}

std::string failure_text(std::uint64_t ticket, const SubmitQueue::Result& r) {
  const std::string t = std::to_string(ticket);
  switch (abi::status_code(r.status)) {
    case abi::kTaskBadOp:
      return "task " + t + ": the device has no operator with id " + std::to_string(r.detail);
    case abi::kTaskBadArgs:
      return "task " + t + ": the device rejected the arguments of operator " + std::to_string(r.detail);
    case abi::kTaskDepFailed:
      return "task " + t + " did not run: task " + std::to_string(root_cause(ticket, r.status, r.detail) - 1) +
             ", which it waits for (directly or through other tasks), failed";
    case abi::kTaskNodeFailed:
      return "graph launch " + t + ": node " + std::to_string(r.detail) + " failed (" +
             (abi::node_failure(r.status) == abi::kTaskBadOp ? "its operator is not in the running image"
                                                             : "the device rejected its arguments") +
             "); the nodes after it did not run";
    default:
      return "task " + t + ": failed on the device with status " + std::to_string(r.status);
  }
}

/// A control task: from its ticket on, tasks naming `logical` run jump-table slot `slot`.
abi::Payload control_task(std::uint32_t logical, std::uint32_t slot) {
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = GPUOS_OP_CONTROL;
  p.arg_bytes = sizeof(abi::ControlArgs);
  p.tiles = 1;
  const abi::ControlArgs c{static_cast<std::uint16_t>(logical), static_cast<std::uint16_t>(slot), abi::kControlAlias};
  std::memcpy(p.args, &c, sizeof(c));
  return p;
}

/// Counts a submitter between its closing check and its last publish (close() waits for none).
struct Active {
  std::atomic<int>& n;
  explicit Active(std::atomic<int>& c) : n(c) { n.fetch_add(1, std::memory_order_seq_cst); }
  ~Active() { n.fetch_sub(1, std::memory_order_seq_cst); }
  Active(const Active&) = delete;
  Active& operator=(const Active&) = delete;
};

}  // namespace

Submitter::Submitter(SubmitQueue& q, RunState& run, const AcceptTable& accept, Deadlines& deadlines)
    : q_(q), run_(run), accept_(accept), deadlines_(deadlines) {
  for (std::uint32_t i = 0; i < GPUOS_MAX_OPS; ++i) slots_[i].store(static_cast<std::uint16_t>(i), std::memory_order_relaxed);
}

abi::Payload Submitter::payload_of(const gpuos_task& t, const std::string& where) const {
  if (t.op == GPUOS_OP_HEAP_CTL)
    fail(GPUOS_ERR_INVALID_ARG, where + "operator id " + std::to_string(t.op) +
                                    " is reserved for the runtime's heap requests (use gpuos_alloc / gpuos_free)");
  const std::optional<std::uint32_t> want = accept_.arg_bytes(t.op);
  if (!want) fail(GPUOS_ERR_INVALID_ARG, where + "unknown operator id " + std::to_string(t.op));
  if (t.arg_bytes > GPUOS_MAX_ARG_BYTES)
    fail(GPUOS_ERR_INVALID_ARG, where + "arguments of " + std::to_string(t.arg_bytes) + " bytes exceed " +
                                    std::to_string(GPUOS_MAX_ARG_BYTES));
  if (t.deadline_ms != 0 && t.deadline_ms < GPUOS_MIN_DEADLINE_MS)
    fail(GPUOS_ERR_INVALID_ARG, where + "deadline_ms must be 0 (the operator's or the runtime's) or at least " +
                                    std::to_string(GPUOS_MIN_DEADLINE_MS) + ", got " +
                                    std::to_string(t.deadline_ms));
  if (t.arg_bytes != *want)
    fail(GPUOS_ERR_INVALID_ARG, where + "operator " + op_label(t.op) + " takes " + std::to_string(*want) +
                                    " bytes of arguments, got " + std::to_string(t.arg_bytes));
  if (t.arg_bytes != 0 && !t.args) fail(GPUOS_ERR_INVALID_ARG, where + "args is NULL");
  if (t.tiles == 0 || t.tiles > GPUOS_MAX_TILES)
    fail(GPUOS_ERR_INVALID_ARG, where + "tiles must be in [1, 2^30], got " + std::to_string(t.tiles));
  abi::Payload p;
  std::memset(&p, 0, sizeof(p));
  p.op = static_cast<std::uint16_t>(t.op);
  p.arg_bytes = static_cast<std::uint8_t>(t.arg_bytes);  // <= GPUOS_MAX_ARG_BYTES, checked above
  p.tiles = t.tiles;
  if (t.arg_bytes) std::memcpy(p.args, t.args, t.arg_bytes);
  return p;
}

bool Submitter::submit(const gpuos_task* tasks, std::size_t n, bool blocking, std::uint64_t& first) {
  if (!tasks) fail(GPUOS_ERR_INVALID_ARG, "task is NULL");
  if (n == 0) fail(GPUOS_ERR_INVALID_ARG, "empty batch");
  if (n > q_.capacity())
    fail(GPUOS_ERR_INVALID_ARG, "batch of " + std::to_string(n) + " tasks exceeds the queue capacity " +
                                    std::to_string(q_.capacity()));
  abi::Payload one;
  std::vector<abi::Payload> many;
  abi::Payload* payloads = &one;
  if (n > 1) {
    many.resize(n);
    payloads = many.data();
  }
  std::vector<std::uint32_t> deadlines;
  for (std::size_t i = 0; i < n; ++i) {
    payloads[i] = payload_of(tasks[i], n > 1 ? "task " + std::to_string(i) + ": " : "");
    if (tasks[i].deadline_ms != 0) {
      deadlines.resize(n, 0);
      deadlines[i] = tasks[i].deadline_ms;
    }
  }
  return enqueue(payloads, static_cast<std::uint32_t>(n), blocking, first, deadlines.empty() ? nullptr : deadlines.data());
}

void Submitter::check_issued(const std::uint64_t* after, std::size_t n) const {
  if (n && !after) fail(GPUOS_ERR_INVALID_ARG, "the list of tickets to wait for is NULL");
  const std::uint64_t issued = q_.issued();
  for (std::size_t i = 0; i < n; ++i)
    if (after[i] >= issued)
      fail(GPUOS_ERR_INVALID_ARG, "cannot wait for ticket " + std::to_string(after[i]) +
                                      ": it was never issued (a task can only wait for earlier ones)");
}

std::uint64_t Submitter::submit_after(const gpuos_task& task, const std::uint64_t* after, std::size_t n, Lane* lane) {
  const abi::Payload p = payload_of(task, "");
  check_issued(after, n);
  std::vector<Dep> deps;
  deps.reserve(n);
  for (std::size_t i = 0; i < n; ++i) deps.push_back(Dep{after[i], false});
  return enqueue_after(p, deps, lane, task.deadline_ms);
}

bool Submitter::settled(std::uint64_t first, std::size_t n) const {
  if (run_.faulted()) return true;
  SubmitQueue::Result r;
  for (std::size_t i = 0; i < n; ++i)
    if (!q_.poll(first + i, r)) return false;
  return true;
}

std::uint64_t Submitter::enqueue_one(const abi::Payload& p) {
  std::uint64_t t = 0;
  enqueue(&p, 1, true, t);
  return t;
}

std::uint64_t Submitter::enqueue_after(const abi::Payload& p, const std::vector<Dep>& deps, Lane* lane,
                                       std::uint32_t deadline_ms) {
  std::unique_lock<std::mutex> lane_lock;
  if (lane) lane_lock = std::unique_lock<std::mutex>(lane->mu);
  std::vector<Dep> all = deps;
  if (lane && lane->last) all.push_back(Dep{*lane->last, true});
  // A completed dependency needs no link (retired, or its completion record seen: the task is published
  // after that, so the device runs it after the dependency's writes, as for any task submitted after a
  // wait); its failure (unless it only orders) is the task's cause. A graph launch after a waited-for
  // launch, or a lane's task after a finished one, then goes out as a plain task: no dependency slot.
  std::uint64_t cause = 0;
  auto sift = [&](const std::vector<Dep>& in) {
    std::vector<Dep> live;
    for (const Dep& d : in) {
      SubmitQueue::Result r;  // a retired ticket's is its remembered failure, if any
      if (!q_.poll(d.ticket, r))
        live.push_back(d);
      else if (!d.order_only && cause == 0 && r.status != abi::kTaskOk)
        cause = root_cause(d.ticket, r.status, r.detail);
    }
    return live;
  };
  std::vector<Dep> live = sift(all);
  std::uint64_t t = 0;
  if (live.empty() && cause == 0) {
    enqueue(&p, 1, true, t, deadline_ms ? &deadline_ms : nullptr);
  } else {
    const std::size_t planned = live.size();
    const std::uint32_t n = dep_tickets(planned);
    if (n > q_.capacity() / 2)
      fail(GPUOS_ERR_INVALID_ARG, "a task that waits for " + std::to_string(planned) + " tickets needs " +
                                      std::to_string(n) + " tickets with its join tasks, more than half the queue (" +
                                      std::to_string(q_.capacity()) + ")");
    Active active(active_);
    run_.check_open();
    run_.check_usable();
    std::uint64_t first = 0;
    reserve(n, true, first);
    // Every dependency still unretired is now less than a capacity before the task (its ticket was
    // reserved while fewer than a capacity of tickets were unretired); more may have retired meanwhile.
    live = sift(live);
    const std::vector<abi::Payload> payloads = plan_dependent(first, planned, p, live, cause);
    if (deadline_ms) deadlines_.set_task(first + n - 1, deadline_ms);
    publish(first, payloads, payloads.size() - 1);
    t = first + n - 1;
  }
  if (lane) lane->last = t;
  return t;
}

std::uint64_t Submitter::enqueue_alias(std::uint32_t logical, std::uint32_t slot) {
  return ordered([&] {
    const std::uint64_t t = enqueue_one(control_task(logical, slot));
    slots_[logical].store(static_cast<std::uint16_t>(slot), std::memory_order_release);
    return t;
  });
}

bool Submitter::reserve(std::uint32_t count, bool blocking, std::uint64_t& first) {
  // Back-pressure: room comes back as tasks complete (reaped here too, so a lone submitter makes progress
  // without the monitor). A fault ends the wait with the fault's error.
  return common::wait_until(
      [&] {
        if (q_.try_reserve(count, first)) return true;
        q_.reap();
        if (q_.try_reserve(count, first)) return true;
        run_.check_usable();
        return false;
      },
      blocking ? common::Deadline::never() : common::Deadline::from_ns(0), common::kRoomBackoff);
}

void Submitter::publish(std::uint64_t first, const std::vector<abi::Payload>& payloads, std::size_t task_index) {
  for (std::size_t i = 0; i < payloads.size(); ++i) q_.publish(first + i, payloads[i], i != task_index);
}

bool Submitter::enqueue(const abi::Payload* payloads, std::uint32_t count, bool blocking, std::uint64_t& first,
                        const std::uint32_t* deadlines) {
  Active active(active_);
  run_.check_open();
  run_.check_usable();
  if (!reserve(count, blocking, first)) return false;
  if (deadlines)
    for (std::uint32_t i = 0; i < count; ++i)
      if (deadlines[i]) deadlines_.set_task(first + i, deadlines[i]);
  for (std::uint32_t i = 0; i < count; ++i) q_.publish(first + i, payloads[i]);
  return true;
}

gpuos_status Submitter::wait(std::uint64_t ticket, const common::Deadline& deadline, std::string& why) {
  if (ticket >= q_.issued()) fail(GPUOS_ERR_INVALID_ARG, "ticket " + std::to_string(ticket) + " was never issued");
  SubmitQueue::Result r;
  bool faulted = false;
  const bool done = common::wait_until(
      [&] {
        if (q_.poll(ticket, r)) return true;
        faulted = run_.faulted();
        return faulted;
      },
      deadline, common::kCompletionBackoff);
  if (faulted && !q_.poll(ticket, r)) {
    why = run_.fault_reason();
    return run_.fault_status();
  }
  if (!done) return GPUOS_ERR_TIMEOUT;
  if (r.status == abi::kTaskOk) return GPUOS_OK;
  why = failure_text(ticket, r);
  return GPUOS_ERR_TASK_FAILED;
}

gpuos_status Submitter::drain(const common::Deadline& deadline, std::string& why) {
  const std::uint64_t end = q_.issued();
  bool faulted = false;
  const bool done = common::wait_until(
      [&] {
        if (q_.reap() >= end) return true;
        faulted = run_.faulted();
        return faulted;
      },
      deadline, common::kCompletionBackoff);
  if (faulted && q_.reap() < end) {
    why = run_.fault_reason();
    return run_.fault_status();
  }
  return done ? GPUOS_OK : GPUOS_ERR_TIMEOUT;
}

void Submitter::wait_completed(std::uint64_t end, const common::Deadline& deadline, const std::string& what) {
  const bool done = common::wait_until(
      [&] {
        if (q_.reap() >= end) return true;
        run_.check_usable();
        return false;
      },
      deadline, common::kCompletionBackoff);
  if (!done) fail(GPUOS_ERR_TIMEOUT, what);
}

void Submitter::close() {
  run_.begin_close();
  // Submitters that got past the closing check finish publishing; later ones see UNAVAILABLE.
  common::wait_until([&] { return active_.load(std::memory_order_seq_cst) == 0; }, common::Deadline::never(),
                     common::kRoomBackoff);
}

}  // namespace gpuos::detail
