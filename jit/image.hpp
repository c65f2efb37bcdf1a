// Scheduler + operators + jump table -> one cubin: the last CPU-side step before the runtime loads an
// image (host/generations.cpp; the load completes only once the resident kernel has stopped).
//
// The caller (the runtime) owns the operator registry: which compiled units make up the image and
// which slot each operator takes. build_image checks that the set is consistent (each operator
// declared once, each table name declared somewhere), generates and compiles the jump table, links
// everything with nvJitLink and caches the cubin under a key over all link inputs.
#pragma once

#include <string>
#include <vector>

#include "jit/compiler.hpp"
#include "jit/linker.hpp"
#include "jit/table.hpp"

namespace gpuos::jit {

class Cache;

struct ImageSpec {
  /// Fixed inputs: the scheduler object (nvcc -rdc=true -c: relocatable SASS, or with -dlto LTO-IR) and
  /// anything else that is not an operator unit. The data must stay alive during build_image.
  std::vector<LinkInput> base;
  /// Operators the base inputs define (the built-ins), so the table may name them.
  std::vector<std::string> base_operators;
  /// Compiled operator sources (all ok()); each operator name may be declared by one unit only.
  std::vector<const CompileResult*> units;
  /// Slot -> operator name; every name is a base operator or declared by a unit.
  std::vector<TableEntry> table;
  /// The base inputs call gpuos_loaded_tile (kernel/dispatch.cu, GPUOS_INLINE_LOADED): the table defines
  /// it, calling every table operator that is not a base operator by name.
  bool inline_operators = false;
};

struct ImageResult {
  bool ok = false;
  std::vector<char> cubin;  ///< non-empty iff ok
  std::string error;        ///< why not: an inconsistent spec, a table compile or a link error
  Hash128 key;              ///< cache key of the cubin
  bool from_cache = false;
  double seconds = 0;
};

/// The table is compiled with `table_options` at link.arch (its other fields: include dirs, defines).
ImageResult build_image(const ImageSpec& spec, const LinkOptions& link, const CompileOptions& table_options = {},
                        Cache* cache = nullptr);

}  // namespace gpuos::jit
