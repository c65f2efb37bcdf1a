// The scheduler's wire format: every layout the host runtime and the resident kernel share. Internal:
// not installed (operators see gpuos/op.cuh, embedders gpuos/gpuos.h).
//
// Compiled by the host C++ compiler and by nvcc. All structs are POD; sizes and offsets are pinned by
// static_assert, and GPUOS_ABI_VERSION is checked at run time against the device image.
//
// The submission ring lives in mapped pinned host memory. Every GPU read of it is a PCIe round trip, so
// a slot is built to be read in ONE round trip that tells both "the task is there" and what the task is:
// a 128-byte slot is 8 chunks of 16 bytes, each chunk carries 12 payload bytes and a 4-byte stamp, the
// host writes each chunk with one 16-byte store, and the device reads all 8 chunks at once. The slot is
// ready when all 8 stamps equal the stamp expected for the ticket; a torn or stale slot never matches.
#ifndef GPUOS_KERNEL_WIRE_H
#define GPUOS_KERNEL_WIRE_H

#include <cstddef>
#include <cstdint>

#include "gpuos/gpuos.h"
#include "gpuos/limits.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GPUOS_HD __host__ __device__
#else
#define GPUOS_HD
#endif

/// Bumped on any change to a layout in this file; the image and the host must agree.
#define GPUOS_ABI_VERSION 9u

/// Operator id of a control task: not an operator, an instruction to the front end, applied in ticket
/// order (ControlArgs). Never a valid jump-table index.
#define GPUOS_OP_CONTROL 0xFFFFu
/// Operator id of a dependency slot: not a task, the list of tickets the next ticket's task waits for
/// (DepsArgs). The task that follows it (Payload::hints kHintDeps) reads it and completes its ticket.
#define GPUOS_OP_DEPS 0xFFFEu
/// Operator id of a graph launch (GraphLaunchArgs): the scheduler runs the instance's nodes; the launch's
/// ticket completes when its last node has.
#define GPUOS_OP_GRAPH 0xFFFDu
/// Operator id reserved for the runtime's heap requests (HeapCtlArgs). The scheduler serves it from its
/// own code whatever the jump table holds; the host refuses it in user submissions.
#define GPUOS_OP_HEAP_CTL (GPUOS_MAX_OPS - 1u)

