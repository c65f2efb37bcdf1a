// The compile cache: hits in memory and on disk, keys that change with every input that matters,
// damaged files that are detected and never used, LRU eviction within the bound, atomic writes.
#include <doctest/doctest.h>

#include <map>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

#include "jit/cache.hpp"
#include "jit/compiler.hpp"
#include "tests/unit/jit_test_util.hpp"

using namespace gpuos::jit;
using namespace gpuos::jit::test;

namespace {

CompileOptions copts() { return test_compile_options(); }

CacheConfig disk_config(const fs::path& dir) {
  CacheConfig c;
  c.dir = dir;
  return c;
}

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

Hash128 key(std::uint64_t n) { return Hash128{n, ~n}; }

int temp_files(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / "v1"))
    if (e.path().filename().string().starts_with(".tmp-")) ++n;
  return n;
}

}  // namespace

TEST_CASE("jit cache: memory hit, then disk hit from a second cache on the same directory") {
  ScratchDir dir("cache");
  {
    Cache c(disk_config(dir.path()));
    CHECK_FALSE(c.get(key(1)).has_value());
    c.put(key(1), bytes("hello"));
    CHECK(c.get(key(1)) == bytes("hello"));
    const CacheStats s = c.stats();
    CHECK(s.misses == 1);
    CHECK(s.memory_hits == 1);
    CHECK(s.stores == 1);
    CHECK(fs::exists(c.file_of(key(1))));
    CHECK(temp_files(dir.path()) == 0);
  }
  Cache again(disk_config(dir.path()));
  CHECK(again.get(key(1)) == bytes("hello"));
  CHECK(again.stats().disk_hits == 1);
  CHECK(again.get(key(1)) == bytes("hello"));
  CHECK(again.stats().memory_hits == 1);
}

TEST_CASE("jit cache: a second compile of the same source is a hit, also in a new process's cache") {
  ScratchDir dir("cc");
  const std::string src = op_source("cached_op");
  Cache c(disk_config(dir.path()));
  const std::uint64_t before = compile_stats().nvrtc_compiles;
  const CompileResult a = compile("cached.cu", src, copts(), &c);
  REQUIRE(a.ok());
  CHECK_FALSE(a.from_cache);
  const CompileResult b = compile("cached.cu", src, copts(), &c);
  REQUIRE(b.ok());
  CHECK(b.from_cache);
  CHECK(b.key == a.key);
  CHECK(b.ltoir == a.ltoir);
  CHECK(b.operators == a.operators);
  CHECK(compile_stats().nvrtc_compiles == before + 1);

  Cache fresh(disk_config(dir.path()));  // as a new process would
  const CompileResult d = compile("cached.cu", src, copts(), &fresh);
  REQUIRE(d.ok());
  CHECK(d.from_cache);
  CHECK(fresh.stats().disk_hits == 1);
  CHECK(d.ltoir == a.ltoir);
}

TEST_CASE("jit cache: failed compiles are not cached") {
  Cache c(CacheConfig{});
  const CompileResult a = compile("bad.cu", "#include \"gpuos/op.cuh\"\nnot C++\n", copts(), &c);
  CHECK_FALSE(a.ok());
  const CompileResult b = compile("bad.cu", "#include \"gpuos/op.cuh\"\nnot C++\n", copts(), &c);
  CHECK_FALSE(b.ok());
  CHECK_FALSE(b.from_cache);
  CHECK(c.stats().stores == 0);
}

TEST_CASE("jit cache: the key changes with an included header's content, options, defines, arch and name") {
  ScratchDir dir("key");
  write_file(dir / "param.cuh", "#define SCALE_K 2.0f\n");
  write_file(dir / "op.cu", "#include \"param.cuh\"\n" + op_source("keyed"));
  Cache c(CacheConfig{});
  const CompileResult a = compile_file(dir / "op.cu", copts(), &c);
  REQUIRE(a.ok());
  CHECK(compile_file(dir / "op.cu", copts(), &c).from_cache);

  write_file(dir / "param.cuh", "#define SCALE_K 3.0f\n");  // same size, new content, same second
  const CompileResult b = compile_file(dir / "op.cu", copts(), &c);
  REQUIRE(b.ok());
  CHECK_FALSE(b.from_cache);
  CHECK(b.key != a.key);

  CompileOptions o = copts();
  o.defines = {"EXTRA=1"};
  CHECK(compile_file(dir / "op.cu", o, &c).key != b.key);
  o = copts();
  o.lineinfo = false;
  CHECK(compile_file(dir / "op.cu", o, &c).key != b.key);
  o = copts();
  o.arch = 100;
  const CompileResult other_arch = compile_file(dir / "op.cu", o, &c);
  CHECK(other_arch.key != b.key);

  const std::string text = read_file(dir / "op.cu");
  CHECK(compile("renamed.cu", text, copts(), &c, dir.path().string()).key != b.key);

  // An in-memory source finds quoted includes next to its name, as NVRTC does: they count as well.
  const std::string mem_name = (dir / "in_memory.cu").string();
  const CompileResult m1 = compile(mem_name, text, copts(), &c);
  REQUIRE(m1.ok());
  write_file(dir / "param.cuh", "#define SCALE_K 4.0f\n");
  const CompileResult m2 = compile(mem_name, text, copts(), &c);
  REQUIRE(m2.ok());
  CHECK_FALSE(m2.from_cache);
  CHECK(m2.key != m1.key);
}

