// The hot-reload watcher: close-after-write and rename-into are reported once per quiet period, editor
// temporaries are ignored, identical contents are deduplicated, removals are reported.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/error.hpp"
#include "host/watcher.hpp"
#include "tests/unit/jit_test_util.hpp"

using namespace gpuos::detail;
using namespace gpuos::jit::test;
using namespace std::chrono_literals;

namespace {

WatchOptions quick() {
  WatchOptions o;
  o.debounce = 50ms;
  o.report_existing = false;
  return o;
}

/// Polls until nothing more arrives for `quiet`, collecting everything.
std::vector<WatchEvent> collect(Watcher& w, std::chrono::milliseconds quiet = 300ms) {
  std::vector<WatchEvent> all;
  for (;;) {
    std::vector<WatchEvent> ev = w.poll(quiet);
    if (ev.empty()) return all;
    for (WatchEvent& e : ev) all.push_back(std::move(e));
  }
}

}  // namespace

TEST_CASE("jit watcher: which names are watched") {
  for (const char* n : {"scale.cu", "a.cu", "softmax_row.cu", "x.y.cu"}) CHECK(is_watched_name(n));
  for (const char* n : {".scale.cu", ".scale.cu.swp", "scale.cu~", "scale.cu.swp", "scale.cu.tmp", "#scale.cu#",
                        ".#scale.cu", "4913", "scale.cuh", "scale.c", ".cu", "scale.cpp", "notes.txt", ""})
    CHECK_MESSAGE(!is_watched_name(n), n);
}

TEST_CASE("jit watcher: add, change, same-content rewrite, remove") {
  ScratchDir dir("watch");
  Watcher w(dir.path(), quick());
  write_file(dir / "op.cu", "v1");
  std::vector<WatchEvent> ev = collect(w);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == WatchEventKind::added);
  CHECK(ev[0].path == dir / "op.cu");
  CHECK(ev[0].content == "v1");
  CHECK(ev[0].hash == gpuos::jit::hash128("v1"));

  write_file(dir / "op.cu", "v2");
  ev = collect(w);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == WatchEventKind::changed);
  CHECK(ev[0].content == "v2");

  write_file(dir / "op.cu", "v2");  // close-after-write with the same bytes: deduplicated
  CHECK(collect(w).empty());

  fs::remove(dir / "op.cu");
  ev = collect(w);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == WatchEventKind::removed);
  CHECK(ev[0].content.empty());
  CHECK(ev[0].hash.is_zero());
}

TEST_CASE("jit watcher: editor temporaries and other files are ignored") {
  ScratchDir dir("tmpfiles");
  Watcher w(dir.path(), quick());
  for (const char* n : {".op.cu.swp", "op.cu~", "#op.cu#", "4913", "op.cu.tmp", "notes.txt", "op.cuh"})
    write_file(dir / n, "x");
  fs::create_directory(dir / "sub.cu");  // a directory named like a source
  CHECK(collect(w).empty());
}

TEST_CASE("jit watcher: a save by rename gives one event with the final content") {
  ScratchDir dir("rename");
  WatchOptions o = quick();
  o.debounce = 250ms;  // the editor's steps below must fall within one quiet period, also on a busy machine
  Watcher w(dir.path(), o);
  // Atomic writer: write a temporary, rename it over the target.
  write_file(dir / ".op.cu.tmp123", "renamed in");
  fs::rename(dir / ".op.cu.tmp123", dir / "op.cu");
  std::vector<WatchEvent> ev = collect(w);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == WatchEventKind::added);
  CHECK(ev[0].content == "renamed in");

  // An editor that moves the original to a backup, then writes a new file: a change, not remove + add.
  fs::rename(dir / "op.cu", dir / "op.cu~");
  write_file(dir / "4913", "");
  fs::remove(dir / "4913");
  write_file(dir / "op.cu", "edited");
  ev = collect(w);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == WatchEventKind::changed);
  CHECK(ev[0].content == "edited");
}

TEST_CASE("jit watcher: a burst of writes within the quiet period gives one event") {
  ScratchDir dir("burst");
  WatchOptions o = quick();
  o.debounce = 100ms;
  Watcher w(dir.path(), o);
  for (int i = 0; i < 10; ++i) {
    write_file(dir / "op.cu", "version " + std::to_string(i));
    std::this_thread::sleep_for(10ms);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<WatchEvent> ev = w.poll(2s);
  const auto waited = std::chrono::steady_clock::now() - t0;
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].content == "version 9");
  CHECK(waited >= 50ms);  // it waited for the quiet period
  CHECK(collect(w).empty());
}

TEST_CASE("jit watcher: moving a file out of the directory removes it; created-and-deleted is silent") {
  ScratchDir dir("moveout");
  ScratchDir other("moveout-other");
  Watcher w(dir.path(), quick());
  write_file(dir / "op.cu", "x");
  REQUIRE(collect(w).size() == 1);
  fs::rename(dir / "op.cu", other / "op.cu");
  std::vector<WatchEvent> ev = collect(w);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == WatchEventKind::removed);

  write_file(dir / "brief.cu", "gone soon");
  fs::remove(dir / "brief.cu");
  CHECK(collect(w).empty());
}

TEST_CASE("jit watcher: files present at start are reported as added on the first poll") {
  ScratchDir dir("existing");
  write_file(dir / "a.cu", "a");
  write_file(dir / "b.cu", "b");
  write_file(dir / ".hidden.cu", "h");
  Watcher w(dir.path(), WatchOptions{});
  std::vector<WatchEvent> ev = w.poll(1s);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].path == dir / "a.cu");
  CHECK(ev[1].path == dir / "b.cu");
  CHECK(ev[0].kind == WatchEventKind::added);
  write_file(dir / "b.cu", "b");  // same content as reported at start
  CHECK(collect(w).empty());
}

TEST_CASE("jit watcher: a missing directory is an error; a deleted one reports its files removed") {
  CHECK_THROWS_AS(Watcher("/nonexistent/gpuos/dir"), gpuos::common::Failure);
  auto dir = std::make_unique<ScratchDir>("vanish");
  Watcher w(dir->path(), quick());
  write_file(*dir / "op.cu", "x");
  REQUIRE(collect(w).size() == 1);
  const fs::path p = dir->path();
  dir.reset();  // removes the directory and its content
  std::vector<WatchEvent> ev = collect(w);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == WatchEventKind::removed);
  CHECK_FALSE(w.watching());
  CHECK_FALSE(fs::exists(p));
}
