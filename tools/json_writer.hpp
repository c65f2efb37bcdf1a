// A minimal streaming JSON writer for the reports of the `gpuos` tool and the benchmarks.
//
// Keys and commas are tracked on a stack, so callers only say what they write. Non-finite doubles are
// written as null (JSON has no NaN). Header-only: the tool and every benchmark include it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace gpuos::tools {

class JsonWriter {
 public:
  JsonWriter& begin_object(std::string_view key = {}) { return open(key, '{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array(std::string_view key = {}) { return open(key, '['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& field(std::string_view key, std::string_view v) {
    prefix(key);
    quote(v);
    return *this;
  }
  JsonWriter& field(std::string_view key, const char* v) { return field(key, std::string_view(v ? v : "")); }
  JsonWriter& field(std::string_view key, const std::string& v) { return field(key, std::string_view(v)); }
  JsonWriter& field(std::string_view key, bool v) {
    prefix(key);
    out_ += v ? "true" : "false";
    return *this;
  }
  JsonWriter& field(std::string_view key, double v) {
    prefix(key);
    if (!std::isfinite(v)) {
      out_ += "null";
    } else {
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      out_ += buf;
    }
    return *this;
  }
  JsonWriter& field(std::string_view key, std::int64_t v) { return raw(key, std::to_string(v)); }
  JsonWriter& field(std::string_view key, std::uint64_t v) { return raw(key, std::to_string(v)); }
  JsonWriter& field(std::string_view key, int v) { return raw(key, std::to_string(v)); }
  JsonWriter& field(std::string_view key, unsigned v) { return raw(key, std::to_string(v)); }

  /// Array elements (no key).
  template <class T>
  JsonWriter& item(const T& v) { return field(std::string_view{}, v); }

  template <class T>
  JsonWriter& array(std::string_view key, const std::vector<T>& vs) {
    begin_array(key);
    for (const T& v : vs) item(v);
    return end_array();
  }

  const std::string& str() const { return out_; }

  /// Writes the document (with a trailing newline) to path; false if the file cannot be written.
  bool write_file(const std::string& path) const {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return false;
    bool ok = std::fwrite(out_.data(), 1, out_.size(), f) == out_.size() && std::fputc('\n', f) != EOF;
    return std::fclose(f) == 0 && ok;
  }

 private:
  JsonWriter& open(std::string_view key, char c) {
    prefix(key);
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& close(char c) {
    first_.pop_back();
    out_ += c;
    return *this;
  }
  JsonWriter& raw(std::string_view key, const std::string& text) {
    prefix(key);
    out_ += text;
    return *this;
  }
  // Comma before every element but the first of its container, then the key when inside an object.
  void prefix(std::string_view key) {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
    if (!key.empty()) {
      quote(key);
      out_ += ':';
    }
  }
  void quote(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      auto u = static_cast<unsigned char>(ch);
      if (ch == '"' || ch == '\\') {
        out_ += '\\';
        out_ += ch;
      } else if (u < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", u);
        out_ += buf;
      } else {
        out_ += ch;
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
};

}  // namespace gpuos::tools
