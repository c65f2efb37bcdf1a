// The device heap as users reach it: gpuos_alloc / gpuos_free from the host (served by the resident
// kernel), gpuos::dev::malloc / free from operators running inside it, statistics and the invariant
// checker, misuse, exhaustion, and the heap's survival of suspend/resume. The runtime boots the test
// image (tests/gpu/alloc_image.cu): the resident kernel plus operators that use the heap. Under
// GPUOS_TEST_SCALE the long loops are shorter and the time bounds longer (gpu_fixture.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/alloc_test_ops.h"
#include "tests/gpu/gpu_fixture.hpp"
#include "kernel/wire.h"
#include "kernel/tlsf.hpp"

using namespace gpuos;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kBlock = GPUOS_BLOCK_THREADS;

/// Status of a call of the C++ API (GPUOS_OK when it did not throw).
template <class F>
Status status_of(F&& f) {
  try {
    f();
    return GPUOS_OK;
  } catch (const Error& e) {
    return e.status();
  }
}

/// Four 64-bit counters in device memory (must outlive the runtime: declare before it).
struct Counters {
  test::DeviceBuffer buf{8};
  Counters() { reset(); }
  unsigned long long* get() const { return reinterpret_cast<unsigned long long*>(buf.get()); }
  void reset() const {
    const uint64_t z[4] = {};
    test::copy_to_device(buf.get(), z, sizeof(z));
  }
  std::vector<uint64_t> read() const {
    std::vector<uint64_t> v(4);
    test::copy_to_host(v.data(), buf.get(), 4 * sizeof(uint64_t));
    return v;
  }
};

void require_heap_ok(const Runtime& rt) {
  std::string why;
  const bool ok = rt.heap_check(&why);
  INFO(why);
  REQUIRE(ok);
}

/// The device's pattern for alloc_keep / alloc_release (alloc_image.cu).
using gpuos::tlsf::mix32;
std::vector<unsigned char> pattern(uint64_t bytes, uint32_t tag) {
  std::vector<unsigned char> v(bytes);
  for (uint64_t k = 0; k < bytes / 4; ++k) {
    const uint32_t w = tag + static_cast<uint32_t>(k);
    std::memcpy(v.data() + 4 * k, &w, 4);
  }
  for (uint64_t b = bytes / 4 * 4; b < bytes; ++b) v[b] = static_cast<unsigned char>(tag);
  return v;
}

bool aligned(const void* p, uint64_t a) { return reinterpret_cast<uint64_t>(p) % a == 0; }

}  // namespace

