// Operator source -> LTO-IR: the examples compile, operators are found, and every kind of broken source
// gives a clear diagnostic (file:line:col where there is one). Needs NVRTC, not a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <thread>

#include "jit/compiler.hpp"
#include "jit/jit_error.hpp"
#include "tests/unit/jit_test_util.hpp"

using namespace gpuos::jit;
using namespace gpuos::jit::test;

namespace {

CompileOptions opts() { return test_compile_options(); }

const Diagnostic* first_error(const CompileResult& r) {
  for (const Diagnostic& d : r.diagnostics)
    if (d.severity == Severity::error) return &d;
  return nullptr;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("jit: every example operator compiles to LTO-IR and declares the operator of its file name") {
  int n = 0;
  for (const fs::path& dir : {examples_dir(), examples_dir().parent_path() / "llama" / "ops"})
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".cu") continue;
    ++n;
    CAPTURE(e.path().string());
    const CompileResult r = compile_file(e.path(), opts());
    INFO(r.error_text());
    REQUIRE(r.ok());
    CHECK(r.operators == std::vector<std::string>{e.path().stem().string()});
    CHECK(first_error(r) == nullptr);
    CHECK_FALSE(r.key.is_zero());
  }
  CHECK(n >= 10);
}

TEST_CASE("jit: operators with a finish function, without arguments, with range functions, several in one source") {
  const std::string src = R"(#include "gpuos/op.cuh"
struct A { double* out; };
__device__ void part(const A& a, const gpuos::TileCtx& c) {
  if (threadIdx.x == 0) atomicAdd(c.scratch, 1.0);
}
__device__ void total(const A& a, const gpuos::TileCtx& c) {
  if (threadIdx.x == 0) *a.out = *c.scratch;
}
__device__ void idle(const gpuos::TileCtx&) {}
__device__ void parts(const A& a, const gpuos::TileCtx& c, unsigned n) {
  if (threadIdx.x == 0) atomicAdd(c.scratch, static_cast<double>(n));
}
__device__ void stream(const A& a, const gpuos::TileCtx& c, unsigned n, gpuos::TileRuns& runs) {
  unsigned top = c.tile;
  do {
    if (threadIdx.x == 0) atomicAdd(c.scratch, static_cast<double>(n));
  } while (runs.next(top, n));
}
GPUOS_OPERATOR_WITH_FINISH(count_tiles, A, part, total)
GPUOS_OPERATOR_NOARGS(idle_op, idle)
GPUOS_OPERATOR_NOARGS_FLAGS(marker_op, idle, GPUOS_OP_NO_WRITES)
GPUOS_OPERATOR_FLAGS(host_op, A, part, GPUOS_OP_HOST_WRITES)
GPUOS_OPERATOR_WITH_FINISH_FLAGS(host_total, A, part, total, GPUOS_OP_HOST_WRITES)
GPUOS_OPERATOR_RANGES(count_ranges, A, parts, 0u)
GPUOS_OPERATOR_RANGES_WITH_FINISH(range_total, A, parts, total, GPUOS_OP_HOST_WRITES)
GPUOS_OPERATOR_STREAMS(count_streams, A, stream, 0u)
GPUOS_OPERATOR_STREAMS_WITH_FINISH(stream_total, A, stream, total, GPUOS_OP_HOST_WRITES)
)";
  const CompileResult r = compile("multi.cu", src, opts());
  INFO(r.error_text());
  REQUIRE(r.ok());
  CHECK(r.operators == std::vector<std::string>{"count_tiles", "idle_op", "marker_op", "host_op", "host_total",
                                                "count_ranges", "range_total", "count_streams",
                                                "stream_total"});
}

