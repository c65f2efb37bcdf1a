// Hot-patching state of a Runtime: the operator registry, the compile cache and the generations.
// Only host/hotpatch.cpp and host/runtime.cpp (for its lifetime) include this.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jit/cache.hpp"
#include "jit/compiler.hpp"
#include "jit/linker.hpp"
#include "runtime.hpp"

namespace gpuos::detail {

struct Runtime::Hotpatch {
  struct Unit {  // an operator source whose compiled version serves
    std::shared_ptr<const jit::CompileResult> serving;
    jit::Hash128 hash;  // of the serving version's text
    uint64_t generation = 0;
  };
  struct Op {  // a loaded operator
    std::string name;
    std::string unit;
    uint32_t arg_bytes = 0;
    uint64_t generation = 0;
  };
  /// What one generation serves; a generation rollback restores the previous one.
  struct Registry {
    std::map<std::string, Unit> units;  // by source name
    std::map<uint32_t, Op> ops;         // by op id
  };
  struct Alias {
    std::vector<uint32_t> targets;  // back = current
    uint32_t arg_bytes = 0;
  };

  Hotpatch();

  std::mutex mu;  // serializes every hot-patch call
  jit::Cache cache;
  jit::CompileOptions copts;
  jit::LinkOptions lopts;
  std::map<std::string, uint32_t> ids;  // name -> op id, stable for the runtime's life
  uint32_t next_id = GPUOS_BUILTIN_OP_COUNT;
  Registry reg, prev_reg;
  bool have_prev = false;
  gpuos_generation cur{}, prev_gen{};
  uint64_t generations = 0;
  std::map<std::string, std::string> errors;  // source -> why its latest version does not serve
  std::map<uint32_t, Alias> aliases;          // logical id -> targets
};

}  // namespace gpuos::detail
