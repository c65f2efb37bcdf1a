// Scheduler object + NVRTC operators + generated jump table -> one cubin, on the CPU. The cubin is
// checked by its ELF symbol table; broken inputs fail with nvJitLink's explanation.
#include <doctest/doctest.h>

#include <cstring>

#include "kernel/wire.h"
#include "gpuos/builtin_ops.h"
#include "common/error.hpp"
#include "jit/cache.hpp"
#include "jit/image.hpp"
#include "jit/linker.hpp"
#include "jit/table.hpp"
#include "tests/unit/jit_test_util.hpp"

using namespace gpuos::jit;
using namespace gpuos::jit::test;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

CompileOptions copts() { return test_compile_options(); }

LinkOptions lopts() {
  LinkOptions o;
  o.arch = test_arch();
  return o;
}

/// Compiled once per process: the examples and the stand-in scheduler.
struct Fixture {
  std::vector<char> sched = read_bytes(sched_stub_object());
  CompileResult scale = compile_file(examples_dir() / "scale.cu", copts());
  CompileResult softmax = compile_file(examples_dir() / "softmax_row.cu", copts());
};

Fixture& fx() {
  static Fixture f;
  REQUIRE(!f.sched.empty());
  REQUIRE(f.scale.ok());
  REQUIRE(f.softmax.ok());
  return f;
}

ImageSpec spec_with(const std::vector<const CompileResult*>& units, std::vector<TableEntry> table) {
  ImageSpec s;
  s.base.push_back({InputKind::object, fx().sched, "jit_test_sched"});
  s.units = units;
  s.table = std::move(table);
  return s;
}

}  // namespace