TEST_CASE("host alloc/free: the block works with CUDA copies and as an operator argument") {
  Runtime rt;
  const DeviceInfo info = rt.device_info();
  const size_t n = test::scaled(1u << 20, 1u << 16);  // 256 tiles of 4,096 floats at full scale, at least 16
  float* x = rt.alloc_array<float>(n);
  float* y = rt.alloc_array<float>(n);
  REQUIRE(x != nullptr);
  REQUIRE(y != nullptr);
  CHECK(aligned(x, 16));
  CHECK(x != y);
  const std::vector<float> h = test::random_floats(n, 11);
  test::copy_to_device(x, h.data(), n * sizeof(float));
  CHECK(rt.wait(rt.submit(ops::copy(y, x, n)), test::slowed(10s)));
  CHECK(rt.wait(rt.submit(ops::axpy(y, 2.0f, x, n)), test::slowed(10s)));
  std::vector<float> got(n);
  test::copy_to_host(got.data(), y, n * sizeof(float));
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += got[i] != std::fma(2.0f, h[i], h[i]);
  CHECK(wrong == 0);

  HeapStats s = rt.heap_stats();
  CHECK(s.pool_bytes == (256ull << 20));
  // Automatic geometry: 8 small arenas per SM, none below 1 MiB (192 MiB of small arenas), + the large one.
  CHECK(s.arenas == std::min<uint32_t>(8u * static_cast<uint32_t>(info.sm_count), 192u) + 1);
  CHECK(s.used_blocks == 2);
  CHECK(s.allocs == 2);
  CHECK(s.checked == 0);
  rt.free(x);
  rt.free(y);
  s = rt.heap_stats();
  CHECK(s.used_blocks == 0);
  CHECK(s.used_bytes == 0);
  CHECK(s.frees == 2);
  CHECK(s.free_bytes == s.pool_bytes);
  CHECK(s.fragmentation == 0.0);
  require_heap_ok(rt);

  // Alignment, zero-size blocks, null, and a request no arena can hold.
  void* a = rt.alloc(100, 4096);
  CHECK(aligned(a, 4096));
  void* z1 = rt.alloc(0);
  void* z2 = rt.alloc(0);
  CHECK(z1 != nullptr);
  CHECK(z2 != nullptr);
  CHECK(z1 != z2);
  CHECK(status_of([&] { rt.alloc(100, 48); }) == GPUOS_ERR_INVALID_ARG);
  CHECK(std::string(gpuos_last_error()).find("power of two") != std::string::npos);
  void* out = reinterpret_cast<void*>(0x1);
  CHECK(gpuos_alloc(rt.handle(), 100, 0, &out) == GPUOS_OK);  // 0 = default alignment
  CHECK(aligned(out, 16));
  rt.free(out);
  CHECK(status_of([&] { rt.free(nullptr); }) == GPUOS_OK);
  for (void* p : {a, z1, z2}) rt.free(p);
  s = rt.heap_stats();
  CHECK(s.bad_align == 1);
  CHECK(s.failed_allocs == 1);
  CHECK(s.used_blocks == 0);

  // The heap's operator id is the runtime's own.
  abi::HeapCtlArgs forged{abi::kHeapAlloc, 0, 16, 16, 0};
  gpuos_task t{GPUOS_OP_HEAP_CTL, 1, &forged, sizeof(forged), 0};
  uint64_t k = 0;
  CHECK(gpuos_submit(rt.handle(), &t, &k) == GPUOS_ERR_INVALID_ARG);
  CHECK(std::string(gpuos_last_error()).find("reserved") != std::string::npos);
  require_heap_ok(rt);
}

TEST_CASE("bad frees are refused, counted, and change nothing (checked mode; double free also unchecked)") {
  test::DeviceBuffer foreign(64);
  {
    Runtime rt(Options().with_heap(64ull << 20, GPUOS_HEAP_CHECKED));
    void* p = rt.alloc(1000);
    void* q = rt.alloc(256);
    std::vector<unsigned char> data = pattern(256, 7);
    test::copy_to_device(q, data.data(), 256);
    rt.free(p);
    CHECK(status_of([&] { rt.free(p); }) == GPUOS_ERR_INVALID_ARG);
    CHECK(std::string(gpuos_last_error()).find("double free") != std::string::npos);
    CHECK(status_of([&] { rt.free(static_cast<char*>(q) + 32); }) == GPUOS_ERR_INVALID_ARG);  // interior
    CHECK(std::string(gpuos_last_error()).find("not a block") != std::string::npos);
    CHECK(status_of([&] { rt.free(foreign.get()); }) == GPUOS_ERR_INVALID_ARG);  // other device memory
    int on_stack = 0;
    CHECK(status_of([&] { rt.free(&on_stack); }) == GPUOS_ERR_INVALID_ARG);
    const HeapStats s = rt.heap_stats();
    CHECK(s.checked == 1);
    CHECK(s.double_free == 1);
    CHECK(s.bad_free == 3);
    CHECK(s.used_blocks == 1);
    require_heap_ok(rt);
    std::vector<unsigned char> back(256);
    test::copy_to_host(back.data(), q, 256);
    CHECK(back == data);  // the refused frees touched nothing
    rt.free(q);
    CHECK(rt.heap_stats().used_bytes == 0);
    require_heap_ok(rt);
  }
  {
    Runtime rt(Options().with_heap(16ull << 20));
    void* p = rt.alloc(64);
    rt.free(p);
    CHECK(status_of([&] { rt.free(p); }) == GPUOS_ERR_INVALID_ARG);
    CHECK(status_of([&] { rt.free(foreign.get()); }) == GPUOS_ERR_INVALID_ARG);
    const HeapStats s = rt.heap_stats();
    CHECK(s.double_free == 1);
    CHECK(s.bad_free == 1);
    require_heap_ok(rt);
  }
}

