// Faults at every step (issue 20, item 2): a device fault (a trap, an illegal address) in an operator
// loaded at run time fails every pending task with the driver's error, whatever the runtime is doing when
// it hits: serving tasks, switching generations, flipping an alias, serving heap requests, running a graph
// launch, or holding submitters on a full queue. Nobody hangs (every wait is bounded and the whole case
// is under a time limit that ends the process), destroy returns, and the time from the fault to the
// last pending task failing is printed. A fault takes the process's CUDA context with it: each case runs
// in a process of its own (meson's tests and scripts/gpu_run.sh select one case per run; names without
// commas, which doctest's filters would split).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/gpu_fixture.hpp"

using namespace gpuos;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// trap_after / bad_store_after: every thread of the tile spins `spin_ns` on %globaltimer, then faults:
// a trap instruction, or a store through `addr` (nothing is mapped at 0x10). val_a / val_b: targets of
// an alias (same argument size), doing nothing.
constexpr const char* kSource = R"(
#include "gpuos/op.cuh"
struct FaultArgs { unsigned long long spin_ns; unsigned long long addr; };
static __device__ void spin_for(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= ns) break;
    __nanosleep(1000);
  }
}
__device__ void trap_tile(const FaultArgs& a, const gpuos::TileCtx&) {
  spin_for(a.spin_ns);
  asm volatile("trap;");
}
GPUOS_OPERATOR(trap_after, FaultArgs, trap_tile)

__device__ void bad_store_tile(const FaultArgs& a, const gpuos::TileCtx&) {
  spin_for(a.spin_ns);
  *reinterpret_cast<volatile unsigned int*>(a.addr) = threadIdx.x;
}
GPUOS_OPERATOR(bad_store_after, FaultArgs, bad_store_tile)

struct ValArgs { unsigned long long v; };
__device__ void val_a_tile(const ValArgs&, const gpuos::TileCtx&) {}
GPUOS_OPERATOR(val_a, ValArgs, val_a_tile)
__device__ void val_b_tile(const ValArgs&, const gpuos::TileCtx&) {}
GPUOS_OPERATOR(val_b, ValArgs, val_b_tile)
)";

// The source a generation switch loads while the fault hits.
constexpr const char* kNextSource = R"(
#include "gpuos/op.cuh"
struct NextArgs { unsigned long long v; };
__device__ void next_tile(const NextArgs&, const gpuos::TileCtx&) {}
GPUOS_OPERATOR(next_op, NextArgs, next_tile)
)";

struct FaultArgs {
  uint64_t spin_ns, addr;
};
struct ValArgs {
  uint64_t v;
};

constexpr uint64_t kBadAddress = 0x10;
constexpr int64_t kWaitNs = 10'000'000'000;  // every wait is bounded: 10 s
constexpr auto kCaseLimit = 60s;             // a case still running then is a hang: the process ends

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
double ms_since(Clock::time_point t0) { return ms_between(t0, Clock::now()); }

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

/// The driver's error name in a message ("CUDA_ERROR_ILLEGAL_ADDRESS"), or "(none)".
std::string driver_error(const std::string& why) {
  const std::size_t at = why.find("CUDA_ERROR_");
  if (at == std::string::npos) return "(none)";
  std::size_t end = at;
  while (end < why.size() && (std::isupper(static_cast<unsigned char>(why[end])) || why[end] == '_')) ++end;
  return why.substr(at, end - at);
}