TEST_CASE("jit: operator names are scanned outside comments, strings and directives") {
  const std::string src = R"src(// GPUOS_OPERATOR(in_comment, A, f)
/* GPUOS_OPERATOR(in_block,
   A, f) */
const char* s = "GPUOS_OPERATOR(in_string, A, f)";
const char* r = R"x(GPUOS_OPERATOR(in_raw, A, f))x";
#define WRAP(n) GPUOS_OPERATOR(n, A, f)
GPUOS_OPERATOR( spaced ,A,f)
GPUOS_OPERATOR_WITH_FINISH(fin, A, f, g)
GPUOS_OPERATOR_WITH_FINISH_FLAGS(fin_flagged, A, f, g, GPUOS_OP_HOST_WRITES)
GPUOS_OPERATOR_NOARGS(
    noargs, f)
GPUOS_OPERATOR_FLAGS(flagged, A, f, GPUOS_OP_HOST_WRITES)
GPUOS_OPERATOR_NOARGS_FLAGS(marker, f, GPUOS_OP_NO_WRITES)
GPUOS_OPERATOR_FLAGSX(suffixed2, A, f, 0)
MY_GPUOS_OPERATOR(prefixed, A, f)
GPUOS_OPERATORX(suffixed, A, f)
GPUOS_OPERATOR(spaced, A, f)
GPUOS_OPERATOR_RANGES(ranged, A, r, 0u)
GPUOS_OPERATOR_RANGES_WITH_FINISH(ranged_fin, A, r, f, 0u)
GPUOS_OPERATOR_RANGESX(suffixed3, A, r, 0u)
GPUOS_OPERATOR_STREAMS(streamed, A, s, 0u)
GPUOS_OPERATOR_STREAMS_WITH_FINISH(streamed_fin, A, s, f, 0u)
GPUOS_OPERATOR_STREAMSX(suffixed4, A, s, 0u)
)src";
  CHECK(scan_operator_names(src) == std::vector<std::string>{"spaced", "fin", "fin_flagged", "noargs", "flagged",
                                                             "marker", "ranged", "ranged_fin", "streamed",
                                                             "streamed_fin"});
}

TEST_CASE("jit: an operator under #if 0 is not reported; the others are") {
  const std::string src = op_source("kept", "#if 0\nGPUOS_OPERATOR(ghost, kept_args, kept_fn)\n#endif\n");
  const CompileResult r = compile("ifdef.cu", src, opts());
  INFO(r.error_text());
  REQUIRE(r.ok());
  CHECK(r.operators == std::vector<std::string>{"kept"});
}

TEST_CASE("jit: a syntax error gives file:line:col and a message") {
  std::string src = op_source("syn");
  src.insert(src.find("for ("), "int missing_semicolon = 1\n  ");  // line 4; the error is on line 5
  const CompileResult r = compile("/ops/syn.cu", src, opts());
  CHECK_FALSE(r.ok());
  CHECK(r.ltoir.empty());
  const Diagnostic* d = first_error(r);
  REQUIRE(d != nullptr);
  CHECK(d->file == "/ops/syn.cu");
  CHECK(d->line == 5);
  CHECK(d->column == 3);
  CHECK(contains(d->message, "expected a \";\""));
  CHECK(contains(to_string(*d), "/ops/syn.cu:5:3: error: expected"));
  CHECK(contains(r.error_text(), "/ops/syn.cu:5:3"));
}

TEST_CASE("jit: a wrong tile signature fails with the static_assert that names the operator") {
  const std::string src = R"(#include "gpuos/op.cuh"
struct A { float* x; };
__device__ void by_value(A a, const gpuos::TileCtx& c) {}
GPUOS_OPERATOR(wrong_sig, A, by_value)
)";
  const CompileResult r = compile("sig.cu", src, opts());
  CHECK_FALSE(r.ok());
  const Diagnostic* d = first_error(r);
  REQUIRE(d != nullptr);
  CHECK(d->file == "sig.cu");
  CHECK(d->line == 4);
  CHECK(contains(d->message, "gpuos operator 'wrong_sig'"));
  CHECK(contains(d->message, "by_value must be declared as"));
}

