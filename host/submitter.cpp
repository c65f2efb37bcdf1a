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
  return "task " + std::to_string(ticket) + ": " +
         (r.status == abi::kTaskBadOp ? "the device has no operator with id " + std::to_string(r.detail)
                                      : "the device rejected the arguments of operator " + std::to_string(r.detail));
}

}  // namespace

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
  for (std::size_t i = 0; i < n; ++i) {
    const gpuos_task& t = tasks[i];
    auto where = [&] { return n > 1 ? "task " + std::to_string(i) + ": " : std::string(); };
    if (t.op == GPUOS_OP_HEAP_CTL)
      fail(GPUOS_ERR_INVALID_ARG, where() + "operator id " + std::to_string(t.op) +
                                      " is reserved for the runtime's heap requests (use gpuos_alloc / gpuos_free)");
    const std::optional<std::uint32_t> want = accept_.arg_bytes(t.op);
    if (!want) fail(GPUOS_ERR_INVALID_ARG, where() + "unknown operator id " + std::to_string(t.op));
    if (t.arg_bytes > GPUOS_MAX_ARG_BYTES)
      fail(GPUOS_ERR_INVALID_ARG, where() + "arguments of " + std::to_string(t.arg_bytes) + " bytes exceed " +
                                      std::to_string(GPUOS_MAX_ARG_BYTES));
    if (t.arg_bytes != *want)
      fail(GPUOS_ERR_INVALID_ARG, where() + "operator " + op_label(t.op) + " takes " + std::to_string(*want) +
                                      " bytes of arguments, got " + std::to_string(t.arg_bytes));
    if (t.arg_bytes != 0 && !t.args) fail(GPUOS_ERR_INVALID_ARG, where() + "args is NULL");
    if (t.tiles == 0 || t.tiles > GPUOS_MAX_TILES)
      fail(GPUOS_ERR_INVALID_ARG, where() + "tiles must be in [1, 2^30], got " + std::to_string(t.tiles));
    abi::Payload& p = payloads[i];
    std::memset(&p, 0, sizeof(p));
    p.op = static_cast<std::uint16_t>(t.op);
    p.arg_bytes = static_cast<std::uint8_t>(t.arg_bytes);  // <= GPUOS_MAX_ARG_BYTES, checked above
    p.tiles = t.tiles;
    if (t.arg_bytes) std::memcpy(p.args, t.args, t.arg_bytes);
  }
  return enqueue(payloads, static_cast<std::uint32_t>(n), blocking, first);
}

std::uint64_t Submitter::enqueue_one(const abi::Payload& p) {
  std::uint64_t t = 0;
  enqueue(&p, 1, true, t);
  return t;
}

bool Submitter::enqueue(const abi::Payload* payloads, std::uint32_t count, bool blocking, std::uint64_t& first) {
  struct Active {
    std::atomic<int>& n;
    explicit Active(std::atomic<int>& c) : n(c) { n.fetch_add(1, std::memory_order_seq_cst); }
    ~Active() { n.fetch_sub(1, std::memory_order_seq_cst); }
  } active(active_);
  run_.check_open();
  run_.check_usable();
  // Back-pressure: room comes back as tasks complete (reaped here too, so a lone submitter makes progress
  // without the monitor). A fault ends the wait with the fault's error.
  const bool reserved = common::wait_until(
      [&] {
        if (q_.try_reserve(count, first)) return true;
        q_.reap();
        if (q_.try_reserve(count, first)) return true;
        run_.check_usable();
        return false;
      },
      blocking ? common::Deadline::never() : common::Deadline::from_ns(0), common::kRoomBackoff);
  if (!reserved) return false;
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
    return GPUOS_ERR_DEVICE_FAULT;
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
    return GPUOS_ERR_DEVICE_FAULT;
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
