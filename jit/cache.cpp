#include "jit/cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace gpuos::jit {
namespace {

namespace fs = std::filesystem;

void put_u32(char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void put_u64(char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

constexpr std::string_view kTmpPrefix = ".tmp-";
constexpr std::string_view kSuffix = ".bin";

}  // namespace

CacheConfig CacheConfig::from(const common::Config& cfg, const std::function<const char*(const char*)>& env) {
  auto get = [&](const char* name) -> const char* {
    const char* v = env ? env(name) : std::getenv(name);
    return v && *v ? v : nullptr;
  };
  CacheConfig c;
  c.disk_limit_bytes = cfg.cache_max_bytes;
  if (cfg.cache_dir == "off") return c;
  if (!cfg.cache_dir.empty()) {
    c.dir = fs::path(cfg.cache_dir);
  } else if (const char* x = get("XDG_CACHE_HOME"); x && x[0] == '/') {  // XDG: relative is invalid
    c.dir = fs::path(x) / "gpuos";
  } else if (const char* h = get("HOME")) {
    c.dir = fs::path(h) / ".cache" / "gpuos";
  }
  return c;
}

Cache::Cache(CacheConfig cfg) : cfg_(std::move(cfg)) {
  if (!cfg_.dir) return;
  std::error_code ec;
  const bool existed = fs::exists(*cfg_.dir, ec);
  fs::create_directories(*cfg_.dir / "v1", ec);
  if (ec) {  // unusable directory: memory only, and say so in the counters
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!existed) fs::permissions(*cfg_.dir, fs::perms::owner_all, ec);  // a per-user cache
  entries_ = *cfg_.dir / "v1";
}

fs::path Cache::file_of(const Hash128& key) const {
  if (entries_.empty()) return {};
  return entries_ / (key.hex() + std::string(kSuffix));
}

std::optional<std::vector<char>> Cache::get(const Hash128& key) {
  {
    std::lock_guard lk(mu_);
    auto it = mem_.find(key);
    if (it != mem_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      memory_hits_.fetch_add(1, std::memory_order_relaxed);
      return it->second.value;
    }
  }
  if (auto v = disk_get(key)) {
    disk_hits_.fetch_add(1, std::memory_order_relaxed);
    memory_put(key, *v);
    return v;
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

void Cache::put(const Hash128& key, std::span<const char> value) {
  memory_put(key, std::vector<char>(value.begin(), value.end()));
  disk_put(key, value);
}

void Cache::memory_put(const Hash128& key, std::vector<char> value) {
  if (value.size() > cfg_.memory_limit_bytes) return;
  std::lock_guard lk(mu_);
  if (auto it = mem_.find(key); it != mem_.end()) {
    mem_bytes_ -= it->second.value.size();
    lru_.erase(it->second.lru);
    mem_.erase(it);
  }
  mem_bytes_ += value.size();
  lru_.push_front(key);
  mem_.emplace(key, Slot{std::move(value), lru_.begin()});
  while (mem_bytes_ > cfg_.memory_limit_bytes && !lru_.empty()) {
    auto victim = mem_.find(lru_.back());
    mem_bytes_ -= victim->second.value.size();
    mem_.erase(victim);
    lru_.pop_back();
  }
}

void Cache::clear_memory() {
  std::lock_guard lk(mu_);
  mem_.clear();
  lru_.clear();
  mem_bytes_ = 0;
}

std::optional<std::vector<char>> Cache::disk_get(const Hash128& key) {
  if (entries_.empty()) return std::nullopt;
  const fs::path path = file_of(key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // absent (or unreadable): a plain miss
  struct stat st {};
  std::vector<char> file;
  bool read_ok = ::fstat(fd, &st) == 0;
  if (read_ok) {
    file.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < file.size()) {
      const ssize_t n = ::read(fd, file.data() + got, file.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    file.resize(got);
  }
  ::close(fd);
  if (!read_ok) return std::nullopt;

  const char* h = file.data();
  bool good = file.size() >= kHeaderBytes && std::memcmp(h, kMagic, sizeof kMagic) == 0 &&
              get_u32(h + 8) == kFormat && get_u32(h + 12) == kHeaderBytes && get_u64(h + 16) == key.lo &&
              get_u64(h + 24) == key.hi && get_u64(h + 32) == file.size() - kHeaderBytes;
  if (good) {
    const std::string_view payload(h + kHeaderBytes, file.size() - kHeaderBytes);
    good = hash64(payload) == get_u64(h + 40);
  }
  if (!good) {
    corrupt_.fetch_add(1, std::memory_order_relaxed);
    // Remove the damaged file, unless another writer has replaced it since we opened it.
    struct stat now {};
    if (::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
      ::unlink(path.c_str());
    return std::nullopt;
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // LRU: a hit makes the entry the newest
  return std::vector<char>(file.begin() + kHeaderBytes, file.end());
}

void Cache::disk_put(const Hash128& key, std::span<const char> value) {
  if (entries_.empty()) return;
  static std::atomic<std::uint64_t> seq{0};
  const std::string tmp_name =
      std::string(kTmpPrefix) + std::to_string(::getpid()) + "-" +
      std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + "-" +
      std::to_string(seq.fetch_add(1, std::memory_order_relaxed));
  const fs::path tmp = entries_ / tmp_name;
  const fs::path final_path = file_of(key);

  char header[kHeaderBytes];
  std::memcpy(header, kMagic, sizeof kMagic);
  put_u32(header + 8, kFormat);
  put_u32(header + 12, kHeaderBytes);
  put_u64(header + 16, key.lo);
  put_u64(header + 24, key.hi);
  put_u64(header + 32, value.size());
  put_u64(header + 40, hash64(std::string_view(value.data(), value.size())));

  // No fsync: a file torn by a crash fails its checksum on the next read and is recompiled.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write_all(fd, header, sizeof header) && write_all(fd, value.data(), value.size());
  if (fd >= 0) ok = (::close(fd) == 0) && ok;
  ok = ok && ::rename(tmp.c_str(), final_path.c_str()) == 0;
  if (!ok) {
    ::unlink(tmp.c_str());
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  stores_.fetch_add(1, std::memory_order_relaxed);

  bool over;
  {
    std::lock_guard lk(mu_);
    if (disk_bytes_ >= 0) disk_bytes_ += static_cast<std::int64_t>(kHeaderBytes + value.size());
    over = disk_bytes_ < 0 || static_cast<std::uint64_t>(disk_bytes_) > cfg_.disk_limit_bytes;
  }
  if (over) evict_disk();
}

void Cache::evict_disk() {
  struct Entry {
    fs::path path;
    std::uint64_t bytes;
    std::int64_t mtime_ns;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  const auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(entries_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (name.starts_with(kTmpPrefix)) {
      // A writer that died between create and rename leaves its temporary file behind.
      const auto age = now.time_since_epoch() - std::chrono::seconds(st.st_mtim.tv_sec);
      if (age > std::chrono::hours(1)) ::unlink(it->path().c_str());
      continue;
    }
    if (!name.ends_with(kSuffix)) continue;
    const std::int64_t mt = std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    entries.push_back({it->path(), static_cast<std::uint64_t>(st.st_size), mt});
    total += static_cast<std::uint64_t>(st.st_size);
  }
  if (total > cfg_.disk_limit_bytes) {
    // Down to 90% of the bound, so that the next few stores do not each trigger a scan.
    const std::uint64_t target = cfg_.disk_limit_bytes - cfg_.disk_limit_bytes / 10;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
    for (const Entry& e : entries) {
      if (total <= target) break;
      if (::unlink(e.path.c_str()) == 0) {
        total -= e.bytes;
        evictions_.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  std::lock_guard lk(mu_);
  disk_bytes_ = static_cast<std::int64_t>(total);
}

std::uint64_t Cache::disk_usage() const {
  if (entries_.empty()) return 0;
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(entries_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.ends_with(kSuffix)) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
  }
  return total;
}

CacheStats Cache::stats() const {
  CacheStats s;
  s.memory_hits = memory_hits_.load(std::memory_order_relaxed);
  s.disk_hits = disk_hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.stores = stores_.load(std::memory_order_relaxed);
  s.corrupt = corrupt_.load(std::memory_order_relaxed);
  s.evictions = evictions_.load(std::memory_order_relaxed);
  s.write_errors = write_errors_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace gpuos::jit