TEST_CASE("jit link: scheduler object + operators + table -> a cubin that defines them all") {
  const ImageResult r = build_image(spec_with({&fx().scale, &fx().softmax}, {{0, "scale"}, {5, "softmax_row"}}), lopts());
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.error.empty());
  CHECK_FALSE(r.from_cache);
  CHECK(elf_defines_symbol(r.cubin, "gpuos_jit_test_run"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_table"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_scale_entry"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_softmax_row_entry"));
  CHECK_FALSE(elf_defines_symbol(r.cubin, "gpuos_op_relu_entry"));
  CHECK_FALSE(elf_defines_symbol(r.cubin, "no_such_symbol"));
}

TEST_CASE("jit link: the real resident kernel links with built-ins and a run-time operator") {
  const std::vector<char> kernel = read_bytes(kernel_object());
  REQUIRE(!kernel.empty());
  ImageSpec s;
  s.base.push_back({InputKind::object, kernel, "gpuos_kernel"});
  s.base_operators = {"nop", "fill", "copy", "add", "mul", "axpy", "sum"};
  for (unsigned i = 0; i < s.base_operators.size(); ++i) s.table.push_back({i, s.base_operators[i]});
  s.units = {&fx().scale};
  s.table.push_back({GPUOS_BUILTIN_OP_COUNT, "scale"});
  const ImageResult r = build_image(s, lopts());
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(elf_defines_symbol(r.cubin, "gpuos_main"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_table"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_sum_entry"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_scale_entry"));
}

TEST_CASE("jit link: a run-time operator that uses gpuos::dev::malloc / free links against the real kernel") {
  // op.cuh declares the heap functions; NVRTC compiles the call, nvJitLink resolves it against the
  // definitions in the resident kernel's object. Against the stand-in scheduler it is an undefined symbol.
  const std::string src =
      "#include \"gpuos/op.cuh\"\n"
      "struct keep_args { void** out; unsigned long long bytes; };\n"
      "__device__ void keep_fn(const keep_args& a, const gpuos::TileCtx& c) {\n"
      "  void* p = gpuos::dev::malloc(a.bytes, 64);\n"
      "  if (p) static_cast<unsigned char*>(p)[0] = 1;\n"
      "  a.out[c.tile * blockDim.x + threadIdx.x] = p;\n"
      "  if (c.tiles == 0) gpuos::dev::free(p);\n"
      "}\n"
      "GPUOS_OPERATOR(keep, keep_args, keep_fn)\n";
  const CompileResult op = compile("keep.cu", src, copts());
  INFO(op.error_text());
  REQUIRE(op.ok());
  const std::vector<char> kernel = read_bytes(kernel_object());
  ImageSpec s;
  s.base.push_back({InputKind::object, kernel, "gpuos_kernel"});
  s.base_operators = {"nop", "fill", "copy", "add", "mul", "axpy", "sum"};
  for (unsigned i = 0; i < s.base_operators.size(); ++i) s.table.push_back({i, s.base_operators[i]});
  s.units = {&op};
  s.table.push_back({GPUOS_BUILTIN_OP_COUNT, "keep"});
  const ImageResult r = build_image(s, lopts());
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_keep_entry"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_heap_layout"));

  const ImageResult stub = build_image(spec_with({&op}, {{0, "keep"}}), lopts());
  CHECK_FALSE(stub.ok);
  CHECK(contains(stub.error, "gpuos_dev_malloc"));
}

TEST_CASE("jit link: the Linker steps one by one") {
  const std::vector<TableEntry> table = {{1, "scale"}};
  const CompileResult t = compile_table(table, copts());
  INFO(t.error_text());
  REQUIRE(t.ok());
  Linker l(lopts());
  l.add(InputKind::object, fx().sched, "sched");
  l.add(InputKind::ltoir, fx().scale.ltoir, "scale.cu");
  l.add(InputKind::ltoir, t.ltoir, "table");
  const LinkResult r = l.finish();
  INFO(r.error_log);
  REQUIRE(r.ok);
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_scale_entry"));
  CHECK_THROWS_AS(l.finish(), gpuos::common::Failure);
}

TEST_CASE("jit link: a table naming an operator no input defines fails with the undefined symbol") {
  const std::vector<TableEntry> table = {{0, "scale"}, {1, "ghost"}};
  const CompileResult t = compile_table(table, copts());
  REQUIRE(t.ok());
  const std::vector<LinkInput> in = {{InputKind::object, fx().sched, "sched"},
                                     {InputKind::ltoir, fx().scale.ltoir, "scale.cu"},
                                     {InputKind::ltoir, t.ltoir, "table"}};
  const LinkResult r = link(in, lopts());
  CHECK_FALSE(r.ok);
  CHECK(r.cubin.empty());
  CHECK(contains(r.error_log, "gpuos_op_ghost_entry"));

  // build_image says it before linking, in the user's terms.
  const ImageResult b = build_image(spec_with({&fx().scale}, table), lopts());
  CHECK_FALSE(b.ok);
  CHECK(contains(b.error, "slot 1: no unit declares operator 'ghost'"));
}

TEST_CASE("jit link: one operator name declared by two sources is refused, naming both") {
  ScratchDir dir("dup");
  write_file(dir / "first.cu", op_source("twin"));
  write_file(dir / "second.cu", op_source("twin", "// a different file, the same operator\n"));
  const CompileResult a = compile_file(dir / "first.cu", copts());
  const CompileResult b = compile_file(dir / "second.cu", copts());
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const ImageResult r = build_image(spec_with({&a, &b}, {{0, "twin"}}), lopts());
  CHECK_FALSE(r.ok);
  CHECK(contains(r.error, "operator 'twin' is declared twice"));
  CHECK(contains(r.error, (dir / "first.cu").string()));
  CHECK(contains(r.error, (dir / "second.cu").string()));

  // A built-in name taken by a run-time operator is the same mistake.
  ImageSpec s = spec_with({&a}, {{0, "twin"}});
  s.base_operators = {"twin"};
  const ImageResult c = build_image(s, lopts());
  CHECK_FALSE(c.ok);
  CHECK(contains(c.error, "by the base image and by"));

  // nvJitLink itself refuses the duplicate definition too.
  const CompileResult t = compile_table(std::vector<TableEntry>{{0, "twin"}}, copts());
  const std::vector<LinkInput> in = {{InputKind::object, fx().sched, "sched"},
                                     {InputKind::ltoir, a.ltoir, "first.cu"},
                                     {InputKind::ltoir, b.ltoir, "second.cu"},
                                     {InputKind::ltoir, t.ltoir, "table"}};
  const LinkResult l = link(in, lopts());
  CHECK_FALSE(l.ok);
  CHECK(contains(l.error_log, "gpuos_op_twin"));
}

TEST_CASE("jit link: a unit that failed to compile is refused with its diagnostics") {
  const CompileResult bad = compile("broken.cu", "#include \"gpuos/op.cuh\"\nthis is not C++;\n", copts());
  REQUIRE_FALSE(bad.ok());
  const ImageResult r = build_image(spec_with({&bad}, {}), lopts());
  CHECK_FALSE(r.ok);
  CHECK(contains(r.error, "operator unit 'broken.cu' did not compile"));
  CHECK(contains(r.error, "broken.cu:2"));
}

TEST_CASE("jit link: garbage and empty inputs fail with the input's name") {
  const std::string junk(4096, 'x');
  const std::vector<LinkInput> in = {{InputKind::object, fx().sched, "sched"},
                                     {InputKind::ltoir, std::span<const char>(junk.data(), junk.size()), "junk.ltoir"}};
  const LinkResult r = link(in, lopts());
  CHECK_FALSE(r.ok);
  CHECK(contains(r.error_log, "junk.ltoir"));

  const std::vector<LinkInput> empty = {{InputKind::ltoir, {}, "nothing"}};
  const LinkResult e = link(empty, lopts());
  CHECK_FALSE(e.ok);
  CHECK(contains(e.error_log, "input 'nothing' is empty"));
}

TEST_CASE("jit link: jump-table source and its validation") {
  const std::string src = table_source(std::vector<TableEntry>{{2, "relu"}, {0, "scale"}, {3, "scale"}});
  CHECK_FALSE(contains(src, "#include"));  // no headers: compiles in milliseconds
  CHECK(contains(src, "extern \"C\" __device__ const ::gpuos::OpEntry gpuos_op_relu_entry;"));
  CHECK(contains(src, "gpuos_op_table[" + std::to_string(GPUOS_MAX_OPS) + "]"));
  CHECK(contains(src, "/* 0 */ &gpuos_op_scale_entry,"));
  CHECK(contains(src, "/* 1 */ nullptr,"));
  CHECK(contains(src, "/* 3 */ &gpuos_op_scale_entry,"));
  CHECK_FALSE(contains(src, "/* 4 */"));
  CHECK_FALSE(contains(src, "gpuos_loaded_tile"));  // only for dispatch loops that call it

  // With loaded_tile: direct calls of the loaded operators' range adapters, none of a base operator's.
  const std::vector<std::string> base = {"scale"};
  const std::string inl = table_source(std::vector<TableEntry>{{0, "scale"}, {2, "relu"}}, true, base);
  CHECK(contains(inl, "gpuos_loaded_tile("));
  CHECK(contains(inl, "if (tile == &gpuos_op_relu_tile) return gpuos_op_relu_tile(a, c, n);"));
  CHECK_FALSE(contains(inl, "gpuos_op_scale_tile"));
  CHECK(contains(inl, "  tile(a, c, n);"));  // anything else through its row

  auto status = [](std::vector<TableEntry> t) {
    try {
      table_source(t);
    } catch (const gpuos::common::Failure& f) {
      return f.status();
    }
    return GPUOS_OK;
  };
  CHECK(status({{GPUOS_MAX_OPS, "scale"}}) == GPUOS_ERR_INVALID_ARG);
  CHECK(status({{1, "scale"}, {1, "relu"}}) == GPUOS_ERR_INVALID_ARG);
  CHECK(status({{1, "not a name"}}) == GPUOS_ERR_INVALID_ARG);
  CHECK(status({{1, "9lives"}}) == GPUOS_ERR_INVALID_ARG);
  CHECK(status({}) == GPUOS_OK);

  ImageSpec s = spec_with({&fx().scale}, {{7, "scale"}, {7, "scale"}});
  const ImageResult r = build_image(s, lopts());
  CHECK_FALSE(r.ok);
  CHECK(contains(r.error, "slot 7 is given to both"));
}

TEST_CASE("jit link: a linked image is cached under a key over all inputs") {
  ScratchDir dir("linkcache");
  CacheConfig cfg;
  cfg.dir = dir.path();
  Cache cache(cfg);
  const ImageSpec s = spec_with({&fx().scale}, {{0, "scale"}});
  const ImageResult a = build_image(s, lopts(), copts(), &cache);
  REQUIRE(a.ok);
  CHECK_FALSE(a.from_cache);
  const ImageResult b = build_image(s, lopts(), copts(), &cache);
  REQUIRE(b.ok);
  CHECK(b.from_cache);
  CHECK(b.key == a.key);
  CHECK(b.cubin == a.cubin);

  const ImageResult c = build_image(spec_with({&fx().scale}, {{1, "scale"}}), lopts(), copts(), &cache);
  REQUIRE(c.ok);
  CHECK_FALSE(c.from_cache);
  CHECK(c.key != a.key);
}

TEST_CASE("jit link: with the operators inlined, the scheduler's SASS and the dispatch loops' LTO-IR link with them") {
  // GPUOS_INLINE_OPERATORS=1 (host/generations.cpp): the dispatch unit calls gpuos_loaded_tile, which the
  // table defines; the block's shared state it declares extern resolves to the scheduler unit's.
  const std::vector<char> sched = read_bytes(scheduler_sass_object());
  const std::vector<char> dispatch = read_bytes(dispatch_lto_object());
  ImageSpec s;
  s.base.push_back({InputKind::object, sched, "gpuos_kernel (SASS)"});
  s.base.push_back({InputKind::object, dispatch, "gpuos_dispatch (LTO-IR)"});
  s.base_operators = {"nop", "fill", "copy", "add", "mul", "axpy", "sum"};
  for (unsigned i = 0; i < s.base_operators.size(); ++i) s.table.push_back({i, s.base_operators[i]});
  s.units = {&fx().scale};
  s.table.push_back({GPUOS_BUILTIN_OP_COUNT, "scale"});
  s.inline_operators = true;
  const ImageResult r = build_image(s, lopts());
  INFO(r.error);
  REQUIRE(r.ok);
  MESSAGE("scheduler + dispatch loops with 1 operator inlined + table linked in " << r.seconds * 1e3 << " ms");
  CHECK(elf_defines_symbol(r.cubin, "gpuos_main"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_loaded_tile"));
  CHECK(elf_defines_symbol(r.cubin, "gpuos_op_scale_entry"));

  // Without it, the dispatch loops' LTO-IR has nothing to call.
  s.inline_operators = false;
  const ImageResult n = build_image(s, lopts());
  CHECK_FALSE(n.ok);
  CHECK(contains(n.error, "gpuos_loaded_tile"));
}

TEST_CASE("jit link: argument sizes and the ABI version are read from the linked image without a GPU") {
  const std::vector<char> kernel = read_bytes(kernel_object());
  ImageSpec s;
  s.base.push_back({InputKind::object, kernel, "gpuos_kernel"});
  s.base_operators = {"nop", "fill", "copy", "add", "mul", "axpy", "sum"};
  for (unsigned i = 0; i < s.base_operators.size(); ++i) s.table.push_back({i, s.base_operators[i]});
  s.units = {&fx().scale, &fx().softmax};
  s.table.push_back({GPUOS_BUILTIN_OP_COUNT, "scale"});
  s.table.push_back({GPUOS_BUILTIN_OP_COUNT + 1, "softmax_row"});
  const ImageResult r = build_image(s, lopts());
  INFO(r.error);
  REQUIRE(r.ok);
  MESSAGE("kernel + built-ins + 2 operators + table linked in " << r.seconds * 1e3 << " ms");
  auto u32_at = [&](const char* sym, size_t off) -> long long {
    const auto d = elf_symbol_data(r.cubin, sym);
    if (!d || d->size() < off + 4) return -1;
    unsigned v;
    std::memcpy(&v, d->data() + off, 4);
    return v;
  };
  CHECK(u32_at("gpuos_image_abi_version", 0) == GPUOS_ABI_VERSION);
  CHECK(u32_at("gpuos_op_scale_entry", 24) == 32);        // ScaleArgs: y, x, n, alpha (+ padding)
  CHECK(u32_at("gpuos_op_softmax_row_entry", 24) == 32);  // SoftmaxRowArgs: y, x, cols, ld
  CHECK(u32_at("gpuos_op_sum_entry", 24) == sizeof(gpuos_sum_args));
  CHECK(u32_at("gpuos_op_nop_entry", 24) == 0);
  CHECK(u32_at("no_such_symbol", 0) == -1);
  CHECK_FALSE(elf_symbol_data(std::vector<char>{'x', 'y'}, "gpuos_op_table"));
}