TEST_CASE("out of memory: an error (host) or null (device) at once, never a hang; everything comes back") {
  Counters ctr;
  test::DeviceBuffer head_slots(2 * 64 * kBlock);
  Runtime rt(Options().with_heap(64ull << 20));
  auto t0 = Clock::now();
  CHECK(status_of([&] { rt.alloc(1ull << 30); }) == GPUOS_ERR_OUT_OF_MEMORY);
  CHECK(Clock::now() - t0 < test::slowed(1s));
  CHECK(rt.heap_stats().too_large == 1);

  // Host: 64 KiB blocks until the first failure.
  std::vector<void*> got;
  Status last = GPUOS_OK;
  t0 = Clock::now();
  while (last == GPUOS_OK && got.size() < 100000) {
    last = status_of([&] { got.push_back(rt.alloc(64u << 10)); });
  }
  const double host_s = std::chrono::duration<double>(Clock::now() - t0).count();
  CHECK(last == GPUOS_ERR_OUT_OF_MEMORY);
  const double frac = static_cast<double>(got.size()) * (64u << 10) / (64ull << 20);
  MESSAGE("host fill with 64 KiB blocks: " << got.size() << " blocks, " << 100 * frac << "% of the pool, "
                                            << host_s << " s");
  CHECK(frac > 0.85);
  HeapStats s = rt.heap_stats();
  CHECK(s.failed_allocs >= 2);
  require_heap_ok(rt);
  for (void* p : got) rt.free(p);
  CHECK(rt.heap_stats().used_bytes == 0);

  // Device: 16K threads allocate 4 KiB blocks until null (one task), then free them all (another).
  const uint32_t tiles = 64;
  auto** heads = reinterpret_cast<void**>(head_slots.get());
  t0 = Clock::now();
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_EXHAUST, tiles, alloc_exhaust_args{ctr.get(), heads, 4096, 100000, 0})),
                  test::slowed(60s)));
  const double dev_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const HeapStats full = rt.heap_stats();
  require_heap_ok(rt);
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_EXHAUST, tiles, alloc_exhaust_args{ctr.get(), heads, 4096, 100000, 1})),
                  test::slowed(60s)));
  const std::vector<uint64_t> c = ctr.read();
  const double dev_frac = static_cast<double>(c[1]) / (64ull << 20);
  MESSAGE("device fill with 4 KiB blocks: " << c[0] << " blocks, " << 100 * dev_frac << "% of the pool requested, "
                                            << 100.0 * full.used_bytes / full.pool_bytes << "% in blocks, " << dev_s
                                            << " s to fill");
  CHECK(full.used_blocks == c[0]);
  CHECK(dev_frac > 0.9);
  CHECK(dev_frac <= 1.0);
  CHECK(c[3] == 0);
  s = rt.heap_stats();
  CHECK(s.used_blocks == 0);
  CHECK(s.failed_allocs >= 2 + tiles * kBlock);  // every thread ended on a null
  require_heap_ok(rt);
}