namespace gpuos::abi {
using std::int32_t;
using std::uint8_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;

inline constexpr uint32_t kSlotBytes = 128;
inline constexpr uint32_t kChunkBytes = 16;
inline constexpr uint32_t kSlotChunks = kSlotBytes / kChunkBytes;  // 8
inline constexpr uint32_t kChunkPayload = 12;
inline constexpr uint32_t kPayloadBytes = kSlotChunks * kChunkPayload;  // 96

/// One 16-byte unit of a slot. Written by the host with a single 16-byte store, read by the device with
/// a single 16-byte load: payload and stamp are always seen together.
struct alignas(16) Chunk {
  uint32_t w[3];
  uint32_t stamp;
};

/// A submission ring slot (mapped host memory; host writes, device reads).
struct alignas(128) Slot {
  Chunk c[kSlotChunks];
};

/// The logical content of a slot, reassembled from the chunks' payload words.
struct alignas(8) Payload {
  uint16_t op;         ///< operator id (index of the jump table)
  uint8_t arg_bytes;   ///< size of the argument struct in args[] (<= GPUOS_MAX_ARG_BYTES)
  uint8_t hints;       ///< SlotHint bits: what the host knew when it published the slot (not the task's)
  uint32_t tiles;      ///< number of tiles, 1..GPUOS_MAX_TILES
  unsigned char args[GPUOS_MAX_ARG_BYTES];
};

/// Payload::hints. kHintMore: when the host published this slot it had already handed out a later ticket,
/// so more work follows right behind it; the front end widens its next poll (kernel/window.hpp). Without
/// it, a task found alone keeps the poll at one slot, the cheapest round trip for a waiting caller.
/// kHintDeps: the task waits for the tickets the slot before it (GPUOS_OP_DEPS) lists.
enum SlotHint : uint8_t { kHintMore = 1, kHintDeps = 2 };

/// Completion record (mapped host memory; device writes with one 16-byte store, host reads).
/// Record i holds the latest ticket t with t % capacity == i; seq = t + 1 so that zeroed memory is empty.
struct alignas(16) Completion {
  uint64_t seq;
  uint32_t status;  ///< TaskStatus
  uint32_t detail;  ///< the rejected op id on failure; on success the completing block + 1 (diagnostics)
};

/// Arguments of a control task (Payload.op == GPUOS_OP_CONTROL, arg_bytes == sizeof(ControlArgs)).
/// kControlAlias: from this ticket on, tasks naming operator id `logical` run the operator in jump-table
/// slot `slot`. The front end applies it when the ticket's turn comes, before it copies any later task.
struct ControlArgs {
  uint16_t logical;
  uint16_t slot;
  uint32_t kind;  ///< ControlKind
};
enum ControlKind : uint32_t { kControlAlias = 1 };

/// What the device says about a task.
enum TaskStatus : uint32_t {
  kTaskOk = 0,
  kTaskBadOp = 1,       ///< no operator at that id in the running image
  kTaskBadArgs = 2,     ///< argument size differs from the operator's declared size
  kTaskDepFailed = 3,   ///< not run: a task it depends on (directly or not) failed; detail = the low 32
                        ///< bits of the ticket that failed first (the root cause)
  kTaskNodeFailed = 4,  ///< a graph launch: node `detail` failed; the nodes after it did not run. The
                        ///< node's own status (kTaskBadOp, kTaskBadArgs) is in bits 8-15 (node_failure)
};
/// The status of a completion record without the failed node's (kTaskNodeFailed).
GPUOS_HD inline constexpr uint32_t status_code(uint32_t status) { return status & 0xffu; }
/// kTaskNodeFailed: the failed node's own status.
GPUOS_HD inline constexpr uint32_t node_failure(uint32_t status) { return (status >> 8) & 0xffu; }

/// Control block (mapped host memory). Cache-line separated by writer.
struct alignas(64) HostControl {
  // Written by the host, read by the front end of the kernel.
  uint64_t stop_run;  ///< the kernel whose run id equals this value exits (suspend / stop)
  uint64_t pad0[7];
  // Written by the device (posted writes), read by the host.
  uint64_t heartbeat;   ///< front-end loop iterations, published every few iterations
  uint64_t fetched;     ///< tickets [0, fetched) have been taken out of the ring
  uint64_t started_run; ///< run id of the launch that is running (written once all blocks started)
  uint64_t abi_version; ///< GPUOS_ABI_VERSION of the running image, written at start
  uint64_t stop_seen_run; ///< diagnostics: run id of the front end that saw its stop request and exited
  uint64_t drained_run;   ///< diagnostics: run id whose every block has left the kernel (the last one writes it)
  uint64_t pad1[2];
};

/// Most tickets one task waits for directly (a longer list goes through join tasks, host/submitter.cpp).
inline constexpr uint32_t kMaxDeps = 16;

/// A runnable unit in device memory: a host ticket's entry of the device queue (index ticket % capacity,
/// like the ring) or a node of an instantiated graph (GraphShape::recs). 256 bytes: line 0 is what the
/// front end arms and workers claim from, line 1 the dependency bookkeeping.
///
/// Tiles are handed out by decrementing `claim` by 1 << 32. Its high half is the number of tiles not yet
/// handed out (a signed count that goes negative once exhausted), its low half the low 32 bits of the
/// ticket. A claim is valid iff the old remaining count was positive; the tile is then (remaining - 1),
/// and the record cannot be reused before that tile finishes (its task cannot complete), so the payload
/// read after a valid claim is always the claimed task's. A stale claim (an exhausted or recycled record)
/// reads remaining <= 0 and touches nothing. A record that must not run yet (a task waiting for its
/// dependencies, a dependency slot) is armed with no tile; a ready record handed to one block (its
/// continuation) is not armed at all: that block runs it, and arms the claim word itself when the task
/// has more than one tile, so that others can help.
///
/// Host tickets, dependencies: `waiters` is a list of links (a waiting task's links[j]) tagged with the
/// ticket's low 32 bits and closed when it completes (kWaitDone, kWaitFailed); a word with another tag is
/// a former ticket's: empty and open. `deps_left` counts the task's dependencies not yet complete, plus
/// one while they are being registered; whoever takes it to zero makes the task ready (kernel/deps.hpp).
///
/// Graph nodes: `arrived` counts completed predecessors over all launches (never reset); the node is
/// ready in a launch once it has grown by its in-degree. Successors are named by `succ_begin`: the
/// successor itself (a succ_word) when succ_count is 1, else an index into GraphShape::succ.
struct alignas(256) TaskRecord {
  uint64_t claim;    ///< (remaining tiles << 32) | (uint32_t)ticket
  uint32_t pending;  ///< tiles not yet finished; the block that takes it to 0 completes the task
  uint32_t mark;     ///< diagnostics: (launch << 1) | 1 if the front end ran the task itself
  uint64_t ticket;   ///< host tickets: the ticket; graph nodes: the running launch's ticket
  double scratch;    ///< per-task accumulator, zeroed before the task starts (TileCtx::scratch)
  Payload payload;
  uint64_t waiters;     ///< host tickets: (low 32 bits of the ticket << 32) | kWaitDone | kWaitFailed | link + 1
  /// Why the task completes without running: 0, or for host tickets the root-cause ticket + 1 (set
  /// before it is made ready, or by its completer when it failed), for graph nodes 1 (a predecessor failed
  /// or was skipped in this launch; its completer clears it).
  uint64_t cause;
  uint64_t exec;        ///< graph nodes: their GraphExec (device address); 0 for host tickets
  uint32_t deps_left;   ///< host tickets: dependencies not yet complete (+1 while registering)
  uint32_t node;        ///< graph nodes: the node's index
  uint64_t next_ready;  ///< the chain of ready records a block keeps for itself (device address or 0)
  uint32_t links[kMaxDeps];  ///< host tickets: this task's waiter links (next link id + 1; 0: end)
  uint32_t succ_begin;  ///< graph nodes: see above
  uint32_t succ_count;  ///< graph nodes: successors
  uint32_t weak;        ///< host tickets: bit j set: links[j] orders only (its failure does not propagate)
  uint32_t sinks;       ///< graph nodes without a successor: the graph's number of such nodes; else 0
  uint64_t arrived;     ///< graph nodes: predecessors completed, over all launches
};

/// TaskRecord::waiters: state bits and the head of the list (a link id + 1; 0 = empty). A link id is
/// (index of the waiting task's record) * kMaxDeps + (its link slot).
inline constexpr uint64_t kWaitDone = 1ull << 31;
inline constexpr uint64_t kWaitFailed = 1ull << 30;
inline constexpr uint64_t kWaitHeadMask = (1ull << 30) - 1;
GPUOS_HD inline constexpr uint64_t wait_word(uint64_t ticket, uint64_t state_and_head) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(ticket)) << 32) | state_and_head;
}
GPUOS_HD inline constexpr bool wait_is_for(uint64_t word, uint64_t ticket) {
  return static_cast<uint32_t>(word >> 32) == static_cast<uint32_t>(ticket);
}