TEST_CASE("jit: a range function with a tile function's signature is a compile error that names it") {
  const std::string src = R"(#include "gpuos/op.cuh"
struct A { float* x; };
__device__ void one_tile(const A& a, const gpuos::TileCtx& c) {}
GPUOS_OPERATOR_RANGES(wrong_range, A, one_tile, 0u)
)";
  const CompileResult r = compile("range_sig.cu", src, opts());
  CHECK_FALSE(r.ok());
  const Diagnostic* d = first_error(r);
  REQUIRE(d != nullptr);
  CHECK(d->line == 4);
  CHECK(contains(d->message, "gpuos operator 'wrong_range'"));
  CHECK(contains(d->message, "one_tile must be declared as"));
  CHECK(contains(d->message, "unsigned"));
}

TEST_CASE("jit: a stream function with a range function's signature is a compile error that names it") {
  const std::string src = R"(#include "gpuos/op.cuh"
struct A { float* x; };
__device__ void a_range(const A& a, const gpuos::TileCtx& c, unsigned n) {}
GPUOS_OPERATOR_STREAMS(wrong_stream, A, a_range, 0u)
)";
  const CompileResult r = compile("stream_sig.cu", src, opts());
  CHECK_FALSE(r.ok());
  const Diagnostic* d = first_error(r);
  REQUIRE(d != nullptr);
  CHECK(d->line == 4);
  CHECK(contains(d->message, "gpuos operator 'wrong_stream'"));
  CHECK(contains(d->message, "a_range must be declared as"));
  CHECK(contains(d->message, "gpuos::TileRuns&"));
}

TEST_CASE("jit: a source without GPUOS_OPERATOR is an error") {
  const std::string src = "#include \"gpuos/op.cuh\"\n__device__ void f(const gpuos::TileCtx&) {}\n";
  const CompileResult r = compile("none.cu", src, opts());
  CHECK_FALSE(r.ok());
  const Diagnostic* d = first_error(r);
  REQUIRE(d != nullptr);
  CHECK(d->file == "none.cu");
  CHECK(contains(d->message, "no operator declared"));
  CHECK(contains(d->message, "GPUOS_OPERATOR(name, ArgsStruct, tile_fn)"));
}

TEST_CASE("jit: an unknown include names the file and the line of the #include") {
  const std::string src = "#include \"gpuos/op.cuh\"\n#include \"no/such_header.cuh\"\n";
  const CompileResult r = compile("inc.cu", src, opts());
  CHECK_FALSE(r.ok());
  const Diagnostic* d = first_error(r);
  REQUIRE(d != nullptr);
  CHECK(d->file == "inc.cu");
  CHECK(d->line == 2);
  CHECK(contains(d->message, "cannot open source file \"no/such_header.cuh\""));
}

TEST_CASE("jit: empty and blank sources are rejected before NVRTC") {
  const std::uint64_t before = compile_stats().nvrtc_compiles;
  for (const char* src : {"", "  \n\t\n"}) {
    const CompileResult r = compile("empty.cu", src, opts());
    CHECK_FALSE(r.ok());
    REQUIRE(first_error(r) != nullptr);
    CHECK(contains(first_error(r)->message, "source is empty"));
  }
  CHECK(compile_stats().nvrtc_compiles == before);
}

TEST_CASE("jit: binary garbage is rejected as not a text file") {
  std::string elf = "\x7f" "ELF\x02\x01\x01";
  elf.push_back('\0');
  elf += "garbage";
  const CompileResult a = compile("a.out", elf, opts());
  CHECK_FALSE(a.ok());
  REQUIRE(first_error(a) != nullptr);
  CHECK(contains(first_error(a)->message, "not a text file"));

  const CompileResult b = compile("latin1.cu", "// caf\xe9\n" + op_source("latin"), opts());  // not UTF-8
  CHECK_FALSE(b.ok());
  REQUIRE(first_error(b) != nullptr);
  CHECK(contains(first_error(b)->message, "invalid UTF-8"));
  CHECK(first_error(b)->line == 1);

  const CompileResult c = compile("utf8.cu", "// caf\xc3\xa9 \xe2\x9c\x93\n" + op_source("utf8"), opts());
  INFO(c.error_text());
  CHECK(c.ok());
}

