#include "jit/table.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "gpuos/limits.h"
#include "common/error.hpp"

namespace gpuos::jit {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

std::string table_source(std::span<const TableEntry> entries, bool loaded_tile,
                         std::span<const std::string> base_operators) {
  std::vector<const TableEntry*> by_slot(GPUOS_MAX_OPS, nullptr);
  std::set<std::string> names;
  unsigned used = 0;
  for (const TableEntry& e : entries) {
    if (e.slot >= GPUOS_MAX_OPS)
      throw common::Failure(GPUOS_ERR_INVALID_ARG, "jump table: slot " + std::to_string(e.slot) + " of operator '" +
                                                       e.op + "' is not below GPUOS_MAX_OPS (" +
                                                       std::to_string(GPUOS_MAX_OPS) + ")");
    if (!is_identifier(e.op))
      throw common::Failure(GPUOS_ERR_INVALID_ARG, "jump table: '" + e.op + "' (slot " + std::to_string(e.slot) +
                                                       ") is not an operator name");
    if (by_slot[e.slot])
      throw common::Failure(GPUOS_ERR_INVALID_ARG, "jump table: slot " + std::to_string(e.slot) +
                                                       " is given to both '" + by_slot[e.slot]->op + "' and '" +
                                                       e.op + "'");
    by_slot[e.slot] = &e;
    names.insert(e.op);
    used = std::max(used, e.slot + 1);
  }
  // No #include: the table only takes addresses (and calls adapters), so OpEntry and TileCtx may stay
  // incomplete, and a translation unit without headers compiles in milliseconds (it is rebuilt whenever
  // the set of operators changes).
  std::string s =
      "// Jump table of one gpuos image: slot -> operator entry (and the direct calls of its loaded\n"
      "// operators' range adapters). Generated; do not edit.\n"
      "namespace gpuos { struct OpEntry; }\n\n";
  for (const std::string& n : names) s += "extern \"C\" __device__ const ::gpuos::OpEntry gpuos_op_" + n + "_entry;\n";
  s += "\nextern \"C\" __device__ const ::gpuos::OpEntry* const gpuos_op_table[" + std::to_string(GPUOS_MAX_OPS) +
       "] = {\n";
  for (unsigned i = 0; i < used; ++i) {
    s += "    /* " + std::to_string(i) + " */ ";
    s += by_slot[i] ? "&gpuos_op_" + by_slot[i]->op + "_entry" : std::string("nullptr");
    s += ",\n";
  }
  s += "};\n";
  if (!loaded_tile) return s;
  // Inline, as the adapters are where they are defined (gpuos/op.cuh): nvJitLink inlines both into the
  // dispatch loops (kernel/dispatch.cu). Its address, kept in a variable, makes NVRTC emit it for them.
  std::string decls, calls;
  for (const std::string& n : names) {
    if (std::find(base_operators.begin(), base_operators.end(), n) != base_operators.end()) continue;
    decls += "extern \"C\" __device__ void gpuos_op_" + n + "_tile(const void*, const ::gpuos::TileCtx&, unsigned int);\n";
    calls += "  if (tile == &gpuos_op_" + n + "_tile) return gpuos_op_" + n + "_tile(a, c, n);\n";
  }
  s += "\nnamespace gpuos { struct TileCtx; }\n"
       "using gpuos_tile_fn = void (*)(const void*, const ::gpuos::TileCtx&, unsigned int);\n" +
       decls +
       "extern \"C\" __device__ __forceinline__ void gpuos_loaded_tile(gpuos_tile_fn tile, const void* a,\n"
       "                                                               const ::gpuos::TileCtx& c, unsigned int n) {\n" +
       calls;
  s += "  tile(a, c, n);\n}\n"
       "extern \"C\" __device__ void (*const gpuos_loaded_tile_address)(gpuos_tile_fn, const void*, const ::gpuos::TileCtx&,\n"
       "                                                         unsigned int) = &gpuos_loaded_tile;\n";
  return s;
}

CompileResult compile_table(std::span<const TableEntry> entries, CompileOptions o, Cache* cache, bool loaded_tile,
                            std::span<const std::string> base_operators) {
  o.require_operator = false;
  return compile("gpuos_op_table.cu", table_source(entries, loaded_tile, base_operators), o, cache);
}

}  // namespace gpuos::jit