/// Arguments of a dependency slot (op GPUOS_OP_DEPS, ticket T - 1): what task T waits for. Entries of
/// back[] past `count` are 0.
struct DepsArgs {
  uint32_t count;          ///< tickets listed in back[] (<= kMaxDeps)
  uint32_t reserved;
  uint64_t failed_cause;   ///< 0, or (root-cause ticket + 1) of a dependency already known to have failed
  /// T minus each ticket waited for (1 .. capacity - 1), | kDepOrderOnly when that ticket only orders T.
  uint32_t back[kMaxDeps];
};
/// DepsArgs::back: T runs after that ticket, whether it failed or not (a lane's order, a graph instance's
/// previous launch).
inline constexpr uint32_t kDepOrderOnly = 1u << 31;

/// Arguments of a graph launch (op GPUOS_OP_GRAPH; the slot's tiles are 1).
struct GraphLaunchArgs {
  uint64_t exec;      ///< the instance (device address of its GraphExec)
  uint64_t deltas;    ///< GraphDelta[ndeltas] in mapped host memory: nodes changed since the last launch
  uint32_t ndeltas;
  uint32_t reserved;
  uint64_t number;    ///< diagnostics: the host's launch count of this instance (1, 2, ...)
};

/// A node's new operator slot and arguments (mapped host memory), applied by its launch before any node
/// runs: arguments set since the last launch, and the slot of an alias the node names as of the launch's
/// ticket (the host resolves aliases for graph nodes, in ticket order with alias switches).
struct GraphDelta {
  uint32_t node;
  uint16_t op;
  uint16_t reserved;
  unsigned char args[GPUOS_MAX_ARG_BYTES];  ///< the node's argument size is fixed at instantiation
};

