// The tagging operator of the hot-patch tests and benchmark: a task adds its operator's version to one
// float, so the float says which version ran and how often (0: never; twice the version: twice).
// Callers pick versions whose sums cannot be mistaken for one another (powers of two, or odd numbers).
#pragma once

#include <string>

namespace gpuos::tools {

/// The tagging operator's argument struct, as its source declares it.
struct TagArgs {
  float* out;
  unsigned long long pad;
};

/// Source of operator `name` of version `version`: out[0] += version (one thread).
inline std::string tag_source(const std::string& name, unsigned version) {
  return "#include \"gpuos/op.cuh\"\n"
         "struct TagArgs { float* out; unsigned long long pad; };\n"
         "__device__ void " + name + "_tile(const TagArgs& a, const gpuos::TileCtx&) {\n"
         "  if (threadIdx.x == 0) *a.out += " + std::to_string(version) + ".0f;\n"
         "}\n"
         "GPUOS_OPERATOR(" + name + ", TagArgs, " + name + "_tile)\n";
}

}  // namespace gpuos::tools