TEST_CASE("many warps allocate, write, verify and free concurrently inside the resident kernel") {
  for (const uint32_t flags : {0u, GPUOS_HEAP_CHECKED}) {
    CAPTURE(flags);
    Counters ctr;
    Runtime rt(Options().with_heap(256ull << 20, flags));
    // A tile per SM, 48 iterations (a swap with the neighbour lane every 4th) at full scale.
    const uint32_t tiles = static_cast<uint32_t>(test::scaled(static_cast<size_t>(rt.device_info().sm_count), 4));
    const uint32_t iters = static_cast<uint32_t>(test::scaled(48, 8)), tasks = 4;
    // Host threads allocate and free at the same time, through the same heap.
    constexpr int kHostThreads = 2;
    const int host_iters = static_cast<int>(test::scaled(150, 16));
    std::atomic<bool> host_ok{true};
    std::vector<std::thread> host;
    for (int h = 0; h < kHostThreads; ++h) {
      host.emplace_back([&, h] {
        std::mt19937 rng(h);
        for (int i = 0; i < host_iters; ++i) {
          void* p = rt.alloc(1 + rng() % 100000, 16u << (rng() % 5));
          if (!p) host_ok = false;
          rt.free(p);
        }
      });
    }
    std::vector<Ticket> ts;
    for (uint32_t k = 0; k < tasks; ++k)
      ts.push_back(rt.submit(Task::make(ALLOC_TEST_STRESS, tiles, alloc_stress_args{ctr.get(), iters, 2048, 100 + k, 8})));
    for (Ticket t : ts) REQUIRE(rt.wait(t, test::slowed(120s)));
    for (auto& th : host) th.join();
    CHECK(host_ok);
    const std::vector<uint64_t> c = ctr.read();
    const uint64_t total = uint64_t(tasks) * tiles * kBlock * iters;
    MESSAGE("stress: " << c[1] << " device allocations, " << c[2] << " nulls, " << c[0] << " errors");
    CHECK(c[0] == 0);  // no overlap (patterns intact), every block aligned
    CHECK(c[1] + c[2] == total);
    CHECK(c[2] == 0);  // the heap is large enough for every live block
    CHECK(c[3] == 0);
    const HeapStats s = rt.heap_stats();
    CHECK(s.used_blocks == 0);
    CHECK(s.used_bytes == 0);
    CHECK(s.allocs == s.frees);
    CHECK(s.allocs == c[1] + uint64_t(kHostThreads) * host_iters);
    CHECK(s.bad_free + s.double_free == 0);
    require_heap_ok(rt);
  }
}

TEST_CASE("the heap survives suspend/resume: host and device blocks, their contents, the statistics") {
  const uint32_t tiles = 16, n = tiles * kBlock;
  const uint64_t bytes = 200;
  test::DeviceBuffer slots(2 * n);
  Counters ctr;
  Runtime rt(Options().with_residency(0, 0));  // launches counted: the resumes' alone
  void* a = rt.alloc(1u << 20);
  const std::vector<float> data = test::random_floats((1u << 20) / 4, 3);
  test::copy_to_device(a, data.data(), 1u << 20);
  auto** sl = reinterpret_cast<void**>(slots.get());
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_KEEP, tiles, alloc_keep_args{sl, bytes, 5, 0})), test::slowed(10s)));
  const HeapStats before = rt.heap_stats();
  CHECK(before.used_blocks == n + 1);
  for (int cycle = 0; cycle < 3; ++cycle) {
    rt.suspend();
    CHECK(status_of([&] { rt.alloc(16); }) == GPUOS_ERR_UNAVAILABLE);
    CHECK(std::string(gpuos_last_error()).find("suspended") != std::string::npos);
    rt.resume();
    const HeapStats s = rt.heap_stats();
    CHECK(s.used_blocks == before.used_blocks);
    CHECK(s.used_bytes == before.used_bytes);
    CHECK(s.allocs == before.allocs + cycle);  // + the 4 KiB block of each earlier cycle
    void* b = rt.alloc(4096);  // the heap keeps working after the relaunch
    rt.free(b);
  }
  CHECK(rt.stats().launches == 4);
  std::vector<float> back(data.size());
  test::copy_to_host(back.data(), a, 1u << 20);
  CHECK(back == data);
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_RELEASE, tiles, alloc_release_args{sl, ctr.get(), bytes, 5, 1})),
                  test::slowed(10s)));
  const std::vector<uint64_t> c = ctr.read();
  CHECK(c[0] == 0);
  CHECK(c[1] == n);
  CHECK(c[2] == 0);
  CHECK(c[3] == 0);
  rt.free(a);
  const HeapStats s = rt.heap_stats();
  CHECK(s.used_blocks == 0);
  CHECK(s.allocs == s.frees);
  require_heap_ok(rt);
}