/// A successor as TaskRecord::succ_begin (one successor) or GraphShape::succ holds it: the node index in
/// the low 20 bits, its in-degree above them (kSuccIndegMax: look it up in GraphShape::indeg).
inline constexpr uint32_t kSuccNodeBits = 20;
inline constexpr uint32_t kSuccNodeMask = (1u << kSuccNodeBits) - 1;
inline constexpr uint32_t kSuccIndegMax = (1u << (32 - kSuccNodeBits)) - 1;
GPUOS_HD inline constexpr uint32_t succ_word(uint32_t node, uint32_t indeg) {
  return node | ((indeg < kSuccIndegMax ? indeg : kSuccIndegMax) << kSuccNodeBits);
}

/// A set of ready records other blocks claim one at a time (from the board), like tiles of a task: each
/// item is a record not yet armed, and whoever claims one runs it as its continuation (arming it, and
/// putting it on the board for helpers, when it has more than one tile).
struct alignas(64) ReadyBatch {
  uint64_t claim;  ///< (records not yet handed out << 32), as TaskRecord::claim
  uint64_t items;  ///< uint64_t[] of record addresses
  uint64_t pad[6];
};

/// An instantiated graph (device memory, one block of the runtime's heap; the host writes it at
/// instantiation). Launches of one instance run one after the other (each waits for the one before), so
/// `run` belongs to the running launch; `shape` never changes.
struct alignas(128) GraphRun {
  uint64_t launch;        ///< TaskRecord address of the running launch's ticket
  uint64_t cause;         ///< 0, or (the first failed node's status << 32) | (node + 1), in the running launch
  uint64_t items_used;    ///< ready-list items handed out in the running launch
  uint64_t batches_used;  ///< ready batches handed out in the running launch
  uint64_t sinks_done;    ///< nodes without a successor completed, over all launches
  uint64_t launches;      ///< launches that ran (diagnostics)
  uint64_t ticket;        ///< the running launch's ticket (placed launches: what their nodes are told)
  uint32_t placed;        ///< placed launches so far (the running one's number while it runs)
  uint32_t launcher_pos;  ///< the placed position of the block that started the running launch (role 0)
  uint64_t pad[8];
};
struct alignas(128) GraphShape {
  uint32_t nodes, nroots;
  uint32_t nsinks;
  uint32_t roles;        ///< placed launches: the roles of its placement (0: none; every launch runs unplaced)
  uint64_t recs;         ///< TaskRecord[nodes]
  uint64_t indeg;        ///< uint32_t[nodes]
  uint64_t succ;         ///< successors, a succ_word each [edges]
  uint64_t roots;        ///< uint32_t[nroots]
  uint64_t items;        ///< uint64_t[nodes]: ready lists
  uint64_t batches;      ///< ReadyBatch[nodes / 2 + 1]
  uint64_t role_off;     ///< placement: uint32_t[roles + 1], role r's items are items[role_off[r] .. role_off[r+1])
  uint64_t pitems;       ///< placement: PlacedItem[]
  uint64_t pwaits;       ///< placement: PlacedWait[]
  uint64_t pnodes;       ///< placement: PlacedNode[nodes]
  uint64_t pad[4];
};