TEST_CASE("jit: an unreadable file is a failed result") {
  const CompileResult r = compile_file("/nonexistent/dir/op.cu", opts());
  CHECK_FALSE(r.ok());
  REQUIRE(first_error(r) != nullptr);
  CHECK(contains(first_error(r)->message, "cannot read"));
}

TEST_CASE("jit: warnings come back with a successful compile") {
  std::string src = op_source("warns");
  src.insert(src.find("for ("), "int unused_variable = 3;\n  ");
  const CompileResult r = compile("warn.cu", src, opts());
  INFO(r.error_text());
  REQUIRE(r.ok());
  const auto w = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                              [](const Diagnostic& d) { return d.severity == Severity::warning; });
  REQUIRE(w != r.diagnostics.end());
  CHECK(w->line == 4);
  CHECK(w->code == "177-D");
  CHECK(contains(w->message, "unused_variable"));
}

TEST_CASE("jit: an option NVRTC does not know is a failed result, not an exception") {
  CompileOptions o = opts();
  o.extra_options = {"--no-such-option"};
  const CompileResult r = compile("opt.cu", op_source("opt"), o);
  CHECK_FALSE(r.ok());
  REQUIRE(first_error(r) != nullptr);
  CHECK(first_error(r)->file.empty());
  CHECK(contains(first_error(r)->message, "--no-such-option"));
}

TEST_CASE("jit: a quoted include resolves next to the source file") {
  ScratchDir dir("inc");
  write_file(dir / "helper.cuh", "__device__ inline float twice(float v) { return 2.0f * v; }\n");
  write_file(dir / "uses_helper.cu", "#include \"helper.cuh\"\n" + op_source("uses_helper"));
  const CompileResult r = compile_file(dir / "uses_helper.cu", opts());
  INFO(r.error_text());
  CHECK(r.ok());
  CHECK(r.source_name == (dir / "uses_helper.cu").string());
}

TEST_CASE("jit: parse_nvrtc_log reads positions, codes, notes and option errors") {
  const std::string log =
      "a.cu(5): error: expected a \";\"\n"
      "  \tx = 1;\n"
      "  \t^\n"
      "\n"
      "inc/t.h(12): warning #177-D: variable \"v\" was declared but never referenced\n"
      "      int v;\n"
      "          ^\n"
      "\n"
      "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
      "\n"
      "t.cu(2): error: static assertion failed with \"boom\"\n"
      "  template <class T> __device__ void f(T) { static_assert(sizeof(T) == 1, \"boom\"); }\n"
      "                                            ^\n"
      "          detected during instantiation of \"void f(T) [with T=int]\" at line 3\n"
      "\n"
      "b.cu(1): catastrophic error: cannot open source file \"x.h\"\n"
      "nvrtc: error: unrecognized option --bad found\n"
      "3 errors detected in the compilation of \"a.cu\".\n";
  const std::vector<Diagnostic> d = parse_nvrtc_log(log);
  REQUIRE(d.size() == 5);
  CHECK(d[0].file == "a.cu");
  CHECK(d[0].line == 5);
  CHECK(d[0].column == 2);  // a tab counts as one column
  CHECK(d[0].severity == Severity::error);
  CHECK(d[1].severity == Severity::warning);
  CHECK(d[1].code == "177-D");
  CHECK(d[1].line == 12);
  CHECK(d[1].column == 9);
  CHECK(d[2].column == 43);
  CHECK(contains(d[2].context, "detected during instantiation"));
  CHECK(d[3].severity == Severity::error);
  CHECK(d[3].column == 0);
  CHECK(d[4].file.empty());
  CHECK(d[4].line == 0);
  CHECK(contains(d[4].message, "unrecognized option --bad"));
  CHECK(to_string(d[4]) == "error: unrecognized option --bad found");
}

