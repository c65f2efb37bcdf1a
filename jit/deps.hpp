// Which headers a source depends on, for the compile cache key.
//
// NVRTC reports no dependencies, so the closure is found by scanning `#include` lines and resolving
// them as NVRTC does: a quoted name first in the including file's directory, then in the -I
// directories in order; an angled name in the -I directories. The scan ignores the preprocessor's
// conditions, so it over-approximates (a header under `#if 0` still counts): that can only cause an
// extra cache miss, never a stale hit. Names that resolve nowhere (NVRTC's built-in headers such as
// cuda_fp16.h, or a header that does not exist yet) are recorded by name, so creating one later also
// changes the key. A computed include (`#include MACRO`) cannot be followed: the header it names is
// missed, and the source that uses it must be touched when it changes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jit/hash.hpp"

namespace gpuos::jit {

struct HeaderDeps {
  struct File {
    std::string path;  ///< lexically normal absolute path
    Hash128 content;
  };
  std::vector<File> files;             ///< sorted by path, each once
  std::vector<std::string> unresolved;  ///< include names found nowhere, sorted, each once
  /// One hash over all of the above.
  Hash128 digest() const;
};

/// Closure of the headers `source` includes. `source_dir` is where quoted includes of the source itself
/// are searched first (empty: nowhere). Thread-safe. Per-file content hashes are memoized by
/// (inode, size, mtime, ctime), except for files modified within the last two seconds, whose time
/// stamps cannot yet tell a rewrite apart.
HeaderDeps scan_header_deps(std::string_view source, const std::string& source_dir,
                            const std::vector<std::string>& include_dirs);

}  // namespace gpuos::jit
