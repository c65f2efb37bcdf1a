// Bad input on a running system: a clear error, nothing lost, no hang.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/wait.hpp"

#include "tests/gpu/gpu_fixture.hpp"
#include "kernel/wire.h"

using namespace gpuos;
using namespace std::chrono_literals;

namespace {
gpuos_status submit_raw(gpuos_runtime* rt, uint32_t op, uint32_t tiles, const void* args, uint32_t bytes) {
  gpuos_task t{op, tiles, args, bytes, 0};
  uint64_t k = 0;
  return gpuos_submit(rt, &t, &k);
}
std::string last() { return gpuos_last_error(); }
}  // namespace

TEST_CASE("malformed tasks are refused at submit and nothing is issued") {
  Runtime rt;
  gpuos_runtime* h = rt.handle();
  gpuos_binary_args args{};
  unsigned char big[200] = {};

  CHECK(submit_raw(h, 200, 1, nullptr, 0) == GPUOS_ERR_INVALID_ARG);
  CHECK(last().find("unknown operator id 200") != std::string::npos);
  CHECK(submit_raw(h, 100000, 1, nullptr, 0) == GPUOS_ERR_INVALID_ARG);
  CHECK(submit_raw(h, GPUOS_OP_ADD, 1, &args, 0) == GPUOS_ERR_INVALID_ARG);  // zero-size arguments
  CHECK(last().find("'add' takes 32 bytes") != std::string::npos);
  CHECK(submit_raw(h, GPUOS_OP_ADD, 1, &args, 16) == GPUOS_ERR_INVALID_ARG);
  CHECK(submit_raw(h, GPUOS_OP_ADD, 1, big, sizeof(big)) == GPUOS_ERR_INVALID_ARG);  // oversized
  CHECK(last().find("exceed 88") != std::string::npos);
  CHECK(submit_raw(h, GPUOS_OP_ADD, 1, nullptr, sizeof(args)) == GPUOS_ERR_INVALID_ARG);
  CHECK(submit_raw(h, GPUOS_OP_ADD, 0, &args, sizeof(args)) == GPUOS_ERR_INVALID_ARG);  // zero tiles
  CHECK(submit_raw(h, GPUOS_OP_ADD, GPUOS_MAX_TILES + 1, &args, sizeof(args)) == GPUOS_ERR_INVALID_ARG);
  uint64_t k = 0;
  CHECK(gpuos_submit(h, nullptr, &k) == GPUOS_ERR_INVALID_ARG);

  // A batch with one bad task submits none of them.
  gpuos_task batch[3] = {{GPUOS_OP_NOP, 1, nullptr, 0, 0}, {77, 1, nullptr, 0, 0}, {GPUOS_OP_NOP, 1, nullptr, 0, 0}};
  CHECK(gpuos_submit_batch(h, batch, 3, &k) == GPUOS_ERR_INVALID_ARG);
  CHECK(last().find("task 1:") != std::string::npos);
  CHECK(gpuos_submit_batch(h, batch, 0, &k) == GPUOS_ERR_INVALID_ARG);

  CHECK(rt.stats().submitted == 0);
  // The system still works afterwards.
  CHECK(rt.wait(rt.submit(ops::nop()), 5s));
  CHECK(gpuos_wait(h, 12345, 0) == GPUOS_ERR_INVALID_ARG);  // never issued
}

TEST_CASE("a device that does not exist is a clear error") {
  Options o;
  o.device = 99;
  gpuos_runtime* rt = nullptr;
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_NO_DEVICE);
  CHECK(last().find("device 99 does not exist") != std::string::npos);
  CHECK(rt == nullptr);
}

