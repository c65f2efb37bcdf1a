#include "jit/compiler.hpp"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "jit/cache.hpp"
#include "jit/deps.hpp"
#include "jit/headers.hpp"
#include "jit/jit_error.hpp"

#ifndef GPUOS_JIT_INCLUDE_DIR
#define GPUOS_JIT_INCLUDE_DIR ""
#endif
#ifndef GPUOS_JIT_CCCL_DIR
#define GPUOS_JIT_CCCL_DIR ""
#endif

namespace gpuos::jit {
namespace {

namespace fs = std::filesystem;

// ---- diagnostics ---------------------------------------------------------------------------------

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::remark: return "remark";
  }
  return "error";
}

Diagnostic make_error(std::string file, std::string message) {
  Diagnostic d;
  d.file = std::move(file);
  d.message = std::move(message);
  return d;
}

bool is_caret_line(std::string_view l) {
  const std::size_t i = l.find_first_not_of(" \t");
  return i != std::string_view::npos && l[i] == '^' && l.find_first_not_of(" \t", i + 1) == std::string_view::npos;
}

// ---- source checks -------------------------------------------------------------------------------

/// Why `s` cannot be an operator source before NVRTC sees it (NVRTC takes a C string: a NUL byte would
/// silently cut the source short), or nothing.
std::optional<Diagnostic> reject_text(const std::string& name, std::string_view s) {
  if (s.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos)
    return make_error(name, "source is empty: expected an operator, declared with "
                            "GPUOS_OPERATOR(name, ArgsStruct, tile_fn) from \"gpuos/op.cuh\"");
  int line = 1;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') ++line;
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') {
        Diagnostic d = make_error(name, "not a text file: control byte 0x" +
                                            std::string(1, "0123456789abcdef"[c >> 4]) +
                                            std::string(1, "0123456789abcdef"[c & 15]) + " at offset " +
                                            std::to_string(i));
        d.line = line;
        return d;
      }
      ++i;
      continue;
    }
    // UTF-8 sequence: length from the lead byte, continuation bytes 10xxxxxx, no overlongs/surrogates.
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xe0) == 0xc0) len = 2, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) len = 3, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) len = 4, cp = c & 0x07;
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (ok) {
      static constexpr std::uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min_cp[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (!ok) {
      Diagnostic d = make_error(name, "not a text file: invalid UTF-8 at offset " + std::to_string(i));
      d.line = line;
      return d;
    }
    i += len;
  }
  return std::nullopt;
}

/// `s` with comments and string/character literals replaced by blanks (newlines kept).
std::string strip_comments_and_literals(std::string_view s) {
  std::string out(s);
  enum { code, line_comment, block_comment, str, chr, raw } st = code;
  std::string raw_end;  // )delim"
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const char n = i + 1 < s.size() ? s[i + 1] : '\0';
    switch (st) {
      case code:
        if (c == '/' && n == '/') st = line_comment, out[i] = ' ';
        else if (c == '/' && n == '*') st = block_comment, out[i] = ' ', out[++i] = ' ';
        else if (c == '"' && i > 0 && s[i - 1] == 'R' &&
                 (i < 2 || !(std::isalnum(static_cast<unsigned char>(s[i - 2])) || s[i - 2] == '_'))) {
          const std::size_t open = s.find('(', i + 1);
          if (open == std::string_view::npos) break;
          raw_end = ")" + std::string(s.substr(i + 1, open - i - 1)) + "\"";
          st = raw;
          out[i] = ' ';
        } else if (c == '"') st = str, out[i] = ' ';
        else if (c == '\'') st = chr, out[i] = ' ';
        break;
      case line_comment:
        if (c == '\n') st = code;
        else out[i] = ' ';
        break;
      case block_comment:
        if (c == '*' && n == '/') st = code, out[i] = ' ', out[++i] = ' ';
        else if (c != '\n') out[i] = ' ';
        break;
      case str:
      case chr:
        if (c == '\\' && n != '\0' && n != '\n') out[i] = ' ', out[++i] = ' ';
        else if (c == '\n') st = code;  // unterminated: stop at the end of the line
        else {
          if ((st == str && c == '"') || (st == chr && c == '\'')) st = code;
          out[i] = ' ';
        }
        break;
      case raw:
        if (s.compare(i, raw_end.size(), raw_end) == 0) {
          for (std::size_t k = 0; k < raw_end.size(); ++k) out[i + k] = ' ';
          i += raw_end.size() - 1;
          st = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
    }
  }
  return out;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// ---- concurrency bound ---------------------------------------------------------------------------

unsigned automatic_limit() { return std::clamp(std::thread::hardware_concurrency(), 1u, 8u); }

/// The process's compile slots: a counting semaphore whose bound set_compile_limit may change.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  unsigned limit = automatic_limit();
  unsigned in_flight = 0;
  unsigned peak = 0;
  std::uint64_t compiles = 0;
};

