// The jump table of an image, as a generated translation unit.
//
// The resident kernel reads `gpuos_op_table[op]` (slot -> address of the operator's OpEntry), and its
// dispatch loops, where linked as LTO-IR (GPUOS_INLINE_OPERATORS=1), call `gpuos_loaded_tile`
// (kernel/dispatch.cu), which calls each loaded operator's range adapter by name, so that nvJitLink
// inlines them there. The table is generated per image, compiled by
// NVRTC to LTO-IR and linked with the scheduler and the operators, so every address in it is taken
// inside the image that uses it.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "jit/compiler.hpp"

namespace gpuos::jit {

struct TableEntry {
  unsigned slot;   ///< operator id, < GPUOS_MAX_OPS
  std::string op;  ///< operator name: the table refers to gpuos_op_<op>_entry
};

/// CUDA source of the table TU. Slots not listed are nullptr. One name may fill several slots. With
/// `loaded_tile`, it also defines gpuos_loaded_tile (kernel/dispatch.cu, GPUOS_INLINE_LOADED), which calls
/// the range adapter of every listed operator that is not one of `base_operators` (those the base inputs
/// define: the built-ins) by name.
/// Throws Failure(GPUOS_ERR_INVALID_ARG) for a slot out of range, a slot listed twice or a name that is
/// not a C identifier.
std::string table_source(std::span<const TableEntry> entries, bool loaded_tile = false,
                         std::span<const std::string> base_operators = {});

/// table_source compiled to LTO-IR (require_operator is forced off: the table declares none).
CompileResult compile_table(std::span<const TableEntry> entries, CompileOptions o, Cache* cache = nullptr,
                            bool loaded_tile = false, std::span<const std::string> base_operators = {});

}  // namespace gpuos::jit
