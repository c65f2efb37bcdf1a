// Watches a directory of operator sources for hot reload.
//
// inotify reports a file when it is complete: IN_CLOSE_WRITE (written in place) and IN_MOVED_TO
// (renamed into the directory, as editors and atomic writers do); IN_DELETE and IN_MOVED_FROM report it
// gone. Only `*.cu` files count, never editor temporaries (dotfiles, `*~`, `*.swp`, `*.tmp`, `#*#`,
// `4913`). Each file must stay quiet for the debounce period before it is looked at, so a burst of
// writes (or a save by rename) gives one event. A file is then read and hashed: a content identical to
// the last one reported gives no event, so a touch or a rewrite of the same bytes costs no rebuild.
//
// The watcher has no thread: poll() waits on the inotify descriptor and returns settled events, so it
// runs on whatever thread the caller dedicates to reloading. Not thread-safe (one caller).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "jit/hash.hpp"

namespace gpuos::detail {

enum class WatchEventKind { added, changed, removed };

struct WatchEvent {
  WatchEventKind kind;
  std::filesystem::path path;  ///< <dir>/<name>
  std::string content;         ///< the bytes that were hashed (empty for removed): compile these
  jit::Hash128 hash;                ///< of content (zero for removed)
};

const char* to_string(WatchEventKind k);

/// True for the names the watcher reports: `*.cu`, not a dotfile, not an editor temporary.
bool is_watched_name(std::string_view name);

struct WatchOptions {
  std::chrono::milliseconds debounce{50};
  /// Report the `*.cu` files present at start as `added` on the first poll.
  bool report_existing = true;
};

class Watcher {
 public:
  /// Starts watching `dir` (which must exist). Throws Failure when inotify cannot watch it.
  explicit Watcher(std::filesystem::path dir, WatchOptions o = {});
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  /// Waits up to `timeout` for settled events and returns them (empty on timeout). Returns as soon as
  /// at least one event has settled.
  std::vector<WatchEvent> poll(std::chrono::milliseconds timeout);

  /// The inotify descriptor, readable when there is activity (for an external event loop; call poll
  /// with a zero timeout then, and again after the debounce period).
  int fd() const { return fd_; }
  const std::filesystem::path& dir() const { return dir_; }
  /// False once the directory itself was deleted or moved away.
  bool watching() const { return wd_ >= 0; }

 private:
  using Clock = std::chrono::steady_clock;
  void drain();                          // inotify events -> pending
  void mark(const std::string& name);    // (re)start the quiet period of one name
  void rescan();                         // queue overflow: look at everything again
  std::vector<WatchEvent> settle(Clock::time_point now);

  std::filesystem::path dir_;
  WatchOptions opt_;
  int fd_ = -1;
  int wd_ = -1;
  std::map<std::string, Clock::time_point> pending_;  // name -> when it may settle
  std::map<std::string, jit::Hash128> known_;              // name -> hash of the content last reported
};

}  // namespace gpuos::detail