Gate& gate() {
  static Gate g;
  return g;
}

/// Holds one of the process's compile slots for its lifetime.
class GateSlot {
 public:
  GateSlot() : g_(gate()) {
    std::unique_lock<std::mutex> lock(g_.mu);
    g_.cv.wait(lock, [&] { return g_.in_flight < g_.limit; });
    g_.peak = std::max(g_.peak, ++g_.in_flight);
    ++g_.compiles;
  }
  ~GateSlot() {
    std::lock_guard<std::mutex> lock(g_.mu);
    --g_.in_flight;
    g_.cv.notify_one();
  }
  GateSlot(const GateSlot&) = delete;
  GateSlot& operator=(const GateSlot&) = delete;

 private:
  Gate& g_;
};

// ---- NVRTC ---------------------------------------------------------------------------------------

class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    GPUOS_NVRTC_TRY(nvrtcCreateProgram(&p_, source.c_str(), name.c_str(), 0, nullptr, nullptr));
  }
  ~Program() {
    try {  // destructors never throw; destroying a valid handle cannot fail
      GPUOS_NVRTC_TRY(nvrtcDestroyProgram(&p_));
    } catch (...) {
    }
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }

 private:
  nvrtcProgram p_ = nullptr;
};

std::string entry_symbol(const std::string& op) { return "gpuos_op_" + op + "_entry"; }

struct Attempt {
  nvrtcResult result = NVRTC_SUCCESS;
  std::string log;
  std::vector<char> ltoir;
  std::vector<std::string> lowered;  // per candidate, on success
};

Attempt run_nvrtc(const std::string& name, const std::string& source, const std::vector<std::string>& opts,
                  const std::vector<std::string>& candidates) {
  GateSlot slot;
  Program prog(source, name);
  std::vector<std::string> exprs;
  for (const std::string& c : candidates) {
    exprs.push_back("&" + entry_symbol(c));
    GPUOS_NVRTC_TRY(nvrtcAddNameExpression(prog.get(), exprs.back().c_str()));
  }
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());

  Attempt a;
  a.result = GPUOS_NVRTC_TRY(nvrtcCompileProgram(prog.get(), static_cast<int>(argv.size()), argv.data()),
                             NVRTC_ERROR_COMPILATION, NVRTC_ERROR_INVALID_OPTION);
  std::size_t log_size = 0;
  GPUOS_NVRTC_TRY(nvrtcGetProgramLogSize(prog.get(), &log_size));
  a.log.resize(log_size);
  if (log_size > 0) {
    GPUOS_NVRTC_TRY(nvrtcGetProgramLog(prog.get(), a.log.data()));
    while (!a.log.empty() && a.log.back() == '\0') a.log.pop_back();
  }
  if (a.result != NVRTC_SUCCESS) return a;

  std::size_t size = 0;
  GPUOS_NVRTC_TRY(nvrtcGetLTOIRSize(prog.get(), &size));
  a.ltoir.resize(size);
  if (size > 0) GPUOS_NVRTC_TRY(nvrtcGetLTOIR(prog.get(), a.ltoir.data()));
  for (const std::string& e : exprs) {
    const char* lowered = nullptr;
    GPUOS_NVRTC_TRY(nvrtcGetLoweredName(prog.get(), e.c_str(), &lowered));
    a.lowered.emplace_back(lowered ? lowered : "");
  }
  return a;
}

/// NVRTC compiles each name expression into a pseudo-file "__nv_name_map"; a candidate that does not
/// exist (an operator under #if 0, a macro parameter) fails there.
constexpr std::string_view kNameMapFile = "__nv_name_map";

/// Candidates whose entry symbol the name map reported as undefined.
std::vector<std::string> undefined_candidates(const std::vector<Diagnostic>& diags,
                                              const std::vector<std::string>& candidates) {
  std::vector<std::string> out;
  for (const std::string& c : candidates) {
    const std::string needle = "\"" + entry_symbol(c) + "\"";
    for (const Diagnostic& d : diags)
      if (d.file == kNameMapFile && d.message.find(needle) != std::string::npos) {
        out.push_back(c);
        break;
      }
  }
  return out;
}