/// Ends the process if the case is still running after `limit` (a hang: the threads and calls that hang
/// cannot be joined or cancelled), naming the step it was in and, while a runtime is set, its state.
class CaseLimit {
 public:
  explicit CaseLimit(std::chrono::seconds limit) : thread_([this, limit] { watch(limit); }) {}
  ~CaseLimit() {
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void step(const char* s) { step_.store(s); }
  /// The runtime to diagnose on a hang (nullptr once it is being destroyed).
  void runtime(gpuos_runtime* rt) { rt_.store(rt); }

 private:
  void watch(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> l(m_);
    if (cv_.wait_for(l, limit, [this] { return done_; })) return;
    std::fprintf(stderr, "test_faults: still running after %lld s, in step '%s': a hang\n",
                 static_cast<long long>(limit.count()), step_.load());
    std::fflush(stderr);
    if (gpuos_runtime* rt = rt_.load()) {
      // The runtime's state, unless asking for it hangs too (then 5 s later without it).
      auto printed = std::make_shared<std::atomic<bool>>(false);
      std::thread([rt, printed] {
        std::string buf(1 << 16, '\0');
        if (gpuos_diagnose(rt, buf.data(), buf.size(), nullptr) == GPUOS_OK) std::fprintf(stderr, "%s\n", buf.c_str());
        std::fflush(stderr);
        printed->store(true);
      }).detach();
      for (int i = 0; i < 500 && !printed->load(); ++i) std::this_thread::sleep_for(10ms);
    }
    std::_Exit(1);
  }

  std::atomic<const char*> step_{"starting"};
  std::atomic<gpuos_runtime*> rt_{nullptr};
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// How a set of pending tickets ended.
struct Settled {
  std::size_t ok = 0;       ///< completed before the fault
  std::size_t failed = 0;   ///< failed with GPUOS_ERR_DEVICE_FAULT
  std::size_t unnamed = 0;  ///< ... without the driver's error name in gpuos_last_error
  std::size_t other = 0;    ///< anything else (a timeout: a hang)
  std::string other_text;   ///< the first of those
  std::string name;         ///< the driver's error name the failures carried
  Clock::time_point last{}; ///< when the last wait returned: every ticket had completed or failed by then
};

/// Waits for every ticket (each at most 10 s; after a timeout the rest are only polled).
Settled settle(gpuos_runtime* rt, std::span<const Ticket> tickets) {
  Settled st;
  for (const Ticket t : tickets) {
    const gpuos_status w = gpuos_wait(rt, t, st.other ? 0 : kWaitNs);
    st.last = Clock::now();
    if (w == GPUOS_OK) {
      ++st.ok;
    } else if (w == GPUOS_ERR_DEVICE_FAULT) {
      ++st.failed;
      const std::string why = gpuos_last_error();
      if (has(why, "CUDA_ERROR_"))
        st.name = driver_error(why);
      else
        ++st.unnamed;
    } else if (st.other++ == 0) {
      st.other_text = "ticket " + std::to_string(t) + ": " + gpuos_status_name(w) + ": " + gpuos_last_error();
    }
  }
  return st;
}

/// Every ticket completed before the fault or failed with it, naming the driver's error; none hung.
void check_settled(const Settled& st, std::size_t n, const char* what) {
  INFO(what << ": " << st.other_text);
  CHECK(st.other == 0);
  CHECK(st.unnamed == 0);
  CHECK(st.ok + st.failed == n);
}

/// The fault -> last pending failed line every case prints.
void report(const char* what, Clock::time_point fault, Clock::time_point last, const Settled& st,
            const std::string& note = "") {
  MESSAGE(what << ": fault -> last pending failed: " << ms_between(fault, last) << " ms (" << st.failed
               << " failed with " << st.name << ", " << st.ok << " completed before the fault)" << note);
}

/// A new task is refused with the fault, naming the driver's error.
void check_refused(gpuos_runtime* rt) {
  uint64_t k = 0;
  gpuos_task nop{GPUOS_OP_NOP, 1, nullptr, 0, 0};
  const auto t0 = Clock::now();
  CHECK(gpuos_submit(rt, &nop, &k) == GPUOS_ERR_DEVICE_FAULT);
  CHECK(has(gpuos_last_error(), "CUDA_ERROR_"));
  CHECK(ms_since(t0) < 100);
}

/// Destroys the faulted runtime: it returns, promptly.
void destroy(Runtime& rt, CaseLimit& limit) {
  limit.step("destroying the runtime");
  limit.runtime(nullptr);
  const auto t0 = Clock::now();
  const gpuos_status s = gpuos_destroy(rt.release());
  const double took = ms_since(t0);
  MESSAGE("destroy: " << std::string(gpuos_status_name(s)) << " after " << took << " ms");
  CHECK(s == GPUOS_OK);
  CHECK(took < 5000);
}

/// A case's runtime with the fault operators loaded, under the case's time limit (declared first: it
/// watches the boot too).
struct Booted {
  CaseLimit limit;
  Runtime rt;
  explicit Booted(const Options& o = Options())
      : limit(kCaseLimit), rt((limit.step("booting and loading the operators"), o)) {
    limit.runtime(rt.handle());
    rt.load_operator_source("faults.cu", kSource);
  }
};

/// After the fault: the next runtime in this process (test::check_next_boot).
void check_next_boot(CaseLimit& limit) {
  limit.step("booting a new runtime after the fault");
  test::check_next_boot();
}

/// The faulting task itself: it fails promptly with the driver's error (`expect`, or any CUDA_ERROR_).
void check_faulting_task(gpuos_runtime* rt, Ticket f, Clock::time_point t0, const char* expect = "CUDA_ERROR_") {
  const gpuos_status s = gpuos_wait(rt, f, kWaitNs);
  const std::string why = gpuos_last_error();
  const double waited = ms_since(t0);
  MESSAGE("the faulting task failed after " << waited << " ms: " << std::string(gpuos_status_name(s)) << " "
                                            << driver_error(why) << ": " << why);
  CHECK(s == GPUOS_ERR_DEVICE_FAULT);
  CHECK(has(why, expect));
  CHECK(waited < 3000);  // promptly, not at the wait's timeout
}

/// Cases 1 and 2: a faulting task released (by a resume) with 100 tasks queued behind it.
void fault_with_tasks_behind(const char* op_name, const char* expect) {
  Booted booted{};
  auto& [limit, rt] = booted;
  gpuos_runtime* const raw = rt.handle();
  const uint32_t op = rt.op_id(op_name);
  limit.step("the fault");
  rt.suspend();  // the tasks behind the faulting one are pending when it faults
  const Ticket f = rt.submit(Task::make(op, 1, FaultArgs{0, kBadAddress}));
  std::vector<Ticket> behind;
  for (int i = 0; i < 100; ++i) behind.push_back(rt.submit(ops::nop()));
  const auto t0 = Clock::now();
  rt.resume();
  check_faulting_task(raw, f, t0, expect);
  const Settled st = settle(raw, behind);
  report(op_name, t0, st.last, st, " (from the resume that released it)");
  check_settled(st, behind.size(), "the tasks behind it");
  check_refused(raw);
  destroy(rt, limit);
  check_next_boot(limit);
}

}  // namespace

TEST_CASE("faults: a trap in a loaded operator fails every pending task and destroy returns") {
  // The driver's name for a trap differs by GPU and driver (an H100 with driver 580: see the MESSAGE).
  fault_with_tasks_behind("trap_after", "CUDA_ERROR_");
}

TEST_CASE("faults: an illegal address in a loaded operator fails every pending task and destroy returns") {
  fault_with_tasks_behind("bad_store_after", "CUDA_ERROR_ILLEGAL_ADDRESS");
}

TEST_CASE("faults: a fault during a generation switch ends the switch and fails every pending task") {
  // Resident (no slices, no parking): the switch's stop is the only one, and it is what meets the fault.
  Booted booted{Options().with_residency(0, 0)};
  auto& [limit, rt] = booted;
  gpuos_runtime* const raw = rt.handle();
  // Compiled and linked once, so that the switch below takes it from the cache and reaches its stop
  // (which waits for the spinning task) well within the spin.
  rt.load_operator_source("next.cu", kNextSource);
  rt.remove_operator_source("next.cu");
  const uint32_t bad = rt.op_id("bad_store_after");
  constexpr uint64_t kSpinNs = 500'000'000;
  limit.step("the fault during a switch");
  const auto t_sub = Clock::now();
  const Ticket f = rt.submit(Task::make(bad, 1, FaultArgs{kSpinNs, kBadAddress}));
  std::vector<Ticket> behind;
  for (int i = 0; i < 100; ++i) behind.push_back(rt.submit(ops::nop()));
  gpuos_status load_status = GPUOS_OK;
  std::string load_why;
  gpuos_generation gen{};
  Clock::time_point load_end{};
  std::thread loader([&] {
    load_status = gpuos_load_operator_source(raw, "next.cu", kNextSource, std::char_traits<char>::length(kNextSource), &gen);
    load_why = gpuos_last_error();
    load_end = Clock::now();
  });
  const auto fault_at = t_sub + std::chrono::nanoseconds(kSpinNs);  // about: the task starts at once
  check_faulting_task(raw, f, fault_at);
  const Settled st = settle(raw, behind);
  loader.join();  // bounded by the case's limit
  MESSAGE("the switch: " << std::string(gpuos_status_name(load_status)) << " after " << ms_between(t_sub, load_end)
                         << " ms from the faulting task's submission"
                         << (load_status == GPUOS_OK ? " (stop " + std::to_string(gen.stop_ns / 1000) + " us, pause " +
                                                           std::to_string(gen.pause_ns / 1000) + " us)"
                                                     : ": " + load_why));
  CHECK((load_status == GPUOS_OK || load_status == GPUOS_ERR_DEVICE_FAULT));
  if (load_status == GPUOS_ERR_DEVICE_FAULT) CHECK(has(load_why, "CUDA_ERROR_"));
  report("fault during a switch", fault_at, std::max(st.last, load_end), st,
         " (the fault taken as the faulting task's submission + its 500 ms spin; the switch's end included)");
  check_settled(st, behind.size(), "the tasks behind it");
  // A later switch is refused at once with the fault.
  const auto t1 = Clock::now();
  CHECK(gpuos_load_operator_source(raw, "next2.cu", kNextSource, std::char_traits<char>::length(kNextSource), nullptr) ==
        GPUOS_ERR_DEVICE_FAULT);
  CHECK(ms_since(t1) < 1000);
  check_refused(raw);
  destroy(rt, limit);
  check_next_boot(limit);
}

TEST_CASE("faults: a fault during alias flips fails every flip and every pending task") {
  Booted booted{};
  auto& [limit, rt] = booted;
  gpuos_runtime* const raw = rt.handle();
  rt.alias_set("flip", "val_a");
  const uint32_t flip = rt.op_id("flip");
  const uint32_t bad = rt.op_id("bad_store_after");
  // Two threads flip the alias (val_b, then back) and submit a task of it after each flip, until a call
  // fails.
  constexpr int kFlippers = 2;
  struct Flipper {
    std::vector<Ticket> tickets;
    std::size_t flips = 0;
    gpuos_status s = GPUOS_OK;
    std::string why, call;
    Clock::time_point at{};
  };
  std::array<Flipper, kFlippers> fl;
  std::vector<std::jthread> threads;
  limit.step("flipping the alias when the fault hits");
  for (int i = 0; i < kFlippers; ++i)
    threads.emplace_back([&, i](std::stop_token stop) {
      Flipper& me = fl[i];
      const gpuos_task task = Task::make(flip, 1, ValArgs{uint64_t(i)}).c();
      uint64_t t = 0;
      // One call's result (its ticket in t); false (and the failure noted) when it failed.
      auto call = [&](const char* name, gpuos_status s) {
        if (s == GPUOS_OK) {
          me.tickets.push_back(t);
          return true;
        }
        me.s = s;
        me.why = gpuos_last_error();
        me.call = name;
        me.at = Clock::now();
        return false;
      };
      while (!stop.stop_requested()) {
        if (!call("gpuos_alias_set", gpuos_alias_set(raw, "flip", "val_b", &t))) return;
        if (!call("gpuos_submit", gpuos_submit(raw, &task, &t))) return;
        if (!call("gpuos_alias_rollback", gpuos_alias_rollback(raw, "flip", &t))) return;
        if (!call("gpuos_submit", gpuos_submit(raw, &task, &t))) return;
        me.flips += 2;
      }
    });
  std::this_thread::sleep_for(50ms);
  const auto t0 = Clock::now();
  const Ticket f = rt.submit(Task::make(bad, 1, FaultArgs{0, kBadAddress}));
  std::vector<Ticket> behind;
  for (int i = 0; i < 100; ++i) {
    uint64_t t = 0;
    const gpuos_task task = Task::make(flip, 1, ValArgs{uint64_t(100 + i)}).c();
    if (gpuos_submit(raw, &task, &t) != GPUOS_OK) break;  // the fault came first
    behind.push_back(t);
  }
  check_faulting_task(raw, f, t0, "CUDA_ERROR_ILLEGAL_ADDRESS");
  const Settled st = settle(raw, behind);
  for (auto& t : threads) t.join();  // each ends at its first failed call; bounded by the case's limit
  Clock::time_point last = st.last;
  for (const Flipper& me : fl) {
    INFO(me.call << ": " << me.why);
    CHECK(me.flips > 0);
    CHECK(me.s == GPUOS_ERR_DEVICE_FAULT);
    CHECK(has(me.why, "CUDA_ERROR_"));
    if (me.at != Clock::time_point{}) last = std::max(last, me.at);
  }
  MESSAGE("flips before the fault: " << fl[0].flips << " and " << fl[1].flips << "; the flippers' failed calls: "
                                     << fl[0].call << ", " << fl[1].call);
  report("fault during alias flips", t0, last, st, " (from the faulting task's submission; the flippers' failures included)");
  check_settled(st, behind.size(), "the tasks behind it");
  for (const Flipper& me : fl) check_settled(settle(raw, me.tickets), me.tickets.size(), "the flippers' tickets");
  check_refused(raw);
  destroy(rt, limit);
  check_next_boot(limit);
}

TEST_CASE("faults: a fault during heap requests: every gpuos_alloc and gpuos_free returns promptly with it") {
  Booted booted{Options().with_heap(64ull << 20)};
  auto& [limit, rt] = booted;
  gpuos_runtime* const raw = rt.handle();
  const uint32_t bad = rt.op_id("bad_store_after");
  // Four threads allocate and free in a loop until a call fails; then each makes 10 more calls (alloc and
  // free alternately), each of which must fail at once with the fault.
  constexpr int kWorkers = 4;
  struct Worker {
    std::size_t calls = 0;
    gpuos_status s = GPUOS_OK;
    std::string why;
    Clock::time_point at{};
    std::size_t after_wrong = 0;  ///< later calls that did not fail with the fault
    double after_slowest_ms = 0;
  };
  std::array<Worker, kWorkers> w;
  std::vector<std::jthread> threads;
  limit.step("heap requests when the fault hits");
  for (int i = 0; i < kWorkers; ++i)
    threads.emplace_back([&, i](std::stop_token stop) {
      Worker& me = w[i];
      void* last = reinterpret_cast<void*>(uintptr_t{0x1000});
      while (!stop.stop_requested()) {
        void* p = nullptr;
        gpuos_status s = gpuos_alloc(raw, 4096, 16, &p);
        if (s == GPUOS_OK) {
          ++me.calls;
          last = p;
          s = gpuos_free(raw, p);
        }
        if (s != GPUOS_OK) {
          me.s = s;
          me.why = gpuos_last_error();
          me.at = Clock::now();
          break;
        }
        ++me.calls;
      }
      for (int k = 0; k < 10; ++k) {
        const auto c0 = Clock::now();
        void* q = nullptr;
        const gpuos_status s = k % 2 ? gpuos_free(raw, last) : gpuos_alloc(raw, 4096, 16, &q);
        me.after_slowest_ms = std::max(me.after_slowest_ms, ms_since(c0));
        me.after_wrong += s != GPUOS_ERR_DEVICE_FAULT;
      }
    });
  std::this_thread::sleep_for(50ms);
  const auto t0 = Clock::now();
  const Ticket f = rt.submit(Task::make(bad, 1, FaultArgs{0, kBadAddress}));
  check_faulting_task(raw, f, t0, "CUDA_ERROR_ILLEGAL_ADDRESS");
  for (auto& t : threads) t.join();  // bounded by the case's limit
  Clock::time_point last = t0;
  double slowest = 0;
  for (const Worker& me : w) {
    INFO(me.why);
    CHECK(me.calls > 0);
    CHECK(me.s == GPUOS_ERR_DEVICE_FAULT);
    CHECK(has(me.why, "CUDA_ERROR_"));
    CHECK(me.after_wrong == 0);
    CHECK(me.after_slowest_ms < 100);
    last = std::max(last, me.at);
    slowest = std::max(slowest, me.after_slowest_ms);
  }
  MESSAGE("heap calls before the fault: " << w[0].calls << ", " << w[1].calls << ", " << w[2].calls << ", " << w[3].calls
                                          << "; the slowest call after it: " << slowest << " ms");
  MESSAGE("fault during heap requests: fault -> last pending failed: "
          << ms_between(t0, last) << " ms (the last heap call to fail; from the faulting task's submission)");
  gpuos_heap_stats hs{};
  CHECK(gpuos_heap_get_stats(raw, &hs) == GPUOS_ERR_DEVICE_FAULT);
  check_refused(raw);
  destroy(rt, limit);
  check_next_boot(limit);
}

TEST_CASE("faults: a fault in a graph node of a loaded operator fails every pending launch") {
  Booted booted{};
  auto& [limit, rt] = booted;
  gpuos_runtime* const raw = rt.handle();
  const uint32_t bad = rt.op_id("bad_store_after");
  // A chain of 64 nodes, node 32 the faulting one, and a fan of 16 after it.
  Graph g;
  uint32_t prev = g.add(ops::nop());
  for (int v = 1; v < 64; ++v) prev = g.add(v == 32 ? Task::make(bad, 1, FaultArgs{0, kBadAddress}) : ops::nop(), {prev});
  for (int v = 0; v < 16; ++v) g.add(ops::nop(), {prev});
  gpuos_graph_exec* ge = nullptr;  // the C ABI's: destroyed once, below, with its status checked
  REQUIRE(gpuos_graph_instantiate(raw, g.handle(), &ge) == GPUOS_OK);
  limit.step("the fault in a graph launch");
  rt.suspend();  // every launch below is pending when the fault happens
  std::vector<Ticket> launches, after;
  for (int k = 0; k < 8; ++k) {
    uint64_t t = 0;
    REQUIRE(gpuos_graph_launch(raw, ge, nullptr, 0, nullptr, &t) == GPUOS_OK);
    launches.push_back(t);
    after.push_back(rt.submit_after(ops::nop(), std::span<const Ticket>(&launches.back(), 1)));
  }
  const auto t0 = Clock::now();
  rt.resume();
  check_faulting_task(raw, launches[0], t0, "CUDA_ERROR_ILLEGAL_ADDRESS");
  const Settled sl = settle(raw, launches);
  const Settled sa = settle(raw, after);
  report("fault in a graph node", t0, sa.last, sl, " (launches, from the resume that released them)");
  check_settled(sl, launches.size(), "the launches");
  check_settled(sa, after.size(), "the tasks after the launches");
  CHECK(sl.ok == 0);  // no launch can complete: its node 32 faults
  CHECK(sa.ok == 0);
  // New launches are refused with the fault; destroying the instance returns promptly.
  uint64_t k = 0;
  CHECK(gpuos_graph_launch(raw, ge, nullptr, 0, nullptr, &k) == GPUOS_ERR_DEVICE_FAULT);
  CHECK(has(gpuos_last_error(), "CUDA_ERROR_"));
  limit.step("destroying the graph instance");
  const auto t1 = Clock::now();
  const gpuos_status ds = gpuos_graph_exec_destroy(raw, ge);
  MESSAGE("graph instance destroy: " << std::string(gpuos_status_name(ds)) << " after " << ms_since(t1) << " ms");
  CHECK((ds == GPUOS_OK || ds == GPUOS_ERR_DEVICE_FAULT));  // the runtime's destroy frees it either way
  CHECK(ms_since(t1) < 1000);
  check_refused(raw);
  destroy(rt, limit);
  check_next_boot(limit);
}

TEST_CASE("faults: a fault while submitters are blocked on a full queue releases every one of them") {
  Booted booted{Options().with_queue_capacity(64)};
  auto& [limit, rt] = booted;
  gpuos_runtime* const raw = rt.handle();
  const uint32_t bad = rt.op_id("bad_store_after");
  constexpr uint64_t kSpinNs = 200'000'000;
  limit.step("filling the queue behind a task that spins, then faults");
  // The first ticket spins 200 ms, then faults: no ticket retires past it, so 63 more fill the ring.
  const auto t_sub = Clock::now();
  const Ticket f = rt.submit(Task::make(bad, 1, FaultArgs{kSpinNs, kBadAddress}));
  std::vector<Ticket> queued;
  while (queued.size() < 64) {
    const std::optional<Ticket> t = rt.try_submit(ops::nop());
    if (!t) break;
    queued.push_back(*t);
  }
  CHECK(queued.size() == 63);
  constexpr int kSubmitters = 4;
  struct Blocked {
    gpuos_status s = GPUOS_OK;
    std::string why;
    Clock::time_point at{};
  };
  std::array<Blocked, kSubmitters> b;
  std::atomic<int> returned{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSubmitters; ++i)
    threads.emplace_back([&, i] {
      uint64_t k = 0;
      gpuos_task nop{GPUOS_OP_NOP, 1, nullptr, 0, 0};
      b[i].s = gpuos_submit(raw, &nop, &k);
      b[i].why = gpuos_last_error();
      b[i].at = Clock::now();
      returned.fetch_add(1);
    });
  std::this_thread::sleep_for(30ms);
  const double blocked_at = ms_since(t_sub);
  CHECK(returned.load() == 0);  // all four are blocked: the spin has 200 ms to go from the submission
  limit.step("the fault with submitters blocked");
  const auto fault_at = t_sub + std::chrono::nanoseconds(kSpinNs);  // about: the task starts at once
  check_faulting_task(raw, f, fault_at, "CUDA_ERROR_ILLEGAL_ADDRESS");
  for (auto& t : threads) t.join();  // bounded by the case's limit
  Clock::time_point last = fault_at;
  for (const Blocked& me : b) {
    INFO(me.why);
    CHECK(me.s == GPUOS_ERR_DEVICE_FAULT);
    CHECK(has(me.why, "CUDA_ERROR_"));
    last = std::max(last, me.at);
  }
  const Settled st = settle(raw, queued);
  MESSAGE("blocked submitters: " << kSubmitters << " blocked " << blocked_at << " ms after the faulting task's submission");
  MESSAGE("fault with submitters blocked: fault -> last pending failed: "
          << ms_between(fault_at, last)
          << " ms (the last blocked submit to fail; the fault taken as the faulting task's submission + its 200 ms "
             "spin; the queued tasks: "
          << st.failed << " failed, " << st.ok << " completed before the fault)");
  CHECK(ms_between(fault_at, last) < 2000);
  check_settled(st, queued.size(), "the queued tasks");
  check_refused(raw);
  destroy(rt, limit);
  check_next_boot(limit);
}