/// A placed launch (docs/design.md, "Placed launches"): the instance's tiles were assigned to roles at
/// instantiation; the block that started the launch runs role 0, and role r > 0 the worker block at the
/// r-th place of an order in which consecutive places are on different SMs (kernel/scheduler.cu,
/// placed_position), skipping the launcher. Each role runs its items in order. Item: tiles
/// [first, first + count) of `node`, after the waits pwaits[wbegin .. wbegin + wcount).
struct PlacedItem {
  uint32_t node;
  uint32_t first;
  uint32_t count;
  uint32_t flags;   ///< kPlacedPublish, kPlacedSink, kPlacedNoWait, kPlacedClaim
  uint32_t wbegin;
  uint32_t wcount;
  uint32_t pad[2];
};
/// PlacedItem::flags: the node's completion is counted in PlacedNode::done (a role other than the one
/// completing it waits for it, or its tiles are spread over several roles).
inline constexpr uint32_t kPlacedPublish = 1u;
/// PlacedItem::flags: the node has no successor (its completion counts towards the launch's).
inline constexpr uint32_t kPlacedSink = 2u;
/// PlacedItem::flags: every predecessor was completed earlier by the same role (nothing to wait for).
inline constexpr uint32_t kPlacedNoWait = 4u;
/// PlacedItem::flags: the node has more tiles than the placement has roles: every role has such an item
/// (first and count 0) and claims the node's tiles at run time from PlacedNode::claim, as blocks claim a
/// large task's (blocks' speeds differ: fixed shares would leave the node to its slowest block).
inline constexpr uint32_t kPlacedClaim = 8u;
/// What an item waits for: predecessor `node` complete in this launch, i.e. its PlacedNode::done grown to
/// (the launch's number) x `weight` (its tiles + 1). kPlacedSameRole: the role itself completed it, earlier:
/// nothing to wait for, only its failure to look at.
struct PlacedWait {
  uint32_t node;    ///< | kPlacedSameRole
  uint32_t weight;  ///< the node's tiles + 1
};
inline constexpr uint32_t kPlacedSameRole = 1u << 31;
/// A node's placed-launch state (count-up, never reset: a launch adds tiles + 1 to `done`).
struct PlacedNode {
  uint32_t done;   ///< tiles completed over all placed launches, + 1 per launch once its finish has run
  uint32_t bad;    ///< the number of the last placed launch in which it failed or did not run
  uint64_t claim;  ///< kPlacedClaim nodes: a claim word as TaskRecord::claim, armed by each placed launch
};
GPUOS_HD inline constexpr uint32_t placed_weight(uint32_t tiles) { return tiles + 1u; }
struct GraphExec {
  GraphRun run;
  GraphShape shape;
};

/// Builds a claim word.
GPUOS_HD inline constexpr uint64_t make_claim(uint32_t remaining, uint64_t ticket) {
  return (static_cast<uint64_t>(remaining) << 32) | static_cast<uint32_t>(ticket);
}
/// Remaining tiles of a claim word as the signed count it is.
GPUOS_HD inline constexpr int32_t claim_remaining(uint64_t claim) {
  return static_cast<int32_t>(static_cast<uint32_t>(claim >> 32));
}
inline constexpr uint64_t kClaimOne = 1ull << 32;

/// Records in the front end's flight recorder (DeviceState::trace), one for every poll that found work:
/// {head, ready, window | lone << 32 | pace << 40, launch, t_issue, t_return, t_done, steps}: device
/// times in ns (%globaltimer) when the poll's reads were issued, when thread 0's returned, and when the
/// poll's work was handed over (published to the workers, or, for a lone task the front end ran, its
/// completion record written); pace: the front end's post-completion pacing (ns) at that poll; for a
/// lone task, steps holds three 21-bit ns offsets from t_return: the poll's barrier passed (every chunk
/// in) << 42 | tile done << 21 | record written. Words 8-14, lone tasks only, device times of the steps
/// in between: the poll's barrier passed, run_lone called, entered, the payload staged and validated, the operator's
/// call returned (thread 0), the tile's barrier passed, the record written; word 15: SM clock cycles
/// from run_lone's entry to the record (with words 10 and 14, the SM's clock rate).
inline constexpr uint32_t kTraceRecords = 1u << 16;
inline constexpr uint32_t kTraceWords = 16;
/// A lone task's `steps` word: three ns offsets from t_return, 21 bits each (saturating), step 0 in the
/// top bits. Packed by the front end, unpacked by diagnose (host/diagnose.cpp).
inline constexpr uint64_t kTraceStepMask = (1ull << 21) - 1;
GPUOS_HD inline constexpr uint64_t trace_steps(uint64_t a, uint64_t b, uint64_t c) {
  constexpr uint64_t m = kTraceStepMask;
  return ((a < m ? a : m) << 42) | ((b < m ? b : m) << 21) | (c < m ? c : m);
}
/// Step k (0, 1, 2) of a `steps` word.
GPUOS_HD inline constexpr uint64_t trace_step(uint64_t steps, unsigned k) {
  return (steps >> (42 - 21 * k)) & kTraceStepMask;
}

/// Most blocks a grid has in the per-block tables (DeviceState::block_sm, work): placed launches order
/// the roles of such blocks by SM, and the watchdog sees what they run. A larger grid's blocks beyond it
/// have no entry.
inline constexpr uint32_t kMaxBlockTable = 2048;