bool has_error(const std::vector<Diagnostic>& ds, bool name_map) {
  return std::any_of(ds.begin(), ds.end(), [&](const Diagnostic& d) {
    return d.severity == Severity::error && (d.file == kNameMapFile) == name_map;
  });
}

// ---- cache records -------------------------------------------------------------------------------

constexpr std::uint32_t kRecordMagic = 0x52434a47;  // "GJCR"
constexpr std::uint32_t kRecordVersion = 1;

void put_u64(std::vector<char>& b, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>(v >> (8 * i)));
}
void put_bytes(std::vector<char>& b, std::string_view s) {
  put_u64(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

std::vector<char> encode_record(const CompileResult& r) {
  std::vector<char> b;
  put_u64(b, (std::uint64_t{kRecordVersion} << 32) | kRecordMagic);
  put_u64(b, r.operators.size());
  for (const std::string& op : r.operators) put_bytes(b, op);
  put_bytes(b, r.log);
  put_bytes(b, std::string_view(r.ltoir.data(), r.ltoir.size()));
  return b;
}

bool decode_record(const std::vector<char>& b, CompileResult& r) {
  std::size_t pos = 0;
  auto u64 = [&](std::uint64_t& v) {
    if (b.size() - pos < 8) return false;
    v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[pos + static_cast<std::size_t>(i)]);
    pos += 8;
    return true;
  };
  auto bytes = [&](std::string& s) {
    std::uint64_t n;
    if (!u64(n) || b.size() - pos < n) return false;
    s.assign(b.data() + pos, n);
    pos += n;
    return true;
  };
  std::uint64_t head, nops;
  if (!u64(head) || head != ((std::uint64_t{kRecordVersion} << 32) | kRecordMagic) || !u64(nops) || nops > 4096)
    return false;
  std::vector<std::string> ops(nops);
  for (std::string& op : ops)
    if (!bytes(op)) return false;
  std::string log, ir;
  if (!bytes(log) || !bytes(ir) || ir.empty() || pos != b.size()) return false;
  r.operators = std::move(ops);
  r.log = std::move(log);
  r.ltoir.assign(ir.begin(), ir.end());
  return true;
}

std::string absolute_string(const std::string& d) {
  if (d.empty()) return d;
  std::error_code ec;
  const fs::path p = fs::absolute(d, ec);
  return (ec ? fs::path(d) : p).lexically_normal().string();
}

}  // namespace

// ---- public --------------------------------------------------------------------------------------

std::string to_string(const Diagnostic& d) {
  std::string s;
  if (!d.file.empty()) {
    s += d.file;
    if (d.line > 0) {
      s += ":" + std::to_string(d.line);
      if (d.column > 0) s += ":" + std::to_string(d.column);
    }
    s += ": ";
  }
  s += severity_name(d.severity);
  s += ": ";
  s += d.message;
  return s;
}

std::vector<Diagnostic> parse_nvrtc_log(std::string_view log) {
  static const std::regex header(
      R"(^(.*)\((\d+)\): (catastrophic error|internal error|error|warning|remark)(?: #([0-9A-Za-z-]+))?: (.*)$)");
  static const std::regex option(R"(^nvrtc: (error|warning): (.*)$)");
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos <= log.size();) {
    std::size_t eol = log.find('\n', pos);
    if (eol == std::string_view::npos) eol = log.size();
    std::string l(log.substr(pos, eol - pos));
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
    pos = eol + 1;
  }
  std::vector<Diagnostic> out;
  Diagnostic* cur = nullptr;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (std::regex_match(l, m, header)) {
      Diagnostic d;
      d.file = m[1].str();
      d.line = std::stoi(m[2].str());
      const std::string sev = m[3].str();
      d.severity = sev == "warning" ? Severity::warning : sev == "remark" ? Severity::remark : Severity::error;
      d.code = m[4].str();
      d.message = m[5].str();
      out.push_back(std::move(d));
      cur = &out.back();
    } else if (std::regex_match(l, m, option)) {
      Diagnostic d;
      d.severity = m[1].str() == "warning" ? Severity::warning : Severity::error;
      d.message = m[2].str();
      out.push_back(std::move(d));
      cur = &out.back();
    } else if (l.empty()) {
      cur = nullptr;  // a blank line ends a diagnostic
    } else if (cur) {
      // NVRTC prints the offending line indented by two blanks and a caret line below it.
      if (cur->column == 0 && is_caret_line(l) && !cur->context.empty()) {
        const std::size_t caret = l.find('^');
        if (caret >= 2) cur->column = static_cast<int>(caret - 2) + 1;
      }
      if (!cur->context.empty()) cur->context += '\n';
      cur->context += l;
    }
  }
  return out;
}