TEST_CASE("blocks cross sides: the host frees device blocks, the device frees host blocks") {
  // Every block is one host request each way (a round trip through the kernel): 4 tiles' worth at full scale.
  const uint32_t tiles = static_cast<uint32_t>(test::scaled(4, 1)), n = tiles * kBlock;
  const uint64_t bytes = 96;
  test::DeviceBuffer slots(2 * n);
  Counters ctr;
  Runtime rt(Options().with_heap(64ull << 20, GPUOS_HEAP_CHECKED));
  auto** sl = reinterpret_cast<void**>(slots.get());
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_KEEP, tiles, alloc_keep_args{sl, bytes, 9, 0})), test::slowed(10s)));
  std::vector<void*> ptrs(n);
  test::copy_to_host(ptrs.data(), sl, n * sizeof(void*));
  for (uint32_t i = 0; i < n; ++i) {
    REQUIRE(ptrs[i] != nullptr);
    std::vector<unsigned char> got(bytes);
    test::copy_to_host(got.data(), ptrs[i], bytes);
    if (i % 64 == 0) CHECK(got == pattern(bytes, mix32(9 + i)));
    rt.free(ptrs[i]);
  }
  CHECK(rt.heap_stats().used_blocks == 0);
  // Host blocks with the device's pattern, freed by the device.
  for (uint32_t i = 0; i < n; ++i) {
    ptrs[i] = rt.alloc(bytes);
    const std::vector<unsigned char> p = pattern(bytes, mix32(21 + i));
    test::copy_to_device(ptrs[i], p.data(), bytes);
  }
  test::copy_to_device(sl, ptrs.data(), n * sizeof(void*));
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_RELEASE, tiles, alloc_release_args{sl, ctr.get(), bytes, 21, 1})),
                  test::slowed(10s)));
  const std::vector<uint64_t> c = ctr.read();
  CHECK(c[0] == 0);
  CHECK(c[1] == n);
  CHECK(c[3] == 0);
  const HeapStats s = rt.heap_stats();
  CHECK(s.used_blocks == 0);
  CHECK(s.bad_free + s.double_free == 0);
  require_heap_ok(rt);
}

TEST_CASE("without a heap: host calls are unavailable, gpuos::dev::malloc returns null") {
  const uint32_t tiles = 2, n = tiles * kBlock;
  test::DeviceBuffer slots(2 * n);
  Counters ctr;
  Runtime rt(Options().with_heap(0));
  CHECK(status_of([&] { rt.alloc(16); }) == GPUOS_ERR_UNAVAILABLE);
  CHECK(std::string(gpuos_last_error()).find("heap_bytes") != std::string::npos);
  gpuos_heap_stats hs;
  CHECK(gpuos_heap_get_stats(rt.handle(), &hs) == GPUOS_ERR_UNAVAILABLE);
  CHECK(gpuos_heap_check(rt.handle()) == GPUOS_ERR_UNAVAILABLE);
  CHECK(status_of([&] { rt.free(nullptr); }) == GPUOS_OK);
  auto** sl = reinterpret_cast<void**>(slots.get());
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_KEEP, tiles, alloc_keep_args{sl, 64, 1, 0})), test::slowed(10s)));
  REQUIRE(rt.wait(rt.submit(Task::make(ALLOC_TEST_RELEASE, tiles, alloc_release_args{sl, ctr.get(), 64, 1, 1})),
                  test::slowed(10s)));
  const std::vector<uint64_t> c = ctr.read();
  CHECK(c[2] == n);  // every slot null
  CHECK(c[1] == 0);
}

