// Compile cache: artifacts (LTO-IR, cubins) by key, in memory and on disk.
//
// Keys are 128-bit hashes built by the caller over everything that decides the artifact (for a
// compile: source, every included header's content, options, NVRTC and nvJitLink versions, arch; see
// compiler.hpp). Only artifacts are cached, never live handles (a loaded module is the runtime's).
//
// Disk tier: one file per key under <dir>/v1/, written to a temporary file in the same directory and
// renamed over the final name, so a reader sees either no file or a complete one; concurrent writers of
// one key write identical bytes. Each file carries a magic, the key and an XXH3-64 checksum of the
// payload: a truncated, torn or altered file is detected, counted, removed and reported as a miss, so
// the caller recompiles; it is never returned. The directory is bounded in bytes with LRU eviction
// (a hit refreshes the file's mtime; eviction removes the oldest mtimes first).
//
// Memory tier: an LRU bounded in bytes, in front of the disk.
//
// A cache problem (unwritable directory, full disk) never fails a compile: it is counted and the cache
// degrades to memory only for that entry. All members are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.hpp"
#include "jit/hash.hpp"

namespace gpuos::jit {

struct CacheConfig {
  /// Disk directory; nullopt = memory only.
  std::optional<std::filesystem::path> dir;
  std::uint64_t disk_limit_bytes = 512ull << 20;
  std::uint64_t memory_limit_bytes = 64ull << 20;

  /// The configured directory (GPUOS_CACHE_DIR or gpuos_options.cache_dir; "off": memory only), else
  /// $XDG_CACHE_HOME/gpuos (an absolute XDG_CACHE_HOME), else $HOME/.cache/gpuos, else memory only;
  /// the disk bound GPUOS_CACHE_MAX_BYTES. `env` looks up XDG_CACHE_HOME and HOME (std::getenv by default).
  static CacheConfig from(const common::Config& cfg, const std::function<const char*(const char*)>& env = {});
};

struct CacheStats {
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t stores = 0;        ///< entries written to disk
  std::uint64_t corrupt = 0;       ///< disk entries rejected (and removed) as damaged
  std::uint64_t evictions = 0;     ///< disk entries removed for the size bound
  std::uint64_t write_errors = 0;  ///< disk writes that failed (the entry stays in memory)
  std::uint64_t hits() const { return memory_hits + disk_hits; }
};

class Cache {
 public:
  explicit Cache(CacheConfig cfg);
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  /// The artifact stored under `key`, or nullopt (a miss, or a damaged disk entry, now removed).
  std::optional<std::vector<char>> get(const Hash128& key);
  /// Stores `value` under `key` in memory and on disk; evicts to stay within the bounds.
  void put(const Hash128& key, std::span<const char> value);

  CacheStats stats() const;
  const CacheConfig& config() const { return cfg_; }
  /// Drops the memory tier (the next get of a key goes to disk).
  void clear_memory();
  /// File of `key` on disk (empty path when memory only). For tests and tools.
  std::filesystem::path file_of(const Hash128& key) const;
  /// Bytes of the disk entries, by a directory scan.
  std::uint64_t disk_usage() const;

  /// Disk file layout (little endian); the header is followed by the payload.
  static constexpr char kMagic[8] = {'G', 'P', 'U', 'O', 'S', 'J', 'C', '\0'};
  static constexpr std::uint32_t kFormat = 1;
  static constexpr std::size_t kHeaderBytes = 48;  // magic 8, format 4, header size 4, key 16, size 8, checksum 8

 private:
  std::optional<std::vector<char>> disk_get(const Hash128& key);
  void disk_put(const Hash128& key, std::span<const char> value);
  void evict_disk();
  void memory_put(const Hash128& key, std::vector<char> value);

  CacheConfig cfg_;
  std::filesystem::path entries_;  // <dir>/v1, empty when memory only

  mutable std::mutex mu_;
  struct Slot {
    std::vector<char> value;
    std::list<Hash128>::iterator lru;
  };
  std::unordered_map<Hash128, Slot, Hash128Hasher> mem_;
  std::list<Hash128> lru_;  // front = most recent
  std::uint64_t mem_bytes_ = 0;
  std::int64_t disk_bytes_ = -1;  // estimate; -1 until the first scan

  std::atomic<std::uint64_t> memory_hits_{0}, disk_hits_{0}, misses_{0}, stores_{0}, corrupt_{0},
      evictions_{0}, write_errors_{0};
};

}  // namespace gpuos::jit