TEST_CASE("jit cache: a header that appears on the include path changes the key") {
  ScratchDir dir("appear");
  ScratchDir inc("appear-inc");
  write_file(dir / "op.cu", "#if __has_include(\"maybe.cuh\")\n#include \"maybe.cuh\"\n#endif\n" + op_source("maybe"));
  CompileOptions o = copts();
  o.include_dirs.insert(o.include_dirs.begin(), inc.path().string());
  const CompileResult a = compile_file(dir / "op.cu", o);
  REQUIRE(a.ok());
  write_file(inc / "maybe.cuh", "// now it exists\n");
  const CompileResult b = compile_file(dir / "op.cu", o);
  REQUIRE(b.ok());
  CHECK(b.key != a.key);
}

TEST_CASE("jit cache: a truncated file is detected, counted, removed and recompiled") {
  ScratchDir dir("trunc");
  Cache c(disk_config(dir.path()));
  const std::string src = op_source("trunc_op");
  const CompileResult a = compile("t.cu", src, copts(), &c);
  REQUIRE(a.ok());
  const fs::path f = c.file_of(a.key);
  REQUIRE(fs::exists(f));
  fs::resize_file(f, fs::file_size(f) / 2);
  c.clear_memory();

  const std::uint64_t before = compile_stats().nvrtc_compiles;
  const CompileResult b = compile("t.cu", src, copts(), &c);
  REQUIRE(b.ok());
  CHECK_FALSE(b.from_cache);
  CHECK(b.ltoir == a.ltoir);
  CHECK(c.stats().corrupt == 1);
  CHECK(compile_stats().nvrtc_compiles == before + 1);
  // The recompile stored a good file again.
  c.clear_memory();
  CHECK(compile("t.cu", src, copts(), &c).from_cache);

  // Shorter than a header, and empty.
  for (std::uintmax_t size : {std::uintmax_t{10}, std::uintmax_t{0}}) {
    c.put(key(7), bytes("payload"));
    fs::resize_file(c.file_of(key(7)), size);
    c.clear_memory();
    CHECK_FALSE(c.get(key(7)).has_value());
    CHECK_FALSE(fs::exists(c.file_of(key(7))));
  }
  CHECK(c.stats().corrupt == 3);
}

TEST_CASE("jit cache: a flipped payload byte fails the checksum and is never returned") {
  ScratchDir dir("flip");
  Cache c(disk_config(dir.path()));
  c.put(key(2), bytes("some artifact bytes"));
  const fs::path f = c.file_of(key(2));
  std::string raw = read_file(f);
  raw[Cache::kHeaderBytes + 3] ^= 0x20;
  write_file(f, raw);
  c.clear_memory();
  CHECK_FALSE(c.get(key(2)).has_value());
  CHECK(c.stats().corrupt == 1);
  CHECK(c.stats().misses == 1);
  CHECK_FALSE(fs::exists(f));

  // A file holding another key's entry (a copy, a rename) is rejected the same way.
  c.put(key(3), bytes("three"));
  c.put(key(4), bytes("four"));
  fs::copy_file(c.file_of(key(3)), c.file_of(key(4)), fs::copy_options::overwrite_existing);
  c.clear_memory();
  CHECK_FALSE(c.get(key(4)).has_value());
  CHECK(c.stats().corrupt == 2);
  CHECK(c.get(key(3)) == bytes("three"));
}