/// What a block is running, for the host's watchdog (DeviceState::work; host/watchdog.cpp): thread 0
/// writes it before each call of an operator (its tiles' adapter or its finish function) and marks it
/// idle after, two stores and no fence. The host copies the table now and then and judges a call by how
/// long it keeps seeing the same record.
struct alignas(16) BlockWork {
  uint64_t ticket;  ///< the host ticket the call runs for (a graph node's: its launch's)
  uint32_t tile;    ///< the first tile of the call; kWorkFinish: the task's finish function
  /// bits 0-15: the operator (its jump-table slot); 16-30: the block's call count (mod 2^15), which
  /// tells two calls with the same ticket, tile and operator apart; 31: busy (0 once the call returned).
  uint32_t call;
};
inline constexpr uint32_t kWorkFinish = 0xffffffffu;
inline constexpr uint32_t kWorkBusy = 1u << 31;

/// HostControl::stop_run and DeviceState::abort: the host's watchdog gave up on the running kernel (a
/// call past its deadline, a shutdown that could not drain); the first block to see it ends the launch
/// with a fault (kernel/scheduler.cu, abort_kernel).
inline constexpr uint64_t kAbortRun = ~0ull;

/// Number of multi-tile tasks idle blocks can help with at once.
inline constexpr uint32_t kBoardSize = 64;

/// Scheduler state (device memory, allocated by the host outside the image, passed by pointer, so it
/// survives relaunches and image changes). Hot words each own a 128-byte line.
struct alignas(128) DeviceState {
  uint64_t head;  ///< tickets [0, head) are in the device queue (front end writes)
  /// A poll with dependency slots, left by the front end to a worker (special_job, kernel/scheduler.cu)
  /// while it waits: the number of such posts so far (the front end writes it last, with release). Beside
  /// `head`: idle workers read both in one 16-byte load.
  uint64_t special_post;
  uint64_t pad_head[2];
  /// Placed launches (one at a time): how many were started, and the instance of the last. Worker blocks
  /// read both in one 16-byte load with `head`'s line; the instance is written first, `gang_seq` last
  /// (release).
  uint64_t gang_seq;
  /// kAbortRun once the host's watchdog gave up on the kernel (written by a copy: idle workers read it
  /// with gang_seq, in one 16-byte load).
  uint64_t abort;
  uint64_t gang_exec;
  uint64_t pad0[9];
  uint64_t claim;  ///< next ticket a worker block claims
  // A special_job's hand-over, off `head`'s line: every idle worker reads that line about every
  // microsecond, and a front end spinning there for special_done sees each of its reads slowed by them.
  uint64_t special_taken;  ///< the last post a worker took (compare-and-swap from post - 1)
  /// (the last post a worker finished << 8) | the slots it copied.
  uint64_t special_done;
  /// The posted poll: (its head << 8) | its slots (<= 32); its chunks are in special_chunks.
  uint64_t special_poll;
  uint64_t pad1[12];
  uint32_t closed;  ///< front end stopped publishing for this run
  uint32_t exited;  ///< blocks of this run that have left the kernel
  uint64_t launches;
  uint64_t start_head;  ///< `head` the last launch started from
  uint64_t exit_head;   ///< `head` when the front end of the last run exited
  uint64_t* trace;      ///< flight recorder of the front end (kTraceRecords x kTraceWords), or null
  uint64_t trace_pos;   ///< records written so far
  // The scheduler's settings below are written by the host before the first launch (GPUOS_TILE_BATCH,
  // GPUOS_POLL_PACE, GPUOS_CLAIM_SPREAD, GPUOS_CLAIM_AHEAD) and read by every launch.
  uint32_t max_batch;   ///< most tiles a worker claims at once (0 = 32)
  /// Longest the front end waits after a lone task's completion record before its next poll (ns; it
  /// adapts below this, kernel/scheduler.cu "pacing"); 0 = never waits.
  uint32_t pace_limit_ns;
  /// A large task's claims take an even share of the tiles left over this many times the grid (0 = 64,
  /// kClaimSpread).
  uint32_t claim_spread;
  /// Nonzero: the scheduler makes each of a block's claims itself, one operator call per batch, instead
  /// of the operator's claiming adapter claiming on within one call, each claim issued as the previous
  /// batch starts (TileClaimFn, gpuos/op.cuh). GPUOS_CLAIM_AHEAD=0 sets it (a diagnostic).
  uint32_t claim_ahead_off;
  /// 1 while a placed launch runs (taken by compare-and-swap; another launch meanwhile runs unplaced).
  uint32_t gang_busy;
  uint32_t pad2;
  uint64_t pad3[7];
  /// Work idle blocks can take: a TaskRecord's address (a task with tiles left to claim) or a ReadyBatch's
  /// address | 1 (records ready to run); 0 = empty.
  uint64_t board[kBoardSize];
  /// Alias table: a task's op id is a logical id; the front end replaces it with alias[op] (the jump-table
  /// slot) when it copies the task into the device queue. Identity unless a control task changed it.
  /// Written only by the front end (control tasks) and by the host before the first launch.
  uint16_t alias[GPUOS_MAX_OPS];
  /// Host tickets completed, over all launches (devices side): a stopping kernel's blocks leave once it
  /// reaches `head` (every published task, graph launches and tasks waiting for others included, done).
  uint64_t completed;
  uint64_t pad4[15];
  /// The front end's threads' first chunks of the poll in special_post (thread i: chunk i % 8 of slot i / 8).
  Chunk special_chunks[GPUOS_BLOCK_THREADS];
  /// The SM of each block of the running launch (%smid), written as it starts: placed launches order
  /// their roles by it. A larger grid's roles follow block order.
  uint16_t block_sm[kMaxBlockTable];
  /// What each block of the running launch is calling (BlockWork), for the host's watchdog.
  BlockWork work[kMaxBlockTable];
};

