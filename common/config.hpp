// The configuration table: every setting gpuos reads from the environment, written once.
//
// Each row of GPUOS_CONFIG_TABLE is one variable: the Config member it fills, its name, its kind, the
// values it accepts, its default and one line of documentation. A runtime reads the table once, at
// creation (Config::from_env); a malformed value is an error (GPUOS_ERR_INVALID_ARG) that names the
// variable, the value and what it accepts. Unset and empty mean the default. docs/configuration.md is
// generated from the table (`gpuos config --markdown`; a CPU test checks the file is current).
//
// Kinds: flag (0 or 1), integer (decimal in [lo, hi], or one of the row's words, e.g. off=0), bytes
// (a count with an optional K/M/G suffix, binary units, in [lo, hi]), choice (one of the row's words),
// path (any non-empty text; an empty value means the default, which the row's doc describes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuos::common {

enum class Kind { flag, integer, bytes, choice, path };

// X(member, NAME, kind, lo, hi, words, default, doc)
//   words: integer: "word=value|..." accepted besides numbers; choice: "a|b|c" (the first is the
//   default unless `default` says otherwise); default: as the variable would be written.
#define GPUOS_CONFIG_TABLE(X)                                                                              \
  X(ctx_sched, "GPUOS_CTX_SCHED", choice, 0, 0, "driver|auto|spin|yield|blocking", "driver",               \
    "How the driver's threads wait for the GPU: the primary context's scheduling flag (driver: leave the "  \
    "driver's choice). A generation switch waits in the driver for its module load.")                      \
  X(carveout, "GPUOS_CARVEOUT", choice, 0, 0, "l1|driver", "l1",                                           \
    "Shared-memory carve-out of the resident kernel: l1 gives each SM just the shared memory its blocks "  \
    "need and the rest to L1 (operators' call stacks stay in L1); driver leaves the driver's choice.")     \
  X(tile_batch, "GPUOS_TILE_BATCH", integer, 1, 64, "", "32",                                              \
    "Most tiles a block claims at once from a large task.")                                                \
  X(claim_spread, "GPUOS_CLAIM_SPREAD", integer, 1, 64, "", "64",                                          \
    "A large task's claims take (tiles left) / (this x grid blocks) tiles, at least 1, at most "           \
    "GPUOS_TILE_BATCH.")                                                                                    \
  X(claim_ahead, "GPUOS_CLAIM_AHEAD", flag, 0, 1, "", "1",                                                 \
    "1: a block claims a large task's next tiles inside the operator's claiming adapter, each claim "      \
    "issued while the previous batch runs; 0: the scheduler claims after each batch (a diagnostic).")      \
  X(poll_pace_ns, "GPUOS_POLL_PACE", integer, 0, 4000, "off=0", "1200",                                    \
    "Longest the front end waits (ns) after a lone task's completion before its next poll of the ring; "   \
    "it adapts below this. off or 0: never waits.")                                                        \
  X(graph_staging, "GPUOS_GRAPH_STAGING", bytes, 1 << 16, 1ll << 34, "", "4M",                            \
    "Mapped pinned memory for graph launches' argument updates, allocated at boot: a launch's updates "    \
    "(96 bytes a node) wait there until it has run; launches wait for room, and more than this at once "  \
    "is refused.")                                                                                          \
  X(graph_placed, "GPUOS_GRAPH_PLACED", flag, 0, 1, "", "1",                                              \
    "1: an instance's tiles are placed on the worker blocks at instantiation and a launch runs them in "   \
    "place, waiting on counters (one placed launch at a time; others meanwhile run unplaced); 0: every "   \
    "launch hands its ready nodes out at run time.")                                                       \
  X(stream_spin_us, "GPUOS_STREAM_SPIN", integer, 0, 1000000, "", "1000",                                  \
    "Stream-ordered submission: how long (us) the thread answering streams' doorbells spins after its "   \
    "last doorbell or submission before it sleeps 50 us between scans (a doorbell rung after a quiet "    \
    "period then waits up to that long).")                                                                 \
  X(sm_budget, "GPUOS_SM_BUDGET", integer, 0, 4096, "all=0", "0",                                           \
    "SMs the resident kernel may occupy when gpuos_options.sm_budget is 0 (all or 0: every SM); the rest "  \
    "stay free for other work. An option set in code overrides it.")                                       \
  X(deadline_scale, "GPUOS_DEADLINE_SCALE", integer, 1, 1000, "", "1",                                      \
    "Multiplies every watchdog deadline (the runtime's, an operator's, a task's; and so the drain's stall " \
    "bound where a deadline sets it) and the 30 s a launch, stop or suspend of the resident kernel may "   \
    "take, for runs under tools that slow the GPU: compute-sanitizer runs operators 10-100 times slower. " \
    "1 outside such runs.")                                                                                \
  X(drain_stall_ms, "GPUOS_DRAIN_STALL", integer, 100, 86400000, "", "30000",                               \
    "Shutdown and destroy drain every submitted task; they give up once none has completed for this "    \
    "long (ms; or the longest watchdog deadline in force, if longer): the runtime is then declared hung "  \
    "(GPUOS_ERR_HUNG) and its kernel ended. A graph instance's destroy waits at most this long for its "   \
    "last launch (then GPUOS_ERR_TIMEOUT, the instance kept).")                                             \
  X(trace, "GPUOS_TRACE", flag, 0, 1, "", "0",                                                             \
    "1: the front end records every poll that found work in a flight recorder (device memory) that "       \
    "gpuos_diagnose summarizes. Diagnostics; slows the front end slightly.")                               \
  X(switch_trace, "GPUOS_SWITCH_TRACE", flag, 0, 1, "", "0",                                               \
    "1: every generation switch under a running kernel prints where its pause went (stderr).")             \
  X(kernel_lto, "GPUOS_KERNEL_LTO", flag, 0, 1, "", "0",                                                   \
    "1: generations link the scheduler as LTO-IR, re-optimized with the operators (about 20x the link "    \
    "time); 0: as relocatable SASS, linked as it is.")                                                     \
  X(inline_operators, "GPUOS_INLINE_OPERATORS", flag, 0, 1, "", "0",                                     \
    "1: every generation links the dispatch loops (chain links, placed launches' roles) as LTO-IR with "  \
    "its operators' tiles inlined into them: no item pays a call, and a link takes seconds (a tiny "      \
    "operator's ~1.4 s on an H100 host, against ~0.1); 0: they are linked as relocatable SASS and call "  \
    "a loaded operator through its row.")                                                                  \
  X(jit_max_compiles, "GPUOS_JIT_MAX_COMPILES", integer, 0, 64, "", "0",                                   \
    "Most NVRTC compiles that run at once in the process (each takes hundreds of MB). 0: the number of "   \
    "hardware threads, at most 8.")                                                                        \
  X(cache_dir, "GPUOS_CACHE_DIR", path, 0, 0, "", "",                                                      \
    "Directory of the compile cache. Empty: $XDG_CACHE_HOME/gpuos, else $HOME/.cache/gpuos, else memory "  \
    "only; off: memory only. gpuos_options.cache_dir overrides it.")                                       \
  X(cache_max_bytes, "GPUOS_CACHE_MAX_BYTES", bytes, 1 << 20, 1ll << 50, "", "512M",                       \
    "Bound of the compile cache's directory; the least recently used entries are removed beyond it.")      \
  X(include_dir, "GPUOS_INCLUDE_DIR", path, 0, 0, "", "",                                                  \
    "Directory holding gpuos/op.cuh for operator compiles. Empty: the headers embedded in the library, "   \
    "written once under the system's temporary directory. gpuos_options.include_dir overrides it.")        \
  X(cccl_dir, "GPUOS_CCCL_DIR", path, 0, 0, "", "",                                                        \
    "CCCL (libcu++) include directory for operator compiles. Empty: the CUDA toolkit's include/cccl "      \
    "found when gpuos was built. gpuos_options.cccl_dir overrides it.")

