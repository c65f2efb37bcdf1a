// Dependencies between tasks, resolved on the device: the protocol on TaskRecord's line 1, written once
// for the device and the host (the CPU tests run it with threads, tests/unit/test_deps.cpp).
//
// A task T that waits for tickets d1..dk (all earlier than T, all in the ring's window) is registered
// once T is copied, in ticket order, so every earlier ticket's record is already there (register_waits):
// begin_wait, then wait_for each d (a link of T pushed on d's waiter list, unless d is already complete),
// then the count (deps_done). Whoever takes T's deps_left to zero, the registration or the completer of
// T's last dependency at dep_done, makes T ready.
//
// A host ticket d completes in this order: close_waiters (its list is closed, kWaitDone), every waiter on
// the list gets dep_done, then its completion record (the waiters first: an acquire-release atomic behind
// a store to host memory waits for that store). Closing before the record matters: once the host sees
// the record it may retire d and reuse its record for ticket d + capacity, and a list still open then
// could be taken over by the new ticket's waiters. (A task the front end runs itself, alone, may
// store the closed word after its record instead: nobody can register on it before the front end has
// moved past it.)
//
// A failed ticket closes its list with kWaitFailed and its `cause` (the root cause: its own ticket + 1,
// or the cause it inherited), written before the close; its waiters inherit the cause and complete
// failed without running (kTaskDepFailed).
//
// A dependency that only orders T (kDepOrderOnly: a lane, a graph instance's previous launch) passes no
// failure on.
//
// Graph nodes count arrivals up across launches instead (arrive).
#ifndef GPUOS_KERNEL_DEPS_HPP
#define GPUOS_KERNEL_DEPS_HPP

#include <cuda/atomic>

#include "kernel/wire.h"

