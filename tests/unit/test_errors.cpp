// The C ABI's handling of bad input that needs no GPU, and of a machine without a usable device.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstring>
#include <string>

#include "gpuos/gpuos.h"
#include "gpuos/gpuos.hpp"

TEST_CASE("every status has a name") {
  for (int s = GPUOS_OK; s <= GPUOS_ERR_HUNG; ++s)
    CHECK(std::string(gpuos_status_name(static_cast<gpuos_status>(s))).rfind("GPUOS_", 0) == 0);
  CHECK(std::string(gpuos_status_name(static_cast<gpuos_status>(999))) == "GPUOS_ERR_UNKNOWN");
  CHECK(std::string(gpuos_status_name(GPUOS_ERR_HUNG)) == "GPUOS_ERR_HUNG");
}

TEST_CASE("options: defaults and validation before any device is touched") {
  gpuos_options o;
  gpuos_options_init(&o);
  CHECK(o.struct_size == sizeof(gpuos_options));
  CHECK(o.queue_capacity == 65536);
  CHECK(o.device == 0);

  gpuos_runtime* rt = reinterpret_cast<gpuos_runtime*>(0x1);
  o.queue_capacity = 100;  // not a power of two
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
  CHECK(rt == nullptr);
  CHECK(std::string(gpuos_last_error()).find("power of two") != std::string::npos);

  gpuos_options_init(&o);
  o.queue_capacity = 32;  // too small
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
  gpuos_options_init(&o);
  o.struct_size = 8;
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
  CHECK(std::string(gpuos_last_error()).find("struct_size") != std::string::npos);
}

TEST_CASE("options: residency defaults and validation") {
  gpuos_options o;
  gpuos_options_init(&o);
  CHECK(o.slice_us == 5000);
  CHECK(o.park_us == 2000);
  gpuos_runtime* rt = nullptr;
  for (uint32_t bad : {1u, 99u, 10000001u}) {
    gpuos_options_init(&o);
    o.slice_us = bad;
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK(std::string(gpuos_last_error()).find("slice_us must be 0 (never) or in [100, 10000000]") != std::string::npos);
    gpuos_options_init(&o);
    o.park_us = bad;
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK(std::string(gpuos_last_error()).find("park_us must be 0") != std::string::npos);
  }
  CHECK(rt == nullptr);
  const gpuos::Options cpp = gpuos::Options().with_residency(0, 500);
  CHECK(cpp.slice_us == 0);
  CHECK(cpp.park_us == 500);
}

TEST_CASE("options: the watchdog's deadline, its default and validation") {
  gpuos_options o;
  gpuos_options_init(&o);
  CHECK(o.deadline_ms == 10000);
  gpuos_runtime* rt = nullptr;
  for (uint32_t bad : {1u, 9u}) {
    o.deadline_ms = bad;
    CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
    CHECK(std::string(gpuos_last_error()).find("deadline_ms must be 0 (no watchdog) or at least 10") != std::string::npos);
  }
  CHECK(rt == nullptr);
  CHECK(gpuos::Options().with_deadline(250).deadline_ms == 250);
  CHECK(gpuos::Task().with_deadline(40).c().deadline_ms == 40);
  CHECK(gpuos_set_op_deadline(nullptr, 0, 100) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_destroy(nullptr) == GPUOS_OK);
}

TEST_CASE("options: the heap's defaults and validation") {
  gpuos_options o;
  gpuos_options_init(&o);
  CHECK(o.heap_bytes == (256ull << 20));
  CHECK(o.heap_arenas == 0);
  CHECK(o.heap_flags == 0);
  gpuos_runtime* rt = nullptr;
  o.heap_bytes = 1000;  // neither 0 nor >= 1 MiB
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
  CHECK(std::string(gpuos_last_error()).find("heap_bytes") != std::string::npos);
  gpuos_options_init(&o);
  o.heap_arenas = 5000;
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
  CHECK(std::string(gpuos_last_error()).find("heap_arenas") != std::string::npos);
  gpuos_options_init(&o);
  o.heap_flags = 6;
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_INVALID_ARG);
  CHECK(std::string(gpuos_last_error()).find("heap_flags") != std::string::npos);
  CHECK(rt == nullptr);
  // The heap calls refuse a NULL handle or output.
  void* p = reinterpret_cast<void*>(0x1);
  CHECK(gpuos_alloc(nullptr, 16, 16, &p) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_alloc(reinterpret_cast<gpuos_runtime*>(0x1), 16, 16, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_free(nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  gpuos_heap_stats hs;
  CHECK(gpuos_heap_get_stats(nullptr, &hs) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_heap_check(nullptr) == GPUOS_ERR_INVALID_ARG);
}

TEST_CASE("NULL handles and outputs are rejected, not dereferenced") {
  uint64_t t = 0;
  gpuos_task task{};
  CHECK(gpuos_create(nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_submit(nullptr, &task, &t) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_try_submit(nullptr, &task, &t) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_submit_batch(nullptr, &task, 1, &t) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_submit_on_stream(nullptr, &task, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_submit_on_stream(reinterpret_cast<gpuos_runtime*>(0x1), nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_graph_launch_on_stream(nullptr, nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_graph_launch_on_stream(reinterpret_cast<gpuos_runtime*>(0x1), nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  size_t needed = 0;
  CHECK(gpuos_metrics(nullptr, nullptr, 0, &needed) == GPUOS_ERR_INVALID_ARG);
  gpuos_ops_dir* dir = nullptr;
  gpuos_ops_dir_stats dst{};
  CHECK(gpuos_ops_dir_open(nullptr, "/tmp", 20, nullptr, nullptr, &dir) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_ops_dir_open(reinterpret_cast<gpuos_runtime*>(0x1), nullptr, 20, nullptr, nullptr, &dir) ==
        GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_ops_dir_open(reinterpret_cast<gpuos_runtime*>(0x1), "/tmp", 20, nullptr, nullptr, nullptr) ==
        GPUOS_ERR_INVALID_ARG);
  CHECK(dir == nullptr);
  CHECK(gpuos_ops_dir_get_stats(nullptr, nullptr, &dst) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_ops_dir_close(nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_wait(nullptr, 0, 0) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_drain(nullptr, 0) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_get_stats(nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_suspend(nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_resume(nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_query_device(nullptr, nullptr) == GPUOS_ERR_INVALID_ARG);
  CHECK(gpuos_destroy(nullptr) == GPUOS_OK);
}

TEST_CASE("without a CUDA driver, booting fails with a clear GPUOS_ERR_NO_DEVICE") {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
  if (h) {
    dlclose(h);
    MESSAGE("a CUDA driver is installed here: the no-driver path is not exercised on this machine");
    return;
  }
  gpuos_options o;
  gpuos_options_init(&o);
  gpuos_runtime* rt = nullptr;
  CHECK(gpuos_create(&o, &rt) == GPUOS_ERR_NO_DEVICE);
  CHECK(rt == nullptr);
  CHECK(std::string(gpuos_last_error()).find("libcuda.so.1") != std::string::npos);
  gpuos_device_info info;
  CHECK(gpuos_query_device(&o, &info) == GPUOS_ERR_NO_DEVICE);
  // The C++ API reports the same as an exception carrying the status.
  try {
    gpuos::Runtime r;
    FAIL("booting without a driver must throw");
  } catch (const gpuos::Error& e) {
    CHECK(e.status() == GPUOS_ERR_NO_DEVICE);
    CHECK(std::string(e.what()).find("GPUOS_ERR_NO_DEVICE") != std::string::npos);
  }
}