TEST_CASE("the heap survives a generation switch, and an operator loaded at run time allocates from it") {
  // The real user path: an operator compiled with NVRTC, linked into a new generation with nvJitLink,
  // calling gpuos::dev::malloc / free on the same heap the host and the boot image use.
  static const char* kSource = R"(
#include <gpuos/op.cuh>
struct HeapTouchArgs { unsigned long long* out; unsigned long long bytes; };
__device__ void heap_touch_tile(const HeapTouchArgs& a, const gpuos::TileCtx& c) {
  __shared__ unsigned char* block;
  if (threadIdx.x == 0) block = static_cast<unsigned char*>(gpuos::dev::malloc(a.bytes));
  __syncthreads();
  unsigned char* p = block;
  if (p)
    for (unsigned long long i = threadIdx.x; i < a.bytes; i += blockDim.x) p[i] = (unsigned char)(i * 7 + c.tile);
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long ok = p != nullptr;
    for (unsigned long long i = 0; p && i < a.bytes; ++i) ok &= p[i] == (unsigned char)(i * 7 + c.tile);
    a.out[c.tile] = p == nullptr ? 2 : (ok ? 1 : 3);
    if (p) gpuos::dev::free(p);
  }
}
GPUOS_OPERATOR(heap_touch, HeapTouchArgs, heap_touch_tile)
)";
  struct HeapTouchArgs {
    unsigned long long* out;
    unsigned long long bytes;
  };
  const uint32_t tiles = static_cast<uint32_t>(test::scaled(256, 16));
  test::DeviceBuffer out(2 * tiles);
  Runtime rt;
  void* a = rt.alloc(1u << 20);
  const std::vector<float> data = test::random_floats((1u << 20) / 4, 11);
  test::copy_to_device(a, data.data(), 1u << 20);
  const HeapStats before = rt.heap_stats();

  const auto g = rt.load_operator_source("heap_touch.cu", kSource);  // a generation switch
  CHECK(g.number >= 1);
  const uint32_t id = rt.op_id("heap_touch");
  auto* o = reinterpret_cast<unsigned long long*>(out.get());
  REQUIRE(rt.wait(rt.submit(Task::make(id, tiles, HeapTouchArgs{o, 3000})), test::slowed(10s)));
  std::vector<unsigned long long> got(tiles);
  test::copy_to_host(got.data(), o, tiles * sizeof(unsigned long long));
  size_t good = 0;
  for (auto v : got) good += v == 1;
  CHECK(good == tiles);

  const HeapStats s = rt.heap_stats();
  CHECK(s.allocs == before.allocs + tiles);
  CHECK(s.frees == before.frees + tiles);
  CHECK(s.used_blocks == before.used_blocks);
  std::vector<float> back(data.size());
  test::copy_to_host(back.data(), a, 1u << 20);
  CHECK(back == data);  // the host's block kept its contents across the switch
  rt.free(a);
  require_heap_ok(rt);
}

TEST_CASE("heap requests are served through generation switches; a user's suspend refuses them, after those in flight") {
  Runtime rt;
  std::atomic<uint64_t> served{0}, refused{0};
  std::atomic<int> other_errors{0};
  // A jthread: stopped and joined on any way out of the case, a throwing switch or suspend included.
  std::jthread heap_user([&](std::stop_token st) {
    while (!st.stop_requested()) {
      try {
        rt.free(rt.alloc(4096));
        served++;
      } catch (const Error& e) {
        if (e.status() == GPUOS_ERR_UNAVAILABLE) refused++;
        else other_errors++;
      }
    }
  });
  // Generation switches stop and relaunch the kernel: the heap requests in between wait, none is refused.
  const int switches = static_cast<int>(test::scaled(6, 2));
  for (int i = 0; i < switches; ++i) {
    const std::string src = "#include <gpuos/op.cuh>\n__device__ void switcher_tile(const gpuos::TileCtx&) {}\n"
                            "GPUOS_OPERATOR_NOARGS(switcher, switcher_tile)\n// version " + std::to_string(i) + "\n";
    rt.load_operator_source("switcher.cu", src);
  }
  const uint64_t before_suspend = served.load();
  CHECK(refused.load() == 0);
  CHECK(before_suspend > 0);
  rt.suspend();
  const uint64_t at_suspend = served.load();
  test::pause_until(50ms, [&] { return refused.load() > 0; });
  CHECK(served.load() <= at_suspend + 1);  // at most the request that was completing
  CHECK(refused.load() > 0);               // the user's suspend refuses them
  rt.resume();
  const uint64_t at_resume = served.load();
  test::pause_until(50ms, [&] { return served.load() > at_resume; });
  heap_user.request_stop();
  heap_user.join();
  CHECK(served.load() > at_resume);  // served again after the resume
  CHECK(other_errors.load() == 0);
  require_heap_ok(rt);
}