/// The one kernel parameter.
struct LaunchParams {
  const Slot* ring;
  Completion* completions;
  HostControl* control;
  DeviceState* state;
  TaskRecord* dq;  ///< the device queue: TaskRecord[capacity]
  uint64_t run_id;
  uint32_t log2_capacity;
  uint32_t abi_version;
  /// The heap's control block (device memory, a gpuos::tlsf::Control initialised by the host at boot,
  /// pool included); nullptr when the runtime has no heap. Like the rest, it outlives every launch.
  void* heap;
};

// ---- heap requests of the host (operator GPUOS_OP_HEAP_CTL) ------------------------------------
/// What a heap request asks.
enum HeapCmd : uint32_t {
  kHeapAlloc = 1,  ///< a = bytes, b = alignment; reply: ptr, status
  kHeapFree = 2,   ///< a = pointer; reply: status
  kHeapStats = 3,  ///< reply: stats
  kHeapCheck = 4,  ///< reply: check_ok, check_arena, check_offset, message (invariant checker)
};

/// Arguments of a heap request (inline in the ring slot).
struct HeapCtlArgs {
  uint32_t cmd;  ///< HeapCmd
  uint32_t reserved;
  uint64_t a;
  uint64_t b;
  uint64_t reply;  ///< address of a HeapReply in mapped host memory
};

/// The answer to a heap request (mapped host memory; the device writes it before the task's
/// completion record, whose system-scope release orders it).
struct alignas(128) HeapReply {
  uint64_t ptr;
  uint32_t status;  ///< gpuos::tlsf::Status
  uint32_t reserved;
  gpuos_heap_stats stats;  ///< kHeapStats: the one definition of the heap's statistics (gpuos/gpuos.h)
  uint32_t check_ok;
  uint32_t check_arena;
  uint64_t check_offset;
  char message[200];
};

// ---- layout pins --------------------------------------------------------------------------------
static_assert(sizeof(Chunk) == 16 && alignof(Chunk) == 16);
static_assert(GPUOS_MAX_REGISTERS * GPUOS_BLOCK_THREADS * GPUOS_MIN_BLOCKS_PER_SM <= 65536u,
              "the register budget must fit GPUOS_MIN_BLOCKS_PER_SM blocks in an SM's register file");