TEST_CASE("a malformed tuning variable is a clear error at boot; a valid one boots") {
  // The configuration table (common/config.hpp) is read when the runtime is created, before anything
  // is retained or allocated: a malformed value leaves nothing to undo.
  Options o;
  gpuos_runtime* rt = nullptr;
  for (const char* bad : {"fast", "12x", "-1", "4001"}) {
    test::ScopedEnv e("GPUOS_POLL_PACE", bad);
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK_MESSAGE(last().find("GPUOS_POLL_PACE must be an integer in [0, 4000] or off") != std::string::npos, last());
    CHECK(rt == nullptr);
  }
  for (const char* bad : {"0", "65", "off", "8k"}) {
    test::ScopedEnv e("GPUOS_TILE_BATCH", bad);
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK_MESSAGE(last().find("GPUOS_TILE_BATCH must be an integer in [1, 64]") != std::string::npos, last());
  }
  for (const char* bad : {"0", "65", "x"}) {
    test::ScopedEnv e("GPUOS_CLAIM_SPREAD", bad);
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK_MESSAGE(last().find("GPUOS_CLAIM_SPREAD must be an integer in [1, 64]") != std::string::npos, last());
  }
  for (const char* bad : {"2", "yes", "-1"}) {
    test::ScopedEnv e("GPUOS_CLAIM_AHEAD", bad);
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK_MESSAGE(last().find("GPUOS_CLAIM_AHEAD must be 0 or 1") != std::string::npos, last());
  }
  for (const char* bad : {"fast", "SPIN", "1"}) {
    test::ScopedEnv e("GPUOS_CTX_SCHED", bad);
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK_MESSAGE(last().find("GPUOS_CTX_SCHED must be one of driver, auto, spin, yield, blocking") != std::string::npos, last());
    CHECK(rt == nullptr);
  }
  for (const char* good : {"off", "0", "800"}) {
    test::ScopedEnv e("GPUOS_POLL_PACE", good);
    Runtime r;
    CHECK(r.wait(r.submit(ops::nop()), 5s));
  }
}

TEST_CASE("directories set through the options: an empty one is refused, a wrong one is named when used") {
  Options o;
  o.cache_dir = "";
  gpuos_runtime* rt = nullptr;
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
  CHECK_MESSAGE(last().find("a directory is an empty string") != std::string::npos, last());
  CHECK(rt == nullptr);

  Options bad;
  bad.cccl_dir = "/nonexistent/cccl";
  bad.cache_dir = "off";
  Runtime r(bad);  // the compiler is set up at the first operator load
  try {
    r.load_operator_source("x.cu", "#include \"gpuos/op.cuh\"\n");
    FAIL("a load without CCCL must fail");
  } catch (const Error& e) {
    CHECK(e.status() == GPUOS_ERR_UNSUPPORTED);
    CHECK_MESSAGE(std::string(e.what()).find("'/nonexistent/cccl' holds no cuda/std/type_traits") != std::string::npos, e.what());
    CHECK_MESSAGE(std::string(e.what()).find("gpuos_options.cccl_dir") != std::string::npos, e.what());
  }
  CHECK(r.wait(r.submit(ops::nop()), 5s));  // the runtime serves on
}

TEST_CASE("submit after shutdown is refused; earlier tasks were drained and can still be waited on") {
  Runtime rt;
  const Ticket t = rt.submit(ops::nop());
  rt.shutdown();
  CHECK(rt.wait(t, 0ns));  // drained by shutdown
  try {
    rt.submit(ops::nop());
    FAIL("submit after shutdown must fail");
  } catch (const Error& e) {
    CHECK(e.status() == GPUOS_ERR_UNAVAILABLE);
  }
  CHECK_THROWS_AS(rt.resume(), Error);
  rt.shutdown();  // idempotent
}

TEST_CASE("an SM budget launches fewer blocks; GPUOS_SM_BUDGET is the default an option overrides") {
  Options full;
  full.sm_budget = static_cast<std::uint32_t>(query_device().sm_count);  // every SM, whatever the environment says
  Options o;
  o.sm_budget = 8;
  const DeviceInfo all = query_device(full), some = query_device(o);
  CHECK(some.grid_blocks == some.blocks_per_sm * 8);
  CHECK(some.grid_blocks < all.grid_blocks);
  {
    Runtime rt(o);
    CHECK(rt.device_info().grid_blocks == some.grid_blocks);
    CHECK(rt.wait(rt.submit(ops::nop()), 5s));
  }
  // The environment's budget applies where the options leave it 0, and an option set overrides it.
  const char* before = std::getenv("GPUOS_SM_BUDGET");
  const std::string saved = before ? before : "";
  ::setenv("GPUOS_SM_BUDGET", "4", 1);
  const DeviceInfo env4 = query_device(), opt8 = query_device(o);
  if (before) ::setenv("GPUOS_SM_BUDGET", saved.c_str(), 1);
  else ::unsetenv("GPUOS_SM_BUDGET");
  CHECK(env4.grid_blocks == env4.blocks_per_sm * 4);
  CHECK(opt8.grid_blocks == some.grid_blocks);
}