TEST_CASE("jit: the compile options are the documented ones") {
  CompileOptions o;
  o.arch = 90;
  o.include_dirs = {"/inc"};
  o.defines = {"N=4"};
  o.extra_options = {"-use_fast_math"};
  const std::vector<std::string> v = nvrtc_options(o, "/src");
  CHECK(v == std::vector<std::string>{"-arch=sm_90", "-rdc=true", "-dlto", "-std=c++20", "-lineinfo", "-I/src",
                                      "-I/inc", "-DN=4", "-use_fast_math"});
  CHECK(CompileOptions{}.include_dirs.empty());  // constructing options writes nothing
  CHECK(runtime_include_dirs(gpuos::common::Config{}).size() == 2);
}

TEST_CASE("jit: concurrent compiles never exceed the bound") {
  set_compile_limit(2);
  const unsigned limit = max_concurrent_compiles();
  CHECK(limit == 2);
  CHECK(limit >= 1);
  const unsigned n = 2 * limit + 1;
  std::vector<CompileResult> results(n);
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < n; ++i)
    threads.emplace_back([&, i] { results[i] = compile("par.cu", op_source("par" + std::to_string(i)), opts()); });
  for (std::thread& t : threads) t.join();
  for (const CompileResult& r : results) CHECK(r.ok());
  const CompileStats s = compile_stats();
  CHECK(s.limit == limit);
  CHECK(s.in_flight == 0);
  CHECK(s.peak_in_flight >= 1);
  CHECK(s.peak_in_flight <= limit);
}

TEST_CASE("jit: NVRTC and nvJitLink failures throw with the API's error name and file:line") {
  try {
    GPUOS_NVRTC_TRY(nvrtcCompileProgram(nullptr, 0, nullptr));
    FAIL("no exception");
  } catch (const gpuos::common::Failure& f) {
    CHECK(contains(f.what(), "nvrtcCompileProgram(nullptr, 0, nullptr) failed: NVRTC_ERROR_INVALID_PROGRAM"));
    CHECK(contains(f.what(), "test_jit_compile.cpp:"));
    CHECK(f.status() == GPUOS_ERR_INTERNAL);
  }
  CHECK(GPUOS_NVRTC_TRY(NVRTC_ERROR_COMPILATION, NVRTC_ERROR_COMPILATION) == NVRTC_ERROR_COMPILATION);
  try {
    GPUOS_NVJITLINK_TRY(nvJitLinkCreate(nullptr, 0, nullptr));
    FAIL("no exception");
  } catch (const gpuos::common::Failure& f) {
    CHECK(contains(f.what(), "nvJitLinkCreate(nullptr, 0, nullptr) failed: NVJITLINK_ERROR_"));
    CHECK(contains(f.what(), "test_jit_compile.cpp:"));
  }
  CHECK(gpuos::jit::nvjitlink_error_name(NVJITLINK_ERROR_PTX_COMPILE) == "NVJITLINK_ERROR_PTX_COMPILE");
  CHECK(gpuos::jit::nvjitlink_error_name(static_cast<nvJitLinkResult>(999)) == "nvJitLinkResult 999");
  CHECK(gpuos::jit::status_of(NVJITLINK_ERROR_UNSUPPORTED_ARCH) == GPUOS_ERR_UNSUPPORTED);
  CHECK(gpuos::jit::status_of(NVRTC_ERROR_OUT_OF_MEMORY) == GPUOS_ERR_OUT_OF_MEMORY);
}

TEST_CASE("jit: the toolchain versions are those of CUDA 13") {
  const ToolchainVersions& v = toolchain_versions();
  CHECK(v.nvrtc_major >= 13);
  CHECK(v.nvjitlink_major >= 13);
}