static_assert(sizeof(Slot) == kSlotBytes && alignof(Slot) == 128);
static_assert(sizeof(Payload) == kPayloadBytes);
static_assert(offsetof(Payload, arg_bytes) == 2 && offsetof(Payload, hints) == 3);
static_assert(offsetof(Payload, args) == 8, "args must be 8-byte aligned inside the payload");
static_assert(sizeof(Completion) == 16);
static_assert(sizeof(HostControl) == 128);
static_assert(offsetof(HostControl, heartbeat) == 64, "device-written words own the second line");
static_assert(sizeof(TaskRecord) == 256 && alignof(TaskRecord) == 256);
static_assert(offsetof(TaskRecord, payload) == 32 && offsetof(TaskRecord, waiters) == 128);
static_assert(offsetof(TaskRecord, links) == 168 && offsetof(TaskRecord, succ_begin) == 232);
static_assert(offsetof(TaskRecord, arrived) == 248);
static_assert(sizeof(DepsArgs) == 80 && sizeof(DepsArgs) <= GPUOS_MAX_ARG_BYTES);
static_assert(sizeof(GraphLaunchArgs) == 32 && sizeof(GraphLaunchArgs) <= GPUOS_MAX_ARG_BYTES);
static_assert(sizeof(GraphDelta) == 96 && offsetof(GraphDelta, op) == 4 && offsetof(GraphDelta, args) == 8);
static_assert(sizeof(GraphRun) == 128 && sizeof(GraphShape) == 128 && sizeof(GraphExec) == 256);
static_assert(sizeof(ReadyBatch) == 64);
static_assert(offsetof(DeviceState, claim) == 128 && offsetof(DeviceState, closed) == 256);
static_assert(offsetof(DeviceState, board) == 384);
static_assert(offsetof(DeviceState, gang_seq) == 32 && offsetof(DeviceState, abort) == 40 &&
              offsetof(DeviceState, gang_exec) == 48);
static_assert(sizeof(BlockWork) == 16);
static_assert(offsetof(DeviceState, gang_busy) == 320);
static_assert(sizeof(PlacedItem) == 32 && sizeof(PlacedWait) == 8 && sizeof(PlacedNode) == 16);
static_assert(offsetof(DeviceState, alias) == 896 && offsetof(DeviceState, completed) == 1408);
static_assert(offsetof(DeviceState, special_chunks) == 1536);
static_assert(offsetof(DeviceState, work) == 1536 + 16 * GPUOS_BLOCK_THREADS + 2 * kMaxBlockTable);
static_assert(sizeof(DeviceState) == 1536 + 16 * GPUOS_BLOCK_THREADS + 18 * kMaxBlockTable);
static_assert(sizeof(ControlArgs) == 8);
static_assert(offsetof(LaunchParams, heap) == 56);
static_assert(offsetof(HeapReply, stats) == 16 && offsetof(HeapReply, message) == 152);
static_assert(sizeof(LaunchParams) == 64);
static_assert(sizeof(HeapCtlArgs) == 32 && sizeof(HeapCtlArgs) <= GPUOS_MAX_ARG_BYTES);
static_assert(sizeof(gpuos_heap_stats) == 120);
static_assert(sizeof(HeapReply) == 384 && alignof(HeapReply) == 128);

// ---- slot encoding (host writes, device and tests read) -----------------------------------------
/// Stamp of a ticket: the ring lap plus one, so zeroed memory never looks ready and the previous
/// occupant of a slot (one lap earlier) never matches.
GPUOS_HD inline constexpr uint32_t stamp_of(uint64_t ticket, uint32_t log2_capacity) {
  return static_cast<uint32_t>(ticket >> log2_capacity) + 1u;
}

/// Splits a payload into the 8 chunks of a slot image, each stamped.
GPUOS_HD inline void encode_slot(const Payload& p, uint32_t stamp, Slot& out) {
  const auto* src = reinterpret_cast<const uint32_t*>(&p);
  for (uint32_t i = 0; i < kSlotChunks; ++i) {
    out.c[i].w[0] = src[3 * i + 0];
    out.c[i].w[1] = src[3 * i + 1];
    out.c[i].w[2] = src[3 * i + 2];
    out.c[i].stamp = stamp;
  }
}

/// True when every chunk carries `stamp`; then `out` holds the payload.
GPUOS_HD inline bool decode_slot(const Slot& s, uint32_t stamp, Payload& out) {
  auto* dst = reinterpret_cast<uint32_t*>(&out);
  bool ok = true;
  for (uint32_t i = 0; i < kSlotChunks; ++i) {
    ok = ok && (s.c[i].stamp == stamp);
    dst[3 * i + 0] = s.c[i].w[0];
    dst[3 * i + 1] = s.c[i].w[1];
    dst[3 * i + 2] = s.c[i].w[2];
  }
  return ok;
}

/// Tiles needed for n elements at `per_tile` elements a tile (at least one).
GPUOS_HD inline constexpr uint64_t tiles_for(uint64_t n, uint64_t per_tile) {
  return n == 0 ? 1 : (n + per_tile - 1) / per_tile;
}

}  // namespace gpuos::abi

#endif  // GPUOS_KERNEL_WIRE_H