TEST_CASE("device-side bad frees: double, foreign, interior, and one warp freeing a block 32 times at once") {
  // From inside the resident kernel, as an operator would: every refusal is returned with its code and
  // counted; nothing is corrupted. The warp's 32 frees of one pointer go through the group path (a
  // warp's frees are served together): one frees the block, 31 are double frees.
  static const char* kSource = R"(#include <gpuos/op.cuh>
struct BadFreeArgs { unsigned* out; void* foreign; unsigned interior; };
__device__ void bad_frees(const BadFreeArgs& a, const gpuos::TileCtx& c) {
  void** shared = static_cast<void**>(c.smem);
  if (threadIdx.x == 0) {
    void* p = gpuos::dev::malloc(64);
    a.out[0] = p != nullptr;
    a.out[1] = gpuos::dev::free(p);
    a.out[2] = gpuos::dev::free(p);
    a.out[3] = gpuos::dev::free(a.foreign);
    void* r = gpuos::dev::malloc(256);
    a.out[4] = a.interior ? gpuos::dev::free(static_cast<char*>(r) + 32) : 5u;
    a.out[5] = gpuos::dev::free(r);
    *shared = gpuos::dev::malloc(128);
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    const unsigned st = gpuos::dev::free(*shared);
    atomicAdd(&a.out[st == 0u ? 6 : st == 6u ? 7 : 8], 1u);
  }
}
GPUOS_OPERATOR(bad_frees, BadFreeArgs, bad_frees)
)";
  struct BadFreeArgs {
    unsigned* out;
    void* foreign;
    unsigned interior;
  };
  test::DeviceBuffer foreign(64), out(16);
  for (const uint32_t flags : {GPUOS_HEAP_CHECKED, 0u}) {
    CAPTURE(flags);
    out.upload(std::vector<float>(16, 0.0f));
    Runtime rt(Options().with_heap(64ull << 20, flags));
    rt.load_operator_source("bad_frees.cu", kSource);
    const bool checked = flags != 0;
    // An interior pointer is only recognized in checked mode (unchecked, freeing one is undefined).
    REQUIRE(rt.wait(rt.submit(Task::make(rt.op_id("bad_frees"), 1,
                                         BadFreeArgs{reinterpret_cast<unsigned*>(out.get()), foreign.get(), checked ? 1u : 0u})),
                    test::slowed(30s)));
    std::vector<unsigned> o(16);
    test::copy_to_host(o.data(), out.get(), 16 * sizeof(unsigned));
    CHECK(o[0] == 1u);
    CHECK(o[1] == 0u);  // freed
    CHECK(o[2] == 6u);  // double free
    CHECK(o[3] == 5u);  // foreign
    CHECK(o[4] == 5u);  // interior (checked), or not attempted
    CHECK(o[5] == 0u);
    CHECK(o[6] == 1u);   // one of the warp's frees freed the block
    CHECK(o[7] == 31u);  // the others were double frees
    CHECK(o[8] == 0u);
    const HeapStats s = rt.heap_stats();
    CHECK(s.double_free == 32);
    CHECK(s.bad_free == (checked ? 2u : 1u));
    CHECK(s.used_blocks == 0);
    CHECK(s.allocs == s.frees);
    require_heap_ok(rt);
  }
}

TEST_CASE("the heap checker reports a corrupted block header; restored, the heap is whole again") {
  Runtime rt(Options().with_heap(16ull << 20));
  void* p = rt.alloc(1000);
  void* q = rt.alloc(5000);
  require_heap_ok(rt);
  // The header of q's block: the 16 bytes before its payload.
  unsigned char* hdr = static_cast<unsigned char*>(q) - 16;
  unsigned char saved[16], junk[16];
  test::copy_to_host(saved, hdr, 16);
  for (unsigned char& b : junk) b = 0xa5;
  test::copy_to_device(hdr, junk, 16);
  std::string why;
  CHECK_FALSE(rt.heap_check(&why));
  INFO(why);
  CHECK(why.find("arena") != std::string::npos);  // where: the arena and offset of the bad block
  test::copy_to_device(hdr, saved, 16);
  require_heap_ok(rt);
  rt.free(q);
  rt.free(p);
  CHECK(rt.heap_stats().used_blocks == 0);
  require_heap_ok(rt);
}

