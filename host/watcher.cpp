#include "host/watcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace gpuos::detail {
namespace {

constexpr std::uint32_t kMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF |
                                IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK;

enum class ReadStatus { ok, absent, error };

/// Reads a regular file (following symbolic links); absent when there is no such regular file.
ReadStatus read_file(const std::filesystem::path& p, std::string& out) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? ReadStatus::absent : ReadStatus::error;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return ReadStatus::absent;
  }
  out.clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return ReadStatus::error;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ReadStatus::ok;
}

}  // namespace

const char* to_string(WatchEventKind k) {
  switch (k) {
    case WatchEventKind::added: return "added";
    case WatchEventKind::changed: return "changed";
    case WatchEventKind::removed: return "removed";
  }
  return "?";
}

bool is_watched_name(std::string_view n) {
  if (n.empty() || n.front() == '.') return false;             // dotfiles: vim .x.swp, emacs .#x lock links
  if (n.back() == '~') return false;                            // backups
  if (n.front() == '#' && n.back() == '#') return false;        // emacs autosave
  if (n == "4913") return false;                                // vim's probe for a writable directory
  for (std::string_view t : {".swp", ".swx", ".swo", ".tmp"})  // editor swap files, temporaries
    if (n.ends_with(t)) return false;
  return n.size() > 3 && n.ends_with(".cu");
}

Watcher::Watcher(std::filesystem::path dir, WatchOptions o) : dir_(std::move(dir)), opt_(o) {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0)
    throw common::Failure(GPUOS_ERR_INTERNAL, std::string("inotify_init1 failed: ") + std::strerror(errno));
  wd_ = ::inotify_add_watch(fd_, dir_.c_str(), kMask);
  if (wd_ < 0) {
    const int e = errno;
    ::close(fd_);
    fd_ = -1;
    throw common::Failure(GPUOS_ERR_INVALID_ARG,
                          "cannot watch directory " + dir_.string() + ": " + std::strerror(e));
  }
  // Files present now: looked at on the first poll, without waiting for the quiet period (they were
  // there before the watch began; one still being written is reported again when it is closed).
  if (opt_.report_existing) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (is_watched_name(name)) pending_[name] = Clock::time_point::min();
    }
  }
}

Watcher::~Watcher() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor removes the watch
}

void Watcher::mark(const std::string& name) { pending_[name] = Clock::now() + opt_.debounce; }

void Watcher::rescan() {
  for (const auto& [name, hash] : known_) mark(name);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (is_watched_name(name)) mark(name);
  }
}

void Watcher::drain() {
  alignas(inotify_event) char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // EAGAIN: nothing more
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (ev->mask & IN_Q_OVERFLOW) {
        rescan();
        continue;
      }
      if (ev->wd != wd_) continue;
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
        // The directory is gone (or moved away): every file it held is now removed.
        if (!(ev->mask & IN_IGNORED)) ::inotify_rm_watch(fd_, wd_);
        wd_ = -1;
        for (const auto& [name, hash] : known_) mark(name);
        continue;
      }
      if (ev->len == 0 || (ev->mask & IN_ISDIR)) continue;
      const std::string name(ev->name);  // NUL-padded
      if (is_watched_name(name)) mark(name);
    }
  }
}

std::vector<WatchEvent> Watcher::settle(Clock::time_point now) {
  std::vector<WatchEvent> out;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    const std::string name = it->first;
    it = pending_.erase(it);
    WatchEvent ev{WatchEventKind::added, dir_ / name, {}, {}};
    const ReadStatus st = wd_ >= 0 ? read_file(ev.path, ev.content) : ReadStatus::absent;
    auto known = known_.find(name);
    if (st == ReadStatus::ok) {
      ev.hash = jit::hash128(ev.content);
      if (known != known_.end() && known->second == ev.hash) continue;  // same bytes: nothing to do
      ev.kind = known == known_.end() ? WatchEventKind::added : WatchEventKind::changed;
      known_[name] = ev.hash;
      out.push_back(std::move(ev));
    } else if (st == ReadStatus::absent) {
      if (known == known_.end()) continue;  // created and removed within the quiet period
      known_.erase(known);
      ev.kind = WatchEventKind::removed;
      ev.content.clear();
      out.push_back(std::move(ev));
    }
    // ReadStatus::error (no permission, ...): keep the last state; the next write event retries.
  }
  return out;
}

std::vector<WatchEvent> Watcher::poll(std::chrono::milliseconds timeout) {
  const Clock::time_point end = Clock::now() + timeout;
  for (;;) {
    drain();
    const Clock::time_point now = Clock::now();
    std::vector<WatchEvent> ev = settle(now);
    if (!ev.empty() || now >= end) return ev;
    Clock::time_point next = end;
    for (const auto& [name, when] : pending_) next = std::min(next, when);
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::clamp<long long>(wait, 0, 1 << 30)));
  }
}

}  // namespace gpuos::detail
