// The operator registry: which operator names exist, their ids, what each generation serves, the
// aliases, and which ids a submission may name (the accept table). Pure logic: no CUDA, no JIT calls,
// no I/O; unit-tested on the CPU (tests/unit/test_op_registry.cpp).
//
// Ids: the built-ins hold 0..GPUOS_BUILTIN_OP_COUNT-1; every other name (a loaded operator or an alias)
// gets the next free id on first use and keeps it for the runtime's life; GPUOS_OP_HEAP_CTL and above
// are never handed out.
//
// A change of what serves goes in two steps: plan() checks a proposed set of operator sources (names
// unique, none a built-in or an alias, ids available) and assigns ids; after the image is linked,
// complete() records each operator's argument size and says which ids retire (gone, or a changed
// argument size: they stop accepting before the switch); commit() makes the plan current. A failed
// step changes nothing.
//
// Thread-safety: the accept table is lock-free and read by every submission; everything else is
// guarded by the caller (Generations' lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuos/gpuos.h"
#include "jit/compiler.hpp"
#include "jit/hash.hpp"
#include "kernel/wire.h"

namespace gpuos::detail {

/// Which operator ids a submission may name, with the argument size each takes.
class AcceptTable {
 public:
  std::optional<std::uint32_t> arg_bytes(std::uint32_t id) const {
    const std::uint32_t w = id < GPUOS_MAX_OPS ? w_[id].load(std::memory_order_acquire) : 0u;
    if (!(w & kAccept)) return std::nullopt;
    return w & ~kAccept;
  }
  bool accepts(std::uint32_t id) const { return arg_bytes(id).has_value(); }
  void accept(std::uint32_t id, std::uint32_t arg_bytes) {
    w_[id].store(kAccept | arg_bytes, std::memory_order_release);
    version_.fetch_add(1, std::memory_order_acq_rel);
  }
  void refuse(std::uint32_t id) {
    w_[id].store(0u, std::memory_order_release);
    version_.fetch_add(1, std::memory_order_acq_rel);
  }
  /// Changes so far: what was checked against one version still holds while it is current.
  std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  static constexpr std::uint32_t kAccept = 1u << 31;
  std::atomic<std::uint32_t> w_[GPUOS_MAX_OPS] = {};
  std::atomic<std::uint64_t> version_{0};
};

/// An operator source whose compiled version serves.
struct Unit {
  std::shared_ptr<const jit::CompileResult> serving;
  jit::Hash128 hash;  ///< of the serving version's text
  std::uint64_t generation = 0;
};
/// A loaded operator.
struct LoadedOp {
  std::string name;
  std::string unit;
  std::uint32_t arg_bytes = 0;
  std::uint64_t generation = 0;
};
/// What one generation serves.
struct Served {
  std::map<std::string, Unit> units;  ///< by source name
  std::map<std::uint32_t, LoadedOp> ops;  ///< by op id
};

class OpRegistry {
 public:
  OpRegistry();

  AcceptTable& accept() { return accept_; }
  const AcceptTable& accept() const { return accept_; }
  const Served& serving() const { return cur_; }
  bool has_previous() const { return have_prev_; }

  /// The id of a live operator or alias (accepted now), or nullopt.
  std::optional<std::uint32_t> live_id(const std::string& name) const;

  // ---- a generation ----
  struct Plan {
    Served next;
    std::map<std::string, std::uint32_t> new_ids;  ///< names seen for the first time
    std::uint32_t next_id = 0;
    std::vector<std::uint32_t> retiring;  ///< ids that stop accepting before the switch (complete())
  };
  /// Checks the sources of `next` (names unique over the units, not a built-in, not an alias, ids left)
  /// and assigns ids. Throws Failure(GPUOS_ERR_INVALID_ARG) with "<focus>: error: ..." on a clash.
  Plan plan(Served next, const std::string& focus) const;
  /// Why `unit` declaring `operators` cannot join `others` (a name of a built-in, an alias, or one another
  /// unit declares), or "" when it can.
  std::string clash(const std::string& unit, const std::vector<std::string>& operators, const Served& others) const;
  /// With the linked image's argument sizes (arg_bytes_of(name); nullopt: not found): records them and
  /// the generation each operator's version came with (`number` for new or changed ones), checks the
  /// aliases still hold, and fills plan.retiring. Throws Failure on a problem.
  void complete(Plan& plan, const std::function<std::optional<std::uint32_t>(const std::string&)>& arg_bytes_of,
                std::uint64_t number) const;
  /// Makes the plan what serves (after a successful switch): the accept table holds exactly its
  /// operators; the serving set becomes the previous one.
  void commit(Plan&& plan, std::uint64_t number);

  /// The ids that retire when rolling back to the previous generation; throws if an alias points at an
  /// operator the previous generation lacks.
  std::vector<std::uint32_t> plan_rollback() const;
  /// The previous generation serves again (after the switch back).
  void commit_rollback();

  // ---- aliases ----
  struct AliasPlan {
    std::uint32_t logical = 0, target = 0, arg_bytes = 0;
    bool fresh = false;  ///< a new alias name (its id is taken at commit)
  };
  /// `alias` -> `target` (an operator, not an alias, accepted now); throws Failure on bad input.
  AliasPlan plan_alias(const std::string& alias, const std::string& target) const;
  /// `alias` back to its previous target.
  AliasPlan plan_alias_rollback(const std::string& alias) const;
  /// Records the switch (once its control task is in the queue).
  void commit_alias(const std::string& alias, const AliasPlan& p, bool rollback);

  // ---- errors of sources whose latest version does not serve ----
  void set_error(const std::string& source, const std::string& why) { errors_[source] = why; }
  void clear_error(const std::string& source) { errors_.erase(source); }
  const std::string* error_of(const std::string& source) const;

  /// Every row for gpuos_list_ops: built-ins, loaded operators, aliases, failed sources. Counts come
  /// from `counts(id, completed, failed)`.
  std::vector<gpuos_op_info> rows(const std::function<void(std::uint32_t, std::uint64_t&, std::uint64_t&)>& counts) const;
  /// The name operator id `id` goes by ("" when none).
  std::string name_of(std::uint32_t id) const;

 private:
  struct Alias {
    std::vector<std::uint32_t> targets;  ///< back = current
    std::uint32_t arg_bytes = 0;
  };

  AcceptTable accept_;
  std::map<std::string, std::uint32_t> ids_;  ///< name -> id, stable for the runtime's life
  std::uint32_t next_id_ = GPUOS_BUILTIN_OP_COUNT;
  Served cur_, prev_;
  bool have_prev_ = false;
  std::map<std::uint32_t, Alias> aliases_;  ///< logical id -> targets
  std::map<std::string, std::string> errors_;
};

}  // namespace gpuos::detail