namespace gpuos::deps {
using namespace gpuos::abi;

template <class T>
using ref = cuda::atomic_ref<T, cuda::thread_scope_device>;

/// What registering a wait found.
enum class Wait : uint32_t { registered, satisfied, failed };

/// The link id of slot j of the task record at index i (i = ticket & mask).
GPUOS_HD inline constexpr uint32_t link_id(uint64_t index, uint32_t j) {
  return static_cast<uint32_t>(index) * kMaxDeps + j;
}

/// Before registering: T's record starts with `count` dependencies plus the registration's own hold,
/// `cause` (0, or a failure the host already knew of) and `weak` (bit j: dependency j only orders T).
GPUOS_HD inline void begin_wait(TaskRecord& t, uint32_t count, uint64_t cause, uint32_t weak) {
  ref<uint32_t>(t.weak).store(weak, cuda::memory_order_relaxed);
  ref<uint64_t>(t.cause).store(cause, cuda::memory_order_relaxed);
  ref<uint32_t>(t.deps_left).store(count + 1, cuda::memory_order_relaxed);
}

/// Registers task `t_ticket` (record dq[t_ticket & mask]) as waiting for ticket d through its link slot j.
/// `cause` receives d's cause when d failed. Precondition: d < t_ticket and d is in the ring's window, so
/// dq[d & mask] holds d or a former ticket (armed before t_ticket was published), and no later ticket
/// that reuses it is being armed (the front end never copies t_ticket and d + capacity in one poll).
GPUOS_HD inline Wait wait_for(TaskRecord* dq, uint64_t mask, uint64_t t_ticket, uint32_t j, uint64_t d,
                              uint64_t& cause) {
  TaskRecord& rd = dq[d & mask];
  TaskRecord& rt = dq[t_ticket & mask];
  ref<uint64_t> word(rd.waiters);
  uint64_t cur = word.load(cuda::memory_order_acquire);
  const uint64_t mine = wait_word(d, link_id(t_ticket & mask, j) + 1);
  for (;;) {
    const bool current = wait_is_for(cur, d);  // another tag: a former ticket's word, empty and open
    if (current && (cur & kWaitDone)) {
      if (!(cur & kWaitFailed)) return Wait::satisfied;
      cause = ref<uint64_t>(rd.cause).load(cuda::memory_order_relaxed);
      return Wait::failed;
    }
    ref<uint32_t>(rt.links[j]).store(current ? static_cast<uint32_t>(cur & kWaitHeadMask) : 0u,
                                     cuda::memory_order_relaxed);
    if (word.compare_exchange_weak(cur, mine, cuda::memory_order_acq_rel, cuda::memory_order_acquire))
      return Wait::registered;
  }
}

/// T inherits `cause` (nonzero: the root cause of a failed dependency it does not only order on), unless
/// it has one already.
GPUOS_HD inline void inherit(TaskRecord& t, uint64_t cause) {
  if (!cause) return;
  uint64_t none = 0;
  ref<uint64_t>(t.cause).compare_exchange_strong(none, cause, cuda::memory_order_relaxed);
}

/// A dependency of T is complete (failed with `cause` when nonzero). True when T is ready now.
GPUOS_HD inline bool dep_done(TaskRecord& t, uint64_t cause) {
  inherit(t, cause);
  return ref<uint32_t>(t.deps_left).fetch_sub(1u, cuda::memory_order_acq_rel) == 1u;
}

/// A registration that found `k` of T's dependencies complete (and took no link for them) is done: their
/// count and the registration's hold come off T's count in one atomic. True when T is ready now.
GPUOS_HD inline bool deps_done(TaskRecord& t, uint32_t k) {
  return ref<uint32_t>(t.deps_left).fetch_sub(k, cuda::memory_order_acq_rel) == k;
}


/// Closes ticket d's waiter list (d completed; failed with `cause` when nonzero, written first) and
/// returns its head (a link id + 1, 0 for none). Call before d's completion record.
GPUOS_HD inline uint32_t close_waiters(TaskRecord& rd, uint64_t d, uint64_t cause) {
  if (cause) ref<uint64_t>(rd.cause).store(cause, cuda::memory_order_relaxed);
  const uint64_t closed = wait_word(d, kWaitDone | (cause ? kWaitFailed : 0));
  const uint64_t old = ref<uint64_t>(rd.waiters).exchange(closed, cuda::memory_order_acq_rel);
  return wait_is_for(old, d) ? static_cast<uint32_t>(old & kWaitHeadMask) : 0u;
}

/// The closed word of a ticket nobody can have registered on yet (a task the front end ran alone).
/// Relaxed stores: a registration on d happens only in a poll the front end hands on after this one,
/// with a release fence before the hand-off (special_job's post), which publishes these stores with it.
/// (A release store here would be a fence behind the completion record's write to host memory, on the
/// round trip of every lone task.)
GPUOS_HD inline void close_unwatched(TaskRecord& rd, uint64_t d, uint64_t cause) {
  if (cause) ref<uint64_t>(rd.cause).store(cause, cuda::memory_order_relaxed);
  ref<uint64_t>(rd.waiters).store(wait_word(d, kWaitDone | (cause ? kWaitFailed : 0)), cuda::memory_order_relaxed);
}

/// Calls f(record index of the waiting task, its link slot) for every link of a closed list, from its head.
template <class F>
GPUOS_HD inline void for_each_waiter(TaskRecord* dq, uint32_t head, F f) {
  while (head != 0) {
    const uint32_t id = head - 1;
    const uint32_t index = id / kMaxDeps, j = id % kMaxDeps;
    head = ref<uint32_t>(dq[index].links[j]).load(cuda::memory_order_relaxed);
    f(index, j);
  }
}

/// The cause a waiter inherits through its link slot j from a dependency that completed with `cause`:
/// none through an order-only link.
GPUOS_HD inline uint64_t inherited(TaskRecord& w, uint32_t j, uint64_t cause) {
  return (ref<uint32_t>(w.weak).load(cuda::memory_order_relaxed) >> j) & 1u ? 0ull : cause;
}

/// Registers task `t` (record dq[t & mask]) as waiting for the n tickets d(0)..d(n-1), with `cause` (0,
/// or a failure already known) and `weak` as begin_wait takes them. A dependency found complete takes
/// no link and is counted off with the registration's hold in one atomic; a registration that took no
/// link at all (every dependency complete) touches the count not at all: each of these is an L2 round
/// trip in a row on the device. True when T is ready now.
template <class D>
GPUOS_HD inline bool register_waits(TaskRecord* dq, uint64_t mask, uint64_t t, uint32_t n, D d, uint64_t cause,
                                    uint32_t weak) {
  TaskRecord& rt = dq[t & mask];
  begin_wait(rt, n, cause, weak);
  uint32_t complete = 0;
  for (uint32_t j = 0; j < n; ++j) {
    uint64_t c = 0;
    const Wait w = wait_for(dq, mask, t, j, d(j), c);
    if (w == Wait::registered) continue;
    if (w == Wait::failed) inherit(rt, inherited(rt, j, c));
    ++complete;
  }
  return complete == n || deps_done(rt, complete + 1);
}

/// Graph node with in-degree `indeg` (> 1) has one more completed predecessor; true when that completes
/// its predecessors in this launch. Arrivals count up across launches and launches of an instance do not
/// overlap, so the count is a multiple of indeg exactly when a launch's arrivals are all in.
GPUOS_HD inline bool arrive(uint64_t& arrived, uint32_t indeg) {
  return (ref<uint64_t>(arrived).fetch_add(1ull, cuda::memory_order_acq_rel) + 1) % indeg == 0;
}

}  // namespace gpuos::deps

#endif  // GPUOS_KERNEL_DEPS_HPP
