#include "jit/deps.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <set>
#include <unordered_map>

namespace gpuos::jit {
namespace {

namespace fs = std::filesystem;

struct Include {
  bool quoted;
  std::string name;
};

/// `#include "x"`, `# include <x>` and `#include_next <x>` at the start of a line (after blanks).
std::vector<Include> find_includes(std::string_view text) {
  std::vector<Include> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos || line.substr(i, 7) != "include") continue;
    i += 7;
    if (line.substr(i, 5) == "_next") i += 5;
    i = line.find_first_not_of(" \t", i);
    if (i == std::string_view::npos) continue;
    const char open = line[i];
    if (open != '"' && open != '<') continue;  // computed include: cannot be followed
    const std::size_t close = line.find(open == '"' ? '"' : '>', i + 1);
    if (close == std::string_view::npos || close == i + 1) continue;
    out.push_back({open == '"', std::string(line.substr(i + 1, close - i - 1))});
  }
  return out;
}

struct FileInfo {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  Hash128 hash;
  std::vector<Include> includes;

  bool same_stat(const FileInfo& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
  }
};

std::int64_t ns_of(const timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

FileInfo stat_info(const struct stat& st) {
  FileInfo f;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.size = st.st_size;
  f.mtime_ns = ns_of(st.st_mtim);
  f.ctime_ns = ns_of(st.st_ctim);
  return f;
}

std::mutex g_memo_mu;
std::unordered_map<std::string, FileInfo> g_memo;

/// Hash and include list of a header, or false when it is not a readable regular file.
bool load(const std::string& path, FileInfo& out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  FileInfo now = stat_info(st);
  {
    std::lock_guard lk(g_memo_mu);
    auto it = g_memo.find(path);
    if (it != g_memo.end() && it->second.same_stat(now)) {
      out = it->second;
      return true;
    }
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return false;
  }
  now = stat_info(st);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  struct stat after;
  const bool stable = ::fstat(fd, &after) == 0 && stat_info(after).same_stat(now);
  ::close(fd);
  now.hash = hash128(text);
  now.includes = find_includes(text);
  out = now;
  // A file written within the last two seconds may be rewritten again inside the same time-stamp
  // granule, with the same size: only memoize files whose stamps are old enough to tell.
  const auto wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::int64_t newest = std::max(now.mtime_ns, now.ctime_ns);
  if (stable && wall_ns - newest > 2'000'000'000) {
    std::lock_guard lk(g_memo_mu);
    g_memo[path] = now;
  }
  return true;
}

std::string resolve(const Include& inc, const std::string& includer_dir, const std::vector<std::string>& dirs) {
  auto try_dir = [&](const std::string& d) -> std::string {
    if (d.empty()) return {};
    std::string p = d;
    if (p.back() != '/') p += '/';
    p += inc.name;
    // Normal form only when needed (path objects cost more than the stat below).
    if (inc.name.find("./") != std::string::npos || inc.name.find("//") != std::string::npos)
      p = fs::path(p).lexically_normal().string();
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return p;
    return {};
  };
  if (inc.quoted) {
    if (std::string p = try_dir(includer_dir); !p.empty()) return p;
  }
  for (const std::string& d : dirs)
    if (std::string p = try_dir(d); !p.empty()) return p;
  return {};
}

std::string absolute_dir(const std::string& d) {
  if (d.empty()) return d;
  std::error_code ec;
  fs::path p = fs::absolute(d, ec);
  return (ec ? fs::path(d) : p).lexically_normal().string();
}

}  // namespace

Hash128 HeaderDeps::digest() const {
  Hasher h;
  h.add(std::uint64_t{files.size()});
  for (const File& f : files) h.add(f.path).add(f.content);
  h.add(std::uint64_t{unresolved.size()});
  for (const std::string& n : unresolved) h.add(n);
  return h.digest();
}

HeaderDeps scan_header_deps(std::string_view source, const std::string& source_dir,
                            const std::vector<std::string>& include_dirs) {
  std::vector<std::string> dirs;
  dirs.reserve(include_dirs.size());
  for (const std::string& d : include_dirs) dirs.push_back(absolute_dir(d));

  std::set<std::string> seen;
  std::set<std::string> unresolved;
  std::vector<std::pair<std::string, std::string>> stack;  // (path, its directory)
  auto visit = [&](const std::vector<Include>& incs, const std::string& dir) {
    for (const Include& inc : incs) {
      std::string p = resolve(inc, dir, dirs);
      if (p.empty()) {
        unresolved.insert(inc.name);
      } else if (seen.insert(p).second) {
        stack.emplace_back(p, fs::path(p).parent_path().string());
      }
    }
  };
  visit(find_includes(source), absolute_dir(source_dir));

  HeaderDeps out;
  while (!stack.empty()) {
    auto [path, dir] = std::move(stack.back());
    stack.pop_back();
    FileInfo info;
    if (!load(path, info)) {  // vanished between resolve and read: count it as missing
      unresolved.insert(path);
      continue;
    }
    out.files.push_back({path, info.hash});
    visit(info.includes, dir);
  }
  std::sort(out.files.begin(), out.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  out.unresolved.assign(unresolved.begin(), unresolved.end());
  return out;
}

}  // namespace gpuos::jit