template <Kind K> struct ValueOf;
template <> struct ValueOf<Kind::flag> { using type = bool; };
template <> struct ValueOf<Kind::integer> { using type = std::int64_t; };
template <> struct ValueOf<Kind::bytes> { using type = std::uint64_t; };
template <> struct ValueOf<Kind::choice> { using type = std::string; };
template <> struct ValueOf<Kind::path> { using type = std::string; };

/// One row of the table, as data (docs, the `gpuos config` command, tests).
struct Row {
  const char* member;
  const char* name;
  Kind kind;
  long long lo, hi;
  const char* words;
  const char* default_text;
  const char* doc;
};
const std::vector<Row>& rows();

/// Where a setting came from.
enum class Source { default_value, environment, option };

/// Every setting, typed. Default-constructed: every row's default.
struct Config {
#define GPUOS_CONFIG_MEMBER(member, name, kind, lo, hi, words, def, doc) ValueOf<Kind::kind>::type member;
  GPUOS_CONFIG_TABLE(GPUOS_CONFIG_MEMBER)
#undef GPUOS_CONFIG_MEMBER

  Config();
  /// Reads every row from `lookup` (the process environment by default: std::getenv); throws
  /// Failure(GPUOS_ERR_INVALID_ARG) on the first malformed value.
  static Config from_env(const std::function<const char*(const char*)>& lookup = {});

  /// Where each member's value came from, by variable name (from_env sets environment; the runtime
  /// sets option for what gpuos_options overrides).
  std::vector<std::pair<std::string, Source>> sources;
  void set_source(std::string_view name, Source s);
  Source source_of(std::string_view name) const;

  /// Each setting as the variable would be written ("GPUOS_TILE_BATCH=32"), in table order.
  std::vector<std::string> describe() const;
};

/// docs/configuration.md, generated from the table.
std::string markdown();

}  // namespace gpuos::common