TEST_CASE("device stress with sizes from 1 B to 64 MB: blocks do not overlap; out of memory is a null") {
  // Each of 32 lanes per tile allocates sizes spread evenly over the powers of two from 1 B to 64 MB,
  // writes its first and last 8 bytes, checks them, frees. Large requests fail with null when the pool
  // is full of others (counted, never a hang); every block that was served must be its own.
  static const char* kSource = R"(#include <gpuos/op.cuh>
struct BigArgs { unsigned long long* ctr; unsigned iters; unsigned seed; };
__device__ void big_stress(const BigArgs& a, const gpuos::TileCtx& c) {
  if (threadIdx.x >= 32) return;
  unsigned s = a.seed ^ (c.tile * 7919u + threadIdx.x * 104729u);
  for (unsigned i = 0; i < a.iters; ++i) {
    s = s * 1664525u + 1013904223u;
    const unsigned k = (s >> 8) % 27u;                        // 2^0 .. 2^26 B
    const unsigned long long n = (1ull << k) + ((s >> 20) % (1u << (k < 12 ? k : 12)));
    unsigned char* p = static_cast<unsigned char*>(gpuos::dev::malloc(n));
    if (!p) { atomicAdd(&a.ctr[2], 1ull); continue; }
    atomicAdd(&a.ctr[1], 1ull);
    if (n >= (32ull << 20)) atomicAdd(&a.ctr[4], 1ull);
    const unsigned long long tag = (static_cast<unsigned long long>(s) << 32) | (c.tile * 32u + threadIdx.x);
    // The first bytes and, from 16 bytes on, the last 8 carry the lane's tag.
    for (unsigned long long b = 0; b < 8 && b < n; ++b) p[b] = static_cast<unsigned char>(tag >> (8 * b));
    if (n >= 16)
      for (unsigned long long b = 0; b < 8; ++b) p[n - 1 - b] = static_cast<unsigned char>(tag >> (8 * b));
    bool ok = true;
    for (unsigned long long b = 0; b < 8 && b < n; ++b) ok = ok && p[b] == static_cast<unsigned char>(tag >> (8 * b));
    if (n >= 16)
      for (unsigned long long b = 0; b < 8; ++b) ok = ok && p[n - 1 - b] == static_cast<unsigned char>(tag >> (8 * b));
    if (!ok) atomicAdd(&a.ctr[0], 1ull);
    if (gpuos::dev::free(p) != 0u) atomicAdd(&a.ctr[3], 1ull);
  }
}
GPUOS_OPERATOR(big_stress, BigArgs, big_stress)
)";
  struct BigArgs {
    unsigned long long* ctr;
    unsigned iters;
    unsigned seed;
  };
  test::DeviceBuffer ctr_buf(16);
  const std::vector<uint64_t> zero(8, 0);
  test::copy_to_device(ctr_buf.get(), zero.data(), zero.size() * sizeof(uint64_t));
  auto* ctr = reinterpret_cast<unsigned long long*>(ctr_buf.get());
  Runtime rt(Options().with_heap(1ull << 30));
  rt.load_operator_source("big_stress.cu", kSource);
  // A tile per SM, 40 iterations a lane at full scale.
  const uint32_t tiles = static_cast<uint32_t>(test::scaled(static_cast<size_t>(rt.device_info().sm_count), 8));
  const unsigned kIters = static_cast<unsigned>(test::scaled(40, 8));
  REQUIRE(rt.wait(rt.submit(Task::make(rt.op_id("big_stress"), tiles, BigArgs{ctr, kIters, 12345u})),
                  test::slowed(120s)));
  std::vector<uint64_t> c(8);
  test::copy_to_host(c.data(), ctr_buf.get(), c.size() * sizeof(uint64_t));
  MESSAGE("1 B - 64 MB: " << c[1] << " served (" << c[4] << " of 32 MB or more), " << c[2] << " nulls");
  CHECK(c[0] == 0);  // every served block was the lane's own
  CHECK(c[3] == 0);  // every free succeeded
  CHECK(c[1] + c[2] == uint64_t(tiles) * 32 * kIters);
  CHECK(c[4] > 0);   // large blocks were served too
  const HeapStats s = rt.heap_stats();
  CHECK(s.used_blocks == 0);
  CHECK(s.allocs == s.frees);
  CHECK(s.failed_allocs == c[2]);
  CHECK(s.bad_free + s.double_free == 0);
  require_heap_ok(rt);
}
