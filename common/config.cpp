#include "common/config.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <optional>

#include "common/error.hpp"

namespace gpuos::common {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const size_t p = s.find(sep);
    out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s.remove_prefix(p + 1);
  }
  return out;
}

std::string with_commas(std::string_view words) {
  std::string out;
  for (std::string_view w : split(words, '|')) {
    const std::string_view name = w.substr(0, w.find('='));
    out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

/// What a row accepts, for error messages and the docs.
std::string accepted(const Row& r) {
  switch (r.kind) {
    case Kind::flag:
      return "0 or 1";
    case Kind::integer: {
      std::string s = "an integer in [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]";
      if (*r.words) s += " or " + with_commas(r.words);
      return s;
    }
    case Kind::bytes:
      return "a byte count in [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) +
             "] with an optional K, M or G suffix (binary units)";
    case Kind::choice:
      return "one of " + with_commas(r.words);
    case Kind::path:
      return "a path";
  }
  return "";
}

[[noreturn]] void malformed(const Row& r, std::string_view value) {
  fail(GPUOS_ERR_INVALID_ARG, std::string(r.name) + " must be " + accepted(r) + ", got '" + std::string(value) + "'");
}

std::optional<long long> integer_of(std::string_view s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool parse(const Row& r, std::string_view text, bool& out) {
  if (text != "0" && text != "1") malformed(r, text);
  out = text == "1";
  return true;
}
bool parse(const Row& r, std::string_view text, std::int64_t& out) {
  for (std::string_view w : split(r.words, '|')) {
    const size_t eq = w.find('=');
    if (eq != std::string_view::npos && w.substr(0, eq) == text) {
      out = *integer_of(w.substr(eq + 1));
      return true;
    }
  }
  const auto v = integer_of(text);
  if (!v || *v < r.lo || *v > r.hi) malformed(r, text);
  out = *v;
  return true;
}
bool parse(const Row& r, std::string_view text, std::uint64_t& out) {
  std::string_view digits = text;
  std::uint64_t mul = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': case 'k': mul = 1ull << 10; break;
      case 'M': case 'm': mul = 1ull << 20; break;
      case 'G': case 'g': mul = 1ull << 30; break;
      default: break;
    }
    if (mul != 1) digits.remove_suffix(1);
  }
  const auto v = integer_of(digits);
  if (!v || *v < 0 || static_cast<std::uint64_t>(*v) > std::numeric_limits<std::uint64_t>::max() / mul) malformed(r, text);
  const std::uint64_t b = static_cast<std::uint64_t>(*v) * mul;
  if (b < static_cast<std::uint64_t>(r.lo) || b > static_cast<std::uint64_t>(r.hi)) malformed(r, text);
  out = b;
  return true;
}
bool parse(const Row& r, std::string_view text, std::string& out) {
  if (r.kind == Kind::choice) {
    const auto w = split(r.words, '|');
    if (std::find(w.begin(), w.end(), text) == w.end()) malformed(r, text);
  }
  out = std::string(text);
  return true;
}

template <class T>
T default_of(const Row& r) {
  T v{};
  parse(r, r.default_text, v);
  return v;
}
template <>
std::string default_of<std::string>(const Row& r) {
  return r.default_text;
}

const Row& row_named(std::string_view name) {
  for (const Row& r : rows())
    if (name == r.name) return r;
  fail(GPUOS_ERR_INTERNAL, "no configuration row named " + std::string(name));
}

std::string text_of(bool v) { return v ? "1" : "0"; }
std::string text_of(std::int64_t v) { return std::to_string(v); }
std::string text_of(std::uint64_t v) { return std::to_string(v); }
std::string text_of(const std::string& v) { return v; }

}  // namespace

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
#define GPUOS_CONFIG_ROW(member, name, kind, lo, hi, words, def, doc) \
  Row{#member, name, Kind::kind, lo, hi, words, def, doc},
      GPUOS_CONFIG_TABLE(GPUOS_CONFIG_ROW)
#undef GPUOS_CONFIG_ROW
  };
  return r;
}

Config::Config() {
#define GPUOS_CONFIG_DEFAULT(member, name, kind, lo, hi, words, def, doc) \
  member = default_of<ValueOf<Kind::kind>::type>(row_named(name));      \
  sources.emplace_back(name, Source::default_value);
  GPUOS_CONFIG_TABLE(GPUOS_CONFIG_DEFAULT)
#undef GPUOS_CONFIG_DEFAULT
}

Config Config::from_env(const std::function<const char*(const char*)>& lookup) {
  auto get = [&](const char* name) -> const char* { return lookup ? lookup(name) : std::getenv(name); };
  Config c;
#define GPUOS_CONFIG_READ(member, name, kind, lo, hi, words, def, doc) \
  if (const char* v = get(name); v && *v) {                           \
    parse(row_named(name), v, c.member);                              \
    c.set_source(name, Source::environment);                          \
  }
  GPUOS_CONFIG_TABLE(GPUOS_CONFIG_READ)
#undef GPUOS_CONFIG_READ
  return c;
}

void Config::set_source(std::string_view name, Source s) {
  for (auto& [n, src] : sources)
    if (n == name) src = s;
}

Source Config::source_of(std::string_view name) const {
  for (const auto& [n, src] : sources)
    if (n == name) return src;
  return Source::default_value;
}

std::vector<std::string> Config::describe() const {
  std::vector<std::string> out;
#define GPUOS_CONFIG_TEXT(member, name, kind, lo, hi, words, def, doc) \
  out.push_back(std::string(name) + "=" + text_of(member));
  GPUOS_CONFIG_TABLE(GPUOS_CONFIG_TEXT)
#undef GPUOS_CONFIG_TEXT
  return out;
}

std::string markdown() {
  std::string s =
      "# Configuration\n"
      "\n"
      "Generated from the configuration table (common/config.hpp) by `gpuos config --markdown`; a CPU test\n"
      "checks that this file is current. A runtime reads these variables once, when it is created. Unset or\n"
      "empty means the default; a malformed value makes gpuos_create fail with GPUOS_ERR_INVALID_ARG and a\n"
      "message naming the variable and what it accepts. `gpuos config` prints the values in effect.\n"
      "\n"
      "| variable | accepts | default | what it does |\n"
      "| --- | --- | --- | --- |\n";
  for (const Row& r : rows()) {
    std::string def = *r.default_text ? std::string("`") + r.default_text + "`" : "(see text)";
    s += std::string("| `") + r.name + "` | " + accepted(r) + " | " + def + " | " + r.doc + " |\n";
  }
  return s;
}

}  // namespace gpuos::common