TEST_CASE("jit cache: the disk stays within its bound, evicting the least recently used first") {
  ScratchDir dir("lru");
  CacheConfig cfg = disk_config(dir.path());
  const std::string blob(1000, 'b');
  const std::uint64_t entry = Cache::kHeaderBytes + blob.size();
  cfg.disk_limit_bytes = 3 * entry + entry / 2;  // room for three entries
  Cache c(cfg);
  auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(30)); };  // distinct mtimes
  c.put(key(10), bytes(blob));
  pause();
  c.put(key(11), bytes(blob));
  pause();
  c.put(key(12), bytes(blob));
  pause();
  c.clear_memory();
  REQUIRE(c.get(key(10)).has_value());  // 10 is now the most recently used; 11 the least
  pause();
  c.put(key(13), bytes(blob));
  CHECK(c.disk_usage() <= cfg.disk_limit_bytes);
  CHECK(c.stats().evictions >= 1);
  CHECK_FALSE(fs::exists(c.file_of(key(11))));
  CHECK(fs::exists(c.file_of(key(10))));
  CHECK(fs::exists(c.file_of(key(13))));
  CHECK(temp_files(dir.path()) == 0);
}

TEST_CASE("jit cache: the memory tier is bounded and LRU too") {
  CacheConfig cfg;
  cfg.memory_limit_bytes = 250;
  Cache c(cfg);
  const std::string blob(100, 'm');
  c.put(key(20), bytes(blob));
  c.put(key(21), bytes(blob));
  CHECK(c.get(key(20)).has_value());  // 21 becomes the least recently used
  c.put(key(22), bytes(blob));
  CHECK(c.get(key(20)).has_value());
  CHECK_FALSE(c.get(key(21)).has_value());
  CHECK(c.get(key(22)).has_value());
  c.put(key(23), std::vector<char>(1000, 'x'));  // larger than the tier: not kept in memory
  CHECK_FALSE(c.get(key(23)).has_value());
}

TEST_CASE("jit cache: the directory comes from the configuration, XDG_CACHE_HOME or HOME") {
  using gpuos::common::Config;
  auto env = [](std::map<std::string, const char*> vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second;
    };
  };
  Config custom;
  custom.cache_dir = "/custom/dir";
  CHECK(CacheConfig::from(custom, env({{"XDG_CACHE_HOME", "/xdg"}})).dir == fs::path("/custom/dir"));
  CHECK(CacheConfig::from(Config{}, env({{"XDG_CACHE_HOME", "/xdg"}})).dir == fs::path("/xdg/gpuos"));
  CHECK(CacheConfig::from(Config{}, env({{"XDG_CACHE_HOME", "relative/ignored"}, {"HOME", "/home/someone"}})).dir ==
        fs::path("/home/someone/.cache/gpuos"));
  CHECK_FALSE(CacheConfig::from(Config{}, env({})).dir.has_value());
  Config off;
  off.cache_dir = "off";
  CHECK_FALSE(CacheConfig::from(off, env({{"HOME", "/home/someone"}})).dir.has_value());
  // Through the configuration table, as a runtime reads it.
  const Config from_env = Config::from_env(env({{"GPUOS_CACHE_DIR", "/c"}, {"GPUOS_CACHE_MAX_BYTES", "64M"}}));
  CHECK(CacheConfig::from(from_env, env({})).dir == fs::path("/c"));
  CHECK(CacheConfig::from(from_env, env({})).disk_limit_bytes == 64ull << 20);
}

TEST_CASE("jit cache: an unusable directory degrades to memory only, counted") {
  ScratchDir dir("ro");
  write_file(dir / "a_file", "x");
  Cache c(disk_config(dir / "a_file" / "sub"));  // a path below a regular file can never be created
  CHECK(c.stats().write_errors == 1);
  CHECK(c.file_of(key(1)).empty());
  c.put(key(1), bytes("kept in memory"));
  CHECK(c.get(key(1)) == bytes("kept in memory"));
}

TEST_CASE("jit cache: concurrent puts and gets of the same keys") {
  ScratchDir dir("conc");
  Cache c(disk_config(dir.path()));
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::uint64_t k = static_cast<std::uint64_t>(i % 5);
        const std::string v = "value-" + std::to_string(k);
        c.put(key(k), bytes(v));
        if (t % 2) c.clear_memory();
        auto got = c.get(key(k));
        if (!got || *got != bytes(v)) bad.fetch_add(1);
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(bad.load() == 0);
  CHECK(c.stats().corrupt == 0);
  CHECK(temp_files(dir.path()) == 0);
}