namespace {
struct StageProbeArgs {
  const unsigned* pattern;  // [GPUOS_BLOCK_THREADS * 4]
  unsigned* out;            // [tiles][2]: the stage's size, the mismatches the tile found
};
// Every thread copies its 16 B of a pattern in global memory over and over into its part of the stage
// memory with cp.async, the block waits at a barrier, and each thread checks its neighbour's part: the
// stage is shared memory of the block, its whole size usable.
const char* const kStageProbe = R"(#include "gpuos/op.cuh"
struct StageProbeArgs { const unsigned* pattern; unsigned* out; };
__device__ void stage_probe_tile(const StageProbeArgs& a, const gpuos::TileCtx& c) {
  const gpuos::Stage st = gpuos::stage();
  unsigned* words = static_cast<unsigned*>(st.base);
  const unsigned n = st.bytes / 4u, per = n / GPUOS_BLOCK_THREADS;  // words per thread, a multiple of 4
  unsigned bad = 0;
  for (unsigned w = 0; w < per; w += 4u) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(words + threadIdx.x * per + w));
    const unsigned* from = a.pattern + threadIdx.x * 4u;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(from) : "memory");
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  const unsigned other = (threadIdx.x + 1u) % GPUOS_BLOCK_THREADS;
  for (unsigned w = 0; w < per; ++w)
    if (words[other * per + w] != a.pattern[other * 4u + w % 4u]) ++bad;
  __syncthreads();
  if (threadIdx.x == 0) a.out[2u * c.tile] = st.bytes;
  atomicAdd(a.out + 2u * c.tile + 1u, bad);
}
GPUOS_OPERATOR(stage_probe, StageProbeArgs, stage_probe_tile)
)";
}  // namespace

TEST_CASE("stage memory: each block's operators get the bytes the options ask for; too much is a clear error") {
  Options bad;
  bad.stage_bytes = 1000;  // not a multiple of 16
  CHECK_THROWS_WITH_AS(Runtime{bad}, doctest::Contains("stage_bytes must be a multiple of 16"), Error);
  Options huge;
  huge.stage_bytes = 1u << 20;
  CHECK_THROWS_WITH_AS(query_device(huge), doctest::Contains("stage_bytes 1048576 does not fit"), Error);

  Options o;
  o.stage_bytes = 96u << 10;
  const DeviceInfo info = query_device(o);
  CHECK(info.stage_bytes == static_cast<std::int32_t>(o.stage_bytes));
  CHECK(info.blocks_per_sm >= 1);
  const std::uint32_t tiles = 4 * static_cast<std::uint32_t>(info.grid_blocks);
  support::DeviceArray<unsigned> out((test::use_device(), 2 * tiles)), pattern(GPUOS_BLOCK_THREADS * 4);
  std::vector<unsigned> words(GPUOS_BLOCK_THREADS * 4);
  for (std::size_t i = 0; i < words.size(); ++i) words[i] = 0x9e3779b9u * static_cast<unsigned>(i + 1);
  pattern.upload(words);
  Runtime rt(o);
  CHECK(rt.device_info().stage_bytes == static_cast<std::int32_t>(o.stage_bytes));
  rt.load_operator_source("stage_probe", kStageProbe);
  out.upload(std::vector<unsigned>(2 * tiles, 0u));
  REQUIRE(rt.wait(rt.submit(Task::make(rt.op_id("stage_probe"), tiles, StageProbeArgs{pattern.get(), out.get()})), 30s));
  const std::vector<unsigned> got = out.download();
  unsigned wrong_size = 0, mismatches = 0;
  for (std::uint32_t t = 0; t < tiles; ++t) {
    wrong_size += got[2 * t] != o.stage_bytes;
    mismatches += got[2 * t + 1];
  }
  CHECK(wrong_size == 0);
  CHECK(mismatches == 0);
  // Operators are compiled knowing the runtime's stage memory: one that needs more refuses to compile.
  CHECK_THROWS_WITH_AS(rt.load_operator_source("stage_greedy", std::string(kStageProbe) +
                                                                   "static_assert(GPUOS_STAGE_BYTES >= (200u << 10), "
                                                                   "\"needs 200 KiB of stage memory\");\n"),
                       doctest::Contains("needs 200 KiB of stage memory"), Error);
  // The default runtime gives none.
  CHECK(query_device().stage_bytes == 0);
}