std::vector<std::string> nvrtc_options(const CompileOptions& o, const std::string& source_dir) {
  std::vector<std::string> v = {"-arch=sm_" + std::to_string(o.arch), "-rdc=true", "-dlto", "-std=c++20"};
  if (o.lineinfo) v.push_back("-lineinfo");
  if (!source_dir.empty()) v.push_back("-I" + absolute_string(source_dir));
  for (const std::string& d : o.include_dirs) v.push_back("-I" + absolute_string(d));
  for (const std::string& d : o.defines) v.push_back("-D" + d);
  v.insert(v.end(), o.extra_options.begin(), o.extra_options.end());
  return v;
}

std::string CompileResult::error_text() const {
  std::string s;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity != Severity::error) continue;
    if (!s.empty()) s += '\n';
    s += to_string(d);
    if (!d.context.empty()) s += "\n" + d.context;
  }
  return s;
}

std::vector<std::string> scan_operator_names(std::string_view source) {
  static constexpr std::string_view kMacro = "GPUOS_OPERATOR";
  const std::string s = strip_comments_and_literals(source);
  std::vector<std::string> names;
  for (std::size_t pos = s.find(kMacro); pos != std::string::npos; pos = s.find(kMacro, pos + 1)) {
    if (pos > 0 && ident_char(s[pos - 1])) continue;
    // Not in a directive: `#define MY_OP(n) GPUOS_OPERATOR(n, ...)` declares nothing by itself.
    const std::size_t bol = s.rfind('\n', pos) == std::string::npos ? 0 : s.rfind('\n', pos) + 1;
    const std::size_t first = s.find_first_not_of(" \t", bol);
    if (first != std::string::npos && s[first] == '#') continue;
    std::size_t i = pos + kMacro.size();
    for (std::string_view suffix : {"_RANGES_WITH_FINISH", "_RANGES", "_STREAMS_WITH_FINISH", "_STREAMS",
                                     "_WITH_FINISH_FLAGS", "_WITH_FINISH", "_NOARGS_FLAGS", "_NOARGS", "_FLAGS"})
      if (s.compare(i, suffix.size(), suffix) == 0) {
        i += suffix.size();
        break;
      }
    if (i < s.size() && ident_char(s[i])) continue;  // GPUOS_OPERATOR_SOMETHING_ELSE
    i = s.find_first_not_of(" \t\r\n", i);
    if (i == std::string::npos || s[i] != '(') continue;
    i = s.find_first_not_of(" \t\r\n", i + 1);
    if (i == std::string::npos || !(std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_')) continue;
    std::size_t e = i;
    while (e < s.size() && ident_char(s[e])) ++e;
    std::string name = s.substr(i, e - i);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  }
  return names;
}

const ToolchainVersions& toolchain_versions() {
  static const ToolchainVersions v = [] {
    ToolchainVersions t;
    GPUOS_NVRTC_TRY(nvrtcVersion(&t.nvrtc_major, &t.nvrtc_minor));
    GPUOS_NVJITLINK_TRY(nvJitLinkVersion(&t.nvjitlink_major, &t.nvjitlink_minor));
    return t;
  }();
  return v;
}

CompileStats compile_stats() {
  Gate& g = gate();
  std::lock_guard<std::mutex> lock(g.mu);
  return {g.compiles, g.in_flight, g.peak, g.limit};
}

unsigned max_concurrent_compiles() {
  Gate& g = gate();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.limit;
}

void set_compile_limit(unsigned n) {
  Gate& g = gate();
  std::lock_guard<std::mutex> lock(g.mu);
  g.limit = n == 0 ? automatic_limit() : n;
  g.cv.notify_all();
}

CompileResult compile(std::string_view source_name, std::string_view source, const CompileOptions& o, Cache* cache,
                      const std::string& source_dir) {
  const auto t0 = std::chrono::steady_clock::now();
  CompileResult r;
  r.source_name = std::string(source_name);
  auto done = [&]() -> CompileResult {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(r);
  };
  if (auto d = reject_text(r.source_name, source)) {
    r.diagnostics.push_back(std::move(*d));
    return done();
  }

  const std::vector<std::string> opts = nvrtc_options(o, source_dir);
  {
    const ToolchainVersions& tv = toolchain_versions();
    std::vector<std::string> search;
    for (const std::string& opt : opts)
      if (opt.starts_with("-I")) search.push_back(opt.substr(2));
    Hasher h;
    h.add("gpuos-jit-compile/1").add(std::uint64_t{o.arch});
    h.add(std::uint64_t(tv.nvrtc_major)).add(std::uint64_t(tv.nvrtc_minor));
    h.add(std::uint64_t{tv.nvjitlink_major}).add(std::uint64_t{tv.nvjitlink_minor});
    h.add(std::uint64_t{opts.size()});
    for (const std::string& opt : opts) h.add(opt);
    h.add(std::uint64_t{o.require_operator});
    h.add(r.source_name).add(source);
    // NVRTC resolves the source's quoted includes in the directory of its name first (relative to the
    // working directory), then in the -I directories (source_dir, when given, is the first of those).
    std::string name_dir = fs::path(r.source_name).parent_path().string();
    if (name_dir.empty()) name_dir = ".";
    h.add(scan_header_deps(source, absolute_string(name_dir), search).digest());
    r.key = h.digest();
  }
  if (cache) {
    if (auto blob = cache->get(r.key)) {
      if (decode_record(*blob, r)) {
        r.diagnostics = parse_nvrtc_log(r.log);
        r.from_cache = true;
        return done();
      }
    }
  }

  const std::string src(source);  // NUL-terminated for NVRTC
  std::vector<std::string> candidates = scan_operator_names(source);
  Attempt a = run_nvrtc(r.source_name, src, opts, candidates);
  std::vector<Diagnostic> diags = parse_nvrtc_log(a.log);
  if (a.result != NVRTC_SUCCESS && !candidates.empty() && has_error(diags, true) && !has_error(diags, false)) {
    // Only name expressions failed: some candidates are not operators after preprocessing. Drop them
    // and compile once more.
    const std::vector<std::string> gone = undefined_candidates(diags, candidates);
    if (!gone.empty()) {
      std::erase_if(candidates, [&](const std::string& c) { return std::find(gone.begin(), gone.end(), c) != gone.end(); });
      a = run_nvrtc(r.source_name, src, opts, candidates);
      diags = parse_nvrtc_log(a.log);
    }
  }
  r.log = a.log;
  if (has_error(diags, false)) std::erase_if(diags, [](const Diagnostic& d) { return d.file == kNameMapFile; });
  r.diagnostics = std::move(diags);

  if (a.result != NVRTC_SUCCESS) {
    if (!has_error(r.diagnostics, false) && !has_error(r.diagnostics, true))
      r.diagnostics.push_back(make_error(r.source_name, nvrtc_error_name(a.result) + ": " + a.log));
    return done();
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (a.lowered[i] == entry_symbol(candidates[i])) {
      r.operators.push_back(candidates[i]);
    } else {
      r.diagnostics.push_back(make_error(r.source_name, "operator '" + candidates[i] + "': " +
                                                            entry_symbol(candidates[i]) + " must have C linkage"));
    }
  }
  if (r.operators.size() != candidates.size()) return done();
  if (o.require_operator && r.operators.empty()) {
    r.diagnostics.push_back(make_error(r.source_name, "no operator declared: expected GPUOS_OPERATOR(name, "
                                                      "ArgsStruct, tile_fn) from \"gpuos/op.cuh\""));
    return done();
  }
  if (a.ltoir.empty()) {
    r.diagnostics.push_back(make_error(r.source_name, "NVRTC returned no LTO-IR"));
    return done();
  }
  r.ltoir = std::move(a.ltoir);
  if (cache) cache->put(r.key, encode_record(r));
  return done();
}

CompileResult compile_file(const std::filesystem::path& path, const CompileOptions& o, Cache* cache) {
  std::ifstream f(path, std::ios::binary);
  std::string text;
  if (f) text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (!f && !f.eof()) {
    CompileResult r;
    r.source_name = path.string();
    r.diagnostics.push_back(make_error(r.source_name, std::string("cannot read the file: ") + std::strerror(errno)));
    return r;
  }
  std::string dir = path.parent_path().string();
  if (dir.empty()) dir = ".";
  return compile(path.string(), text, o, cache, dir);
}

}  // namespace gpuos::jit