namespace {
struct DirTagArgs {
  float* y;
  float k;
};
std::string dir_tag_source(int factor) {
  return "#include \"gpuos/op.cuh\"\nstruct DirTagArgs { float* y; float k; };\n"
         "__device__ void dir_tag_tile(const DirTagArgs& a, const gpuos::TileCtx&) {\n"
         "  if (threadIdx.x == 0) *a.y = a.k * " + std::to_string(factor) + ".0f;\n}\n"
         "GPUOS_OPERATOR(dir_tag, DirTagArgs, dir_tag_tile)\n";
}
/// As an editor saves: a temporary file renamed into place.
void save_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::path tmp = p;
  tmp += ".tmp";  // not *.cu: the watcher ignores it until the rename
  std::ofstream(tmp) << text;
  std::filesystem::rename(tmp, p);
}
struct DirEvents {
  std::mutex mu;
  std::vector<std::pair<uint32_t, std::string>> seen;  // kind, file name
  static void record(void* self, const gpuos_ops_dir_event* ev) {
    auto* d = static_cast<DirEvents*>(self);
    std::lock_guard<std::mutex> lock(d->mu);
    d->seen.emplace_back(ev->kind, std::filesystem::path(ev->path).filename().string());
  }
};
}  // namespace

TEST_CASE("an operator directory: loaded at open, a saved file goes live, a broken one is refused, a removed one retires") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gpuos-opsdir-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  save_file(dir / "dir_tag.cu", dir_tag_source(1));
  test::DeviceBuffer y(1);
  Runtime rt;
  DirEvents events;
  OpsDir ops(rt, dir.string(), 20, &DirEvents::record, &events);
  CHECK(ops.stats().loads == 1);
  CHECK(ops.stats().watching == 1);
  auto run = [&] {
    y.upload({0.0f});
    REQUIRE(rt.wait(rt.submit(Task::make(rt.op_id("dir_tag"), 1, DirTagArgs{y.get(), 2.0f})), 10s));
    return y.download()[0];
  };
  auto until = [&](auto pred) {
    return common::wait_until(pred, common::Deadline::after(std::chrono::seconds(30)), common::kCompletionBackoff);
  };
  CHECK(run() == 2.0f);

  save_file(dir / "dir_tag.cu", dir_tag_source(3));
  REQUIRE(until([&] { return ops.stats().loads == 2; }));
  CHECK(run() == 6.0f);

  save_file(dir / "dir_tag.cu", dir_tag_source(5) + "this does not compile\n");
  REQUIRE(until([&] { return ops.stats().failures == 1; }));
  CHECK(ops.stats().failing == 1);
  CHECK(run() == 6.0f);  // the version before serves

  fs::remove(dir / "dir_tag.cu");
  REQUIRE(until([&] { return ops.stats().removals == 1; }));
  CHECK_THROWS_AS(rt.op_id("dir_tag"), Error);
  ops.close();
  {
    std::lock_guard<std::mutex> lock(events.mu);
    REQUIRE(events.seen.size() == 4);
    CHECK(events.seen[0] == std::pair<uint32_t, std::string>{GPUOS_OPS_DIR_LOADED, "dir_tag.cu"});
    CHECK(events.seen[1].first == GPUOS_OPS_DIR_LOADED);
    CHECK(events.seen[2].first == GPUOS_OPS_DIR_FAILED);
    CHECK(events.seen[3].first == GPUOS_OPS_DIR_REMOVED);
  }
  // A directory left open is the runtime's: shutdown stops it, and a closed one is no longer known.
  OpsDir again(rt, dir.string(), 20);
  CHECK(again.stats().loads == 0);
  rt.shutdown();
  CHECK_THROWS_AS(again.stats(), Error);
  fs::remove_all(dir);
}
