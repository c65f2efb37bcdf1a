// gpuos heap: a TLSF allocator (two-level segregated fit) written once for the host and the device.
//
// All state lives in memory the caller hands in: a POD control block (Control followed by its arenas)
// and one contiguous pool. Nothing lives in a global, so the heap survives relaunches and image changes
// of the resident kernel. Metadata refers to blocks by 64-bit offsets from the pool base, never by
// pointers: the same control block is valid wherever the pool is mapped (see rebase()).
//
// Concurrency: one lock word for the whole heap collapses at full-GPU scale, so the pool is split into
// arenas, each a complete TLSF over its own sub-range with its own spin lock. A caller names a home arena
// by a hint (SM id on the device, a thread hash on the host) and falls back to the other arenas when its
// home cannot serve the request. An optional large arena at the end of the pool serves requests bigger
// than a small arena. A block is always freed into the arena that owns its address.
//
// Compiled by g++ (host) and nvcc (both passes): only libcu++ and the scheduler's wire header are used in
// code the device compiles; host-only helpers are behind #if !defined(__CUDA_ARCH__).
// Design, invariants and measurements: docs/allocator.md.
#ifndef GPUOS_KERNEL_TLSF_HPP
#define GPUOS_KERNEL_TLSF_HPP

#include <cuda/atomic>
#include <cuda/std/bit>

#include "kernel/wire.h"

#if !defined(__CUDACC_RTC__)
#include <sched.h>  // sched_yield: host backoff only
#endif

// Keeps the device compiler from unrolling the long loops (checker, init): unrolled, they multiply the
// code size of every kernel that inlines them many times over, for no speed that matters.
#if defined(__CUDA_ARCH__)
#define GPUOS_TLSF_NO_UNROLL _Pragma("unroll 1")
#else
#define GPUOS_TLSF_NO_UNROLL
#endif

/// Longest sleep (ns) between two attempts at a held arena lock on the device.
#ifndef GPUOS_TLSF_MAX_BACKOFF_NS
#define GPUOS_TLSF_MAX_BACKOFF_NS 1024u
#endif

/// Marks the heap's cold, large functions (checker, statistics, the host's one-at-a-time requests,
/// initialisation) as out of line: inlined at each call site they made the resident kernel's image
/// several times larger, and every generation switch loads and unloads that image while serving pauses.
#ifdef __CUDACC__
#define GPUOS_TLSF_COLD __noinline__
#else
#define GPUOS_TLSF_COLD
#endif

namespace gpuos::tlsf {
using std::int32_t;
using std::uint8_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;

// ---- geometry -------------------------------------------------------------------------------------
/// Block granule and minimum payload alignment: every block starts and ends on 16 bytes.
inline constexpr uint32_t kAlignLog2 = 4;
inline constexpr uint64_t kAlign = 1ull << kAlignLog2;
/// Block header (boundary tag) in front of every payload: size/flags/tag word + prev-physical offset.
inline constexpr uint64_t kHeader = 16;
/// Smallest block: a header plus the two free-list links a free block keeps in its payload.
inline constexpr uint64_t kMinBlock = 32;
/// Second-level index: 2^kSLI lists per power of two.
inline constexpr uint32_t kSLI = 5;
inline constexpr uint32_t kSLCount = 1u << kSLI;
/// Sizes below 2^kFLShift (512 B) share first-level list 0, split linearly into 16-byte classes.
inline constexpr uint32_t kFLShift = kSLI + kAlignLog2;
inline constexpr uint64_t kSmallBlock = 1ull << kFLShift;
/// Blocks, arenas and the pool are below 2^kMaxLog2 bytes (256 TiB); offsets and sizes fit 48 bits.
inline constexpr uint32_t kMaxLog2 = 48;
inline constexpr uint64_t kMaxPool = 1ull << kMaxLog2;
/// First-level lists: index 0 for sizes < 512, index i >= 1 for sizes in [2^(i+8), 2^(i+9)).
inline constexpr uint32_t kFLCount = kMaxLog2 - kFLShift + 1;  // 40
/// Largest request: anything bigger cannot fit a 48-bit arena (rejected before any arithmetic).
inline constexpr uint64_t kMaxRequest = kMaxPool - 2 * kMinBlock;
/// Blocks the fallback search inspects when the O(1) good-fit search finds nothing (see docs).
inline constexpr uint32_t kFitScan = 16;
/// Most arenas a control block may hold (plus the large arena).
inline constexpr uint32_t kMaxArenas = 4096;
/// Smallest small arena.
inline constexpr uint64_t kMinArenaBytes = 4096;
/// Arena boundaries are multiples of this (keeps arenas on separate cache lines and pages).
inline constexpr uint64_t kArenaGranule = 4096;
inline constexpr uint64_t kNil = ~0ull;

inline constexpr uint64_t kMagic = 0x4f534f5046534c54ull;  // "TLSFPOSO"
inline constexpr uint32_t kVersion = 1;

/// Control flags.
enum Flags : uint32_t {
  /// Verify every free against the boundary tags of the block and its neighbours (see free()).
  kChecked = 1u << 0,
};

/// Result of init/free and the reason behind a failed alloc.
enum Status : uint32_t {
  kOk = 0,
  kInvalidArg = 1,   ///< init: bad pool, arena count or options
  kBadAlign = 2,     ///< alloc: alignment not a power of two
  kOutOfMemory = 3,  ///< alloc: no arena could serve the request
  kTooLarge = 4,     ///< alloc: larger than any arena
  kForeign = 5,      ///< free: not a live block start of this heap (outside, misaligned, interior, corrupt)
  kDoubleFree = 6,   ///< free: the block is already free
  kNotInit = 7,      ///< control block not initialised (bad magic or version)
};

// ---- layout ---------------------------------------------------------------------------------------
/// One arena: a complete TLSF over [begin, end) of the pool. The first line holds what every operation
/// touches (lock, bitmap, counters); the list heads follow. All fields but the lock and bitmaps are only
/// touched under the lock; the bitmaps are also read lock-free (relaxed) as a hint by fallback searches.
struct alignas(128) Arena {
  uint32_t lock;  ///< 0 free, 1 held
  uint32_t index;
  uint64_t begin;  ///< offsets from the pool base
  uint64_t end;
  uint64_t fl_bitmap;    ///< bit i: some list of first level i is non-empty
  uint64_t used_bytes;   ///< bytes of used blocks, headers included
  uint64_t free_bytes;   ///< bytes of free blocks, headers included
  uint64_t used_blocks;
  uint64_t free_blocks;
  uint64_t allocs;  ///< successful allocations served by this arena
  uint64_t frees;   ///< successful frees into this arena
  uint64_t pad[6];
  uint32_t sl_bitmap[kFLCount];          ///< bit j of [i]: list (i, j) non-empty
  uint64_t heads[kFLCount][kSLCount];    ///< first free block of each list, kNil when empty
};

/// Heap-wide header. Arena i lives at arenas(c)[i], right after this struct.
struct alignas(128) Control {
  uint64_t magic;
  uint32_t version;
  uint32_t flags;       ///< Flags; read relaxed by every free
  uint64_t base;        ///< pool address (set by init, changed by rebase)
  uint64_t pool_bytes;  ///< usable bytes: [0, pool_bytes) is covered by the arenas exactly
  uint32_t small_arenas;
  uint32_t has_large;   ///< 1: arena small_arenas is the large arena
  uint64_t stride;      ///< bytes of each small arena but the last
  uint64_t large_begin;      ///< first offset of the large arena (== pool_bytes when none)
  uint64_t large_threshold;  ///< requests whose block needs >= this try the large arena first
  uint64_t max_arena;        ///< bytes of the biggest arena
  uint64_t pad0[7];
  // Error counters, updated with relaxed atomics from any thread (failures are rare by design).
  uint64_t failed_allocs;  ///< allocations that returned null for any reason
  uint64_t bad_align;      ///< ... of which: alignment not a power of two
  uint64_t too_large;      ///< ... of which: request larger than any arena
  uint64_t bad_free;       ///< frees refused as foreign
  uint64_t double_free;    ///< frees refused as already free
  uint64_t pad1[11];
};

static_assert(sizeof(Arena) % 128 == 0 && alignof(Arena) == 128);
static_assert(sizeof(Arena) == 128 + 256 + 8 * kFLCount * kSLCount, "arena layout drifted");
static_assert(sizeof(Control) == 256);
#if !defined(__CUDACC_RTC__)  // NVRTC does not fold offsetof in constant expressions
static_assert(offsetof(Control, failed_allocs) == 128, "error counters own the second line");
#endif
static_assert(kFLCount <= 64, "first-level bitmap is one 64-bit word");

/// Bytes the caller must provide for a control block with `arenas` small arenas (room for the optional
/// large arena included). Alignment: 128.
GPUOS_HD constexpr uint64_t control_bytes(uint32_t arenas) {
  return sizeof(Control) + (static_cast<uint64_t>(arenas) + 1) * sizeof(Arena);
}

/// Options of init().
struct Options {
  /// Bytes of a dedicated large arena at the end of the pool; 0 = none, and then a request bigger than
  /// one small arena fails with kTooLarge.
  uint64_t large_bytes = 0;
  /// Requests whose block needs at least this many bytes try the large arena first; 0 = a quarter of a
  /// small arena. Ignored without a large arena.
  uint64_t large_threshold = 0;
  uint32_t flags = 0;  ///< Flags
};

/// Heap statistics (a snapshot; each arena is read under its lock).
/// Heap statistics: gpuos_heap_stats (gpuos/gpuos.h), the one definition the device fills, the wire
/// carries and the host API returns.
using Stats = gpuos_heap_stats;

/// Result of check(): ok, or the first violation found with where it was.
struct CheckResult {
  bool ok;
  uint32_t arena;
  uint64_t offset;
  char message[200];
};

// ---- implementation details ----------------------------------------------------------------------
/// 32-bit integer hash (a full-avalanche mixer): patterns and pseudo-random sizes in tests and benchmarks.
GPUOS_HD constexpr uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

namespace detail {

template <class T>
using aref = cuda::atomic_ref<T, cuda::thread_scope_device>;

GPUOS_HD inline uint32_t fls64(uint64_t x) { return 63u - static_cast<uint32_t>(cuda::std::countl_zero(x)); }
GPUOS_HD inline uint32_t ffs64(uint64_t x) { return static_cast<uint32_t>(cuda::std::countr_zero(x)); }
GPUOS_HD inline uint32_t ffs32(uint32_t x) { return static_cast<uint32_t>(cuda::std::countr_zero(x)); }
GPUOS_HD constexpr bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }
GPUOS_HD constexpr uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }
GPUOS_HD constexpr uint64_t round_down(uint64_t x, uint64_t a) { return x & ~(a - 1); }
GPUOS_HD constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/// First-level / second-level class of a block size (TLSF's mapping): fl = floor(log2 s),
/// sl = (s >> (fl - SLI)) ^ (1 << SLI); sizes below 512 go linearly into list 0.
struct Class {
  uint32_t fl;
  uint32_t sl;
};
GPUOS_HD inline Class mapping(uint64_t size) {
  if (size < kSmallBlock) return {0, static_cast<uint32_t>(size >> kAlignLog2)};
  const uint32_t f = fls64(size);
  return {f - kFLShift + 1, static_cast<uint32_t>((size >> (f - kSLI)) ^ (1ull << kSLI))};
}
/// Class to search for a request: the request is rounded up to the next class boundary first, so every
/// block of the class found is big enough (no list walk). fl may come out >= kFLCount: nothing fits.
GPUOS_HD inline Class mapping_search(uint64_t size) {
  if (size >= kSmallBlock) size += (1ull << (fls64(size) - kSLI)) - 1;
  return mapping(size);
}
/// Smallest size of class (fl, sl) (tests and docs).
GPUOS_HD constexpr uint64_t class_min(uint32_t fl, uint32_t sl) {
  return fl == 0 ? static_cast<uint64_t>(sl) << kAlignLog2
                 : (1ull << (fl + kFLShift - 1)) + (static_cast<uint64_t>(sl) << (fl + kFLShift - 1 - kSLI));
}

// Header word 0: bits 0..47 size (a multiple of 16; its low bits carry the flags), bits 48..63 a tag
// derived from (offset, size). The tag lets checked frees and the checker tell a real header from
// payload bytes. Word 1: offset of the previous physical block, kNil for the first block of an arena.
inline constexpr uint64_t kFreeBit = 1;
inline constexpr uint64_t kPrevFreeBit = 2;
inline constexpr uint64_t kFlagBits = kFreeBit | kPrevFreeBit;
inline constexpr uint64_t kSizeMask = (kMaxPool - 1) & ~(kAlign - 1);
/// Written over the header of a block absorbed by coalescing, so a stale pointer to it is recognised
/// as a double free (size 0: never a valid header).
inline constexpr uint64_t kPoison = 0xdead000000000000ull | kFreeBit;

struct Hdr {
  uint64_t w0;
  uint64_t prev;
};
struct Links {
  uint64_t next;
  uint64_t prev;
};
static_assert(sizeof(Hdr) == kHeader && sizeof(Hdr) + sizeof(Links) == kMinBlock);

GPUOS_HD constexpr uint64_t tag_of(uint64_t off, uint64_t size) {
  return mix64(off * 0x9e3779b97f4a7c15ull + size) & 0xffff000000000000ull;
}
GPUOS_HD constexpr uint64_t make_w0(uint64_t off, uint64_t size, uint64_t flags) {
  return tag_of(off, size) | size | flags;
}
GPUOS_HD constexpr uint64_t size_of(uint64_t w0) { return w0 & kSizeMask; }
GPUOS_HD constexpr bool tag_ok(uint64_t off, uint64_t w0) {
  return (w0 & 0xffff000000000000ull) == tag_of(off, size_of(w0));
}

GPUOS_HD inline Hdr* hdr(char* base, uint64_t off) { return reinterpret_cast<Hdr*>(base + off); }
GPUOS_HD inline Links* links(char* base, uint64_t off) {
  return reinterpret_cast<Links*>(base + off + kHeader);
}

GPUOS_HD inline Arena* arenas(Control* c) {
  return reinterpret_cast<Arena*>(reinterpret_cast<char*>(c) + sizeof(Control));
}
GPUOS_HD inline const Arena* arenas(const Control* c) {
  return reinterpret_cast<const Arena*>(reinterpret_cast<const char*>(c) + sizeof(Control));
}
GPUOS_HD inline uint32_t narenas(const Control* c) { return c->small_arenas + c->has_large; }
GPUOS_HD inline char* base_of(const Control* c) { return reinterpret_cast<char*>(c->base); }
GPUOS_HD inline bool initialised(const Control* c) {
  return c != nullptr && c->magic == kMagic && c->version == kVersion;
}

// ---- spin lock ----
GPUOS_HD inline void cpu_relax() {
#if !defined(__CUDA_ARCH__)
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
#endif
}
/// Exponential backoff: __nanosleep on the device (the SM runs the other warps meanwhile); pause, then
/// yield the CPU on the host (a preempted lock holder must get to run on an oversubscribed machine).
GPUOS_HD inline void backoff(uint32_t& step) {
#if defined(__CUDA_ARCH__)
  __nanosleep(step);
  if (step < GPUOS_TLSF_MAX_BACKOFF_NS) step <<= 1;
#else
  if (step < 2048) {
    for (uint32_t i = 0; i < step / 32; ++i) cpu_relax();
    step <<= 1;
  } else {
#if !defined(__CUDACC_RTC__)
    sched_yield();
#endif
  }
#endif
}
GPUOS_HD inline bool try_lock(Arena& a) {
  aref<uint32_t> w(a.lock);
  uint32_t expected = 0;
  return w.load(cuda::memory_order_relaxed) == 0 &&
         w.compare_exchange_strong(expected, 1u, cuda::memory_order_acquire, cuda::memory_order_relaxed);
}
GPUOS_HD inline void lock(Arena& a) {
  uint32_t step = 32;
  while (!try_lock(a)) backoff(step);
}
GPUOS_HD inline void unlock(Arena& a) { aref<uint32_t>(a.lock).store(0u, cuda::memory_order_release); }

GPUOS_HD inline void count(uint64_t& counter, uint64_t n = 1) {
  aref<uint64_t>(counter).fetch_add(n, cuda::memory_order_relaxed);
}
template <class T>
GPUOS_HD inline T load_relaxed(const T& x) {
  return aref<T>(const_cast<T&>(x)).load(cuda::memory_order_relaxed);
}
template <class T, class U>
GPUOS_HD inline void store_relaxed(T& x, U v) {
  aref<T>(x).store(static_cast<T>(v), cuda::memory_order_relaxed);
}

// ---- free lists (arena lock held) ----
GPUOS_HD inline void list_insert(char* base, Arena& a, uint64_t off, uint64_t size) {
  const Class k = mapping(size);
  const uint64_t head = a.heads[k.fl][k.sl];
  Links* l = links(base, off);
  l->next = head;
  l->prev = kNil;
  if (head != kNil) links(base, head)->prev = off;
  a.heads[k.fl][k.sl] = off;
  store_relaxed(a.sl_bitmap[k.fl], a.sl_bitmap[k.fl] | (1u << k.sl));
  store_relaxed(a.fl_bitmap, a.fl_bitmap | (1ull << k.fl));
}
GPUOS_HD inline void list_remove(char* base, Arena& a, uint64_t off, uint64_t size) {
  const Class k = mapping(size);
  const Links l = *links(base, off);
  if (l.prev != kNil) {
    links(base, l.prev)->next = l.next;
  } else {
    a.heads[k.fl][k.sl] = l.next;
  }
  if (l.next != kNil) links(base, l.next)->prev = l.prev;
  if (a.heads[k.fl][k.sl] == kNil) {
    const uint32_t sl_map = a.sl_bitmap[k.fl] & ~(1u << k.sl);
    store_relaxed(a.sl_bitmap[k.fl], sl_map);
    if (sl_map == 0) store_relaxed(a.fl_bitmap, a.fl_bitmap & ~(1ull << k.fl));
  }
}

/// The two find-first-set steps: the first non-empty list at or above class k, or kNil.
GPUOS_HD inline uint64_t find_suitable(const Arena& a, Class k) {
  if (k.fl >= kFLCount) return kNil;
  uint32_t sl_map = a.sl_bitmap[k.fl] & (~0u << k.sl);
  uint32_t fl = k.fl;
  if (sl_map == 0) {
    const uint64_t fl_map = fl + 1 < 64 ? a.fl_bitmap & (~0ull << (fl + 1)) : 0;
    if (fl_map == 0) return kNil;
    fl = ffs64(fl_map);
    sl_map = a.sl_bitmap[fl];
  }
  return a.heads[fl][ffs32(sl_map)];
}

/// Bytes to skip at the front of the block at `off` so that its payload is aligned to `align`
/// (absolute address). 0 or >= kMinBlock, so the skipped part can become a free block of its own.
GPUOS_HD inline uint64_t align_gap(uint64_t base, uint64_t off, uint64_t align) {
  if (align <= kAlign) return 0;
  const uint64_t p = base + off + kHeader;
  uint64_t gap = round_up(p, align) - p;
  if (gap != 0 && gap < kMinBlock) gap += align;
  return gap;
}

/// Fallback when the good-fit search found nothing: first fit over at most kFitScan blocks of the
/// classes between the request's own class and the rounded-up one (all higher classes are empty).
/// Makes requests as large as the arena, and aligned requests near it, succeed; O(1) still.
GPUOS_HD inline uint64_t scan_fit(char* base, const Arena& a, uint64_t need, uint64_t align) {
  const Class k = mapping(need);
  uint32_t budget = kFitScan;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t fl = k.fl; fl < kFLCount && budget != 0; ++fl) {
    if (!(a.fl_bitmap & (1ull << fl))) continue;
    uint32_t sl_map = a.sl_bitmap[fl] & (fl == k.fl ? (~0u << k.sl) : ~0u);
    while (sl_map != 0 && budget != 0) {
      const uint32_t sl = ffs32(sl_map);
      sl_map &= sl_map - 1;
      for (uint64_t off = a.heads[fl][sl]; off != kNil && budget != 0; off = links(base, off)->next) {
        --budget;
        const uint64_t size = size_of(hdr(base, off)->w0);
        if (size >= need + align_gap(reinterpret_cast<uint64_t>(base), off, align)) return off;
      }
    }
  }
  return kNil;
}

/// Block size that serves `bytes` of payload.
GPUOS_HD constexpr uint64_t block_size_for(uint64_t bytes) {
  const uint64_t s = round_up(bytes + kHeader, kAlign);
  return s < kMinBlock ? kMinBlock : s;
}
/// Size the good-fit search must find for a block of `need` bytes at alignment `align`: the worst-case
/// front gap is align + 16 (a 16-byte gap is too small to become a free block and moves a full step).
GPUOS_HD constexpr uint64_t search_size_for(uint64_t need, uint64_t align) {
  return align <= kAlign ? need : need + align + kHeader;
}

/// Allocates a block of `need` bytes from arena `a` (lock held). Returns the block's offset or kNil.
GPUOS_HD GPUOS_TLSF_COLD inline uint64_t alloc_locked(char* base, Arena& a, uint64_t need, uint64_t align) {
  const uint64_t search = search_size_for(need, align);
  uint64_t off = search <= a.end - a.begin ? find_suitable(a, mapping_search(search)) : kNil;
  if (off == kNil) {
    off = scan_fit(base, a, need, align);
    if (off == kNil) return kNil;
  }
  Hdr* h = hdr(base, off);
  uint64_t size = size_of(h->w0);
  list_remove(base, a, off, size);
  a.free_blocks -= 1;
  a.free_bytes -= size;

  // A free block's physical neighbours are used (no two free blocks are adjacent), so the front gap and
  // the tail become free blocks without coalescing.
  uint64_t prev = h->prev;
  uint64_t prev_free = 0;
  const uint64_t gap = align_gap(reinterpret_cast<uint64_t>(base), off, align);
  if (gap != 0) {
    h->w0 = make_w0(off, gap, kFreeBit);
    list_insert(base, a, off, gap);
    a.free_blocks += 1;
    a.free_bytes += gap;
    prev = off;
    prev_free = kPrevFreeBit;
    off += gap;
    size -= gap;
    h = hdr(base, off);
  }
  const uint64_t next = off + (size - need >= kMinBlock ? need : size);
  if (size - need >= kMinBlock) {
    const uint64_t tail = size - need;
    Hdr* t = hdr(base, next);
    t->w0 = make_w0(next, tail, kFreeBit);
    t->prev = off;
    list_insert(base, a, next, tail);
    a.free_blocks += 1;
    a.free_bytes += tail;
    const uint64_t after = next + tail;
    if (after < a.end) hdr(base, after)->prev = next;  // prev-free bit already set: it followed a free block
    size = need;
  } else if (next < a.end) {
    Hdr* n = hdr(base, next);
    n->prev = off;
    n->w0 &= ~kPrevFreeBit;
  }
  h->w0 = make_w0(off, size, prev_free);
  h->prev = prev;
  a.used_blocks += 1;
  a.used_bytes += size;
  a.allocs += 1;
  return off;
}

/// Writes the header of a used block at `off` of `size` bytes whose physical predecessor is at `prev`
/// (kNil at the start of an arena) (lock held).
GPUOS_HD inline void write_piece(char* base, uint64_t off, uint64_t size, uint64_t prev) {
  Hdr* h = hdr(base, off);
  h->w0 = make_w0(off, size, 0);
  h->prev = prev;
}

/// Serves requests first, first + 1, ... of a batch from arena `a` (lock held; 16-byte alignment; block
/// sizes need(j), each a multiple of 16 and >= kMinBlock), in order, and returns the index of the first
/// request it could not serve (n when all were). This is the aggregated allocation behind alloc_n and
/// warp_alloc: request j gets a block by the ordinary TLSF search (its size rounded up to a class
/// boundary, one find-first-set per level), and the requests after it are carved out of the rest of the
/// same block for as long as they fit. The remainder becomes the free tail (or, if below kMinBlock, goes
/// to the last piece). Each piece is an ordinary used block with its own boundary tag, freed on its own.
/// So one search, one list removal and one split serve every request that fits the block: on a fresh
/// or lightly used arena a warp's 32 requests cost one of each; in a fragmented arena request j goes to
/// the best-fitting hole and only the requests that fit behind it share it, which keeps the good-fit
/// placement (and the fragmentation) of one-by-one allocation. out(j, off) receives each block's header
/// offset.
template <class Need, class Out>
GPUOS_HD inline uint32_t carve_locked(char* base, Arena& a, uint32_t first, uint32_t n, Need need, Out out) {
  uint32_t j = first;
  GPUOS_TLSF_NO_UNROLL
  while (j < n) {
    const uint64_t nj = need(j);
    if (nj > a.end - a.begin) break;
    uint64_t off = find_suitable(a, mapping_search(nj));
    if (off == kNil) {
      off = scan_fit(base, a, nj, kAlign);
      if (off == kNil) break;
    }
    Hdr* h = hdr(base, off);
    const uint64_t size = size_of(h->w0);
    const uint64_t prev0 = h->prev;  // the block before a free block is used: prev-free bit stays clear
    list_remove(base, a, off, size);
    a.free_blocks -= 1;
    a.free_bytes -= size;
    uint64_t total = nj, last = nj;
    uint32_t k = j + 1;
    GPUOS_TLSF_NO_UNROLL
    for (; k < n; ++k) {
      const uint64_t nk = need(k);
      if (nk > size - total) break;
      total += nk;
      last = nk;
    }
    const uint64_t last_off = off + total - last;
    uint64_t extra = 0;
    if (size - total >= kMinBlock) {
      const uint64_t next = off + total, tail = size - total;
      Hdr* t = hdr(base, next);
      t->w0 = make_w0(next, tail, kFreeBit);
      t->prev = last_off;
      list_insert(base, a, next, tail);
      a.free_blocks += 1;
      a.free_bytes += tail;
      if (next + tail < a.end) hdr(base, next + tail)->prev = next;  // prev-free bit already set
    } else {
      extra = size - total;
      if (off + size < a.end) {
        Hdr* nh = hdr(base, off + size);
        nh->prev = last_off;
        nh->w0 &= ~kPrevFreeBit;
      }
    }
    uint64_t po = off, prev = prev0;
    GPUOS_TLSF_NO_UNROLL
    for (uint32_t m = j; m < k; ++m) {
      const uint64_t nm = need(m);
      write_piece(base, po, nm + (m + 1 == k ? extra : 0), prev);
      out(m, po);
      prev = po;
      po += nm;
    }
    a.used_blocks += k - j;
    a.used_bytes += total + extra;
    a.allocs += k - j;
    j = k;
  }
  return j;
}

/// Validates that `off` is the header of a live block of arena `a` (lock held). Boundary tags of the
/// block and both neighbours must agree, so interior pointers, stale pointers and corrupted headers
/// are refused.
GPUOS_HD inline Status validate_used(char* base, const Arena& a, uint64_t off) {
  if (off + kMinBlock > a.end) return kForeign;
  const Hdr h = *hdr(base, off);
  if (h.w0 == kPoison) return kDoubleFree;
  const uint64_t size = size_of(h.w0);
  if (size < kMinBlock || size > a.end - off || !tag_ok(off, h.w0)) return kForeign;
  if (h.w0 & kFreeBit) return kDoubleFree;
  if (off == a.begin) {
    if (h.prev != kNil || (h.w0 & kPrevFreeBit)) return kForeign;
  } else {
    if (h.prev < a.begin || h.prev >= off || off - h.prev < kMinBlock || (h.prev & (kAlign - 1))) {
      return kForeign;
    }
    const uint64_t pw = hdr(base, h.prev)->w0;
    if (!tag_ok(h.prev, pw) || size_of(pw) != off - h.prev) return kForeign;
    if (((pw & kFreeBit) != 0) != ((h.w0 & kPrevFreeBit) != 0)) return kForeign;
  }
  const uint64_t next = off + size;
  if (next < a.end) {
    if (next + kMinBlock > a.end) return kForeign;
    const Hdr n = *hdr(base, next);
    if (n.prev != off || !tag_ok(next, n.w0) || (n.w0 & kPrevFreeBit)) return kForeign;
  }
  return kOk;
}

/// The checks a free makes before it changes anything (lock held): in checked mode every boundary tag
/// involved (validate_used); unchecked, the cheap ones that catch the common double free and garbage.
GPUOS_HD inline Status check_free(char* base, const Arena& a, uint64_t off, bool checked) {
  if (checked) return validate_used(base, a, off);
  if (off + kMinBlock > a.end) return kForeign;
  const uint64_t w0 = hdr(base, off)->w0;
  if (w0 == kPoison || (w0 & kFreeBit)) return kDoubleFree;
  const uint64_t s = size_of(w0);
  if (s < kMinBlock || s > a.end - off) return kForeign;
  return kOk;
}

/// Turns the range [off, off + size) -- one used block, or a run of adjacent used blocks whose headers
/// after the first are already poisoned -- into free space (lock held; the used counters are the
/// caller's): coalesces at once with a free previous and a free next block and lists the result.
GPUOS_HD GPUOS_TLSF_COLD inline void release_locked(char* base, Arena& a, uint64_t off, uint64_t size) {
  Hdr* h = hdr(base, off);
  uint64_t prev = h->prev;
  if (h->w0 & kPrevFreeBit) {  // merge into the previous block
    Hdr* p = hdr(base, prev);
    const uint64_t psize = size_of(p->w0);
    list_remove(base, a, prev, psize);
    a.free_blocks -= 1;
    a.free_bytes -= psize;
    h->w0 = kPoison;
    off = prev;
    size += psize;
    h = p;
    prev = p->prev;
  }
  uint64_t next = off + size;
  if (next < a.end) {
    Hdr* n = hdr(base, next);
    if (n->w0 & kFreeBit) {  // absorb the next block
      const uint64_t nsize = size_of(n->w0);
      list_remove(base, a, next, nsize);
      a.free_blocks -= 1;
      a.free_bytes -= nsize;
      n->w0 = kPoison;
      size += nsize;
      next = off + size;
    }
  }
  // The block before a free block is always used, so the prev-free bit of the merged block is clear.
  h->w0 = make_w0(off, size, kFreeBit);
  h->prev = prev;
  list_insert(base, a, off, size);
  a.free_blocks += 1;
  a.free_bytes += size;
  if (next < a.end) {
    Hdr* n = hdr(base, next);
    n->prev = off;
    n->w0 |= kPrevFreeBit;
  }
}

/// Frees the block whose header is at `off` into arena `a` (lock held), coalescing immediately.
GPUOS_HD inline Status free_locked(char* base, Arena& a, uint64_t off, bool checked) {
  const Status s = check_free(base, a, off, checked);
  if (s != kOk) return s;
  const uint64_t size = size_of(hdr(base, off)->w0);
  a.used_blocks -= 1;
  a.used_bytes -= size;
  a.frees += 1;
  release_locked(base, a, off, size);
  return kOk;
}

/// Frees a run of `count` adjacent used blocks [off, off + bytes) that were all validated (lock held):
/// the headers after the first are poisoned (a stale pointer to them reads as a double free), then the
/// run is released as one range, so k adjacent frees cost one coalescing step.
GPUOS_HD inline void free_run_locked(char* base, Arena& a, uint64_t off, uint64_t bytes, uint64_t count) {
  a.used_blocks -= count;
  a.used_bytes -= bytes;
  a.frees += count;
  GPUOS_TLSF_NO_UNROLL
  for (uint64_t o = off + size_of(hdr(base, off)->w0); o < off + bytes;) {
    const uint64_t next = o + size_of(hdr(base, o)->w0);
    hdr(base, o)->w0 = kPoison;
    o = next;
  }
  release_locked(base, a, off, bytes);
}

/// Lock-free hint for fallback searches: could this arena have a block for the request? May be stale
/// either way; the locked search decides.
GPUOS_HD inline bool may_serve(const Arena& a, uint64_t need) {
  if (need > a.end - a.begin) return false;
  const Class k = mapping(need);
  const uint64_t fl_map = load_relaxed(a.fl_bitmap);
  if (k.fl + 1 < 64 && (fl_map >> (k.fl + 1)) != 0) return true;
  if (!(fl_map & (1ull << k.fl))) return false;
  return (load_relaxed(a.sl_bitmap[k.fl]) & (~0u << k.sl)) != 0;
}

/// Arena that owns offset `off` (off < pool_bytes).
GPUOS_HD inline uint32_t arena_of(const Control* c, uint64_t off) {
  if (c->has_large && off >= c->large_begin) return c->small_arenas;
  const uint64_t i = off / c->stride;
  return i < c->small_arenas ? static_cast<uint32_t>(i) : c->small_arenas - 1;
}

/// Maps a payload pointer to (arena, header offset); kForeign when it cannot be a block of this heap.
GPUOS_HD inline Status locate(const Control* c, const void* p, uint32_t& arena, uint64_t& off) {
  const uint64_t addr = reinterpret_cast<uint64_t>(p);
  if (addr < c->base + kHeader || addr - c->base >= c->pool_bytes) return kForeign;
  const uint64_t payload = addr - c->base;
  if (payload & (kAlign - 1)) return kForeign;
  off = payload - kHeader;
  arena = arena_of(c, off);
  return kOk;
}

GPUOS_HD inline void init_arena_at(char* base, Arena& a, uint32_t index, uint64_t begin, uint64_t end) {
  a.lock = 0;
  a.index = index;
  a.begin = begin;
  a.end = end;
  a.fl_bitmap = 0;
  a.used_bytes = a.used_blocks = a.allocs = a.frees = 0;
  a.free_bytes = a.free_blocks = 0;
  for (uint64_t& w : a.pad) w = 0;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t i = 0; i < kFLCount; ++i) {
    a.sl_bitmap[i] = 0;
    GPUOS_TLSF_NO_UNROLL
    for (uint32_t j = 0; j < kSLCount; ++j) a.heads[i][j] = kNil;
  }
  Hdr* h = hdr(base, begin);
  h->w0 = make_w0(begin, end - begin, kFreeBit);
  h->prev = kNil;
  list_insert(base, a, begin, end - begin);
  a.free_blocks = 1;
  a.free_bytes = end - begin;
}

// ---- check() message building (no snprintf on the device; out of line: inlined, every call site
// would unroll its string literal) ----
struct Writer {
  CheckResult& r;
  uint32_t n = 0;
  __attribute__((noinline)) GPUOS_HD void put(const char* s) {
    while (*s && n + 1 < sizeof(r.message)) r.message[n++] = *s++;
    r.message[n] = 0;
  }
  __attribute__((noinline)) GPUOS_HD void num(uint64_t v) {
    char buf[24];
    int i = 0;
    do {
      buf[i++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (i > 0 && n + 1 < sizeof(r.message)) r.message[n++] = buf[--i];
    r.message[n] = 0;
  }
};
__attribute__((noinline)) GPUOS_HD inline bool fail(CheckResult& r, uint32_t arena, uint64_t off, const char* what, uint64_t a = kNil,
                          uint64_t b = kNil) {
  r.ok = false;
  r.arena = arena;
  r.offset = off;
  Writer w{r};
  w.put("arena ");
  w.num(arena);
  w.put(" offset ");
  w.num(off);
  w.put(": ");
  w.put(what);
  if (a != kNil) {
    w.put(" (");
    w.num(a);
    if (b != kNil) {
      w.put(" vs ");
      w.num(b);
    }
    w.put(")");
  }
  return false;
}

/// Checks one arena (lock held). Returns false and fills `r` at the first violation.
GPUOS_HD GPUOS_TLSF_COLD inline bool check_arena(char* base, const Arena& a, uint32_t index, CheckResult& r) {
  if (a.index != index) return fail(r, index, a.begin, "arena index mismatch", a.index, index);
  if (a.end <= a.begin || a.end - a.begin < kMinBlock || (a.begin & (kAlign - 1)) || (a.end & (kAlign - 1))) {
    return fail(r, index, a.begin, "bad arena bounds", a.begin, a.end);
  }
  // Physical walk: boundary tags, prev-physical links, no adjacent free blocks, sizes sum to the arena.
  uint64_t used_bytes = 0, free_bytes = 0, used_blocks = 0, free_blocks = 0;
  uint64_t free_sum = 0, free_mix = 0;
  uint64_t prev = kNil;
  bool prev_free = false;
  uint64_t off = a.begin;
  GPUOS_TLSF_NO_UNROLL
  while (off < a.end) {
    if (a.end - off < kMinBlock) return fail(r, index, off, "block overruns the arena end");
    const Hdr h = *hdr(base, off);
    const uint64_t size = size_of(h.w0);
    if (size < kMinBlock) return fail(r, index, off, "block smaller than the minimum", size);
    if (size > a.end - off) return fail(r, index, off, "block overruns the arena end", size);
    if (!tag_ok(off, h.w0)) return fail(r, index, off, "header tag mismatch");
    if (h.prev != prev) return fail(r, index, off, "prev-physical link wrong", h.prev, prev);
    if (((h.w0 & kPrevFreeBit) != 0) != prev_free) return fail(r, index, off, "prev-free bit wrong");
    const bool is_free = (h.w0 & kFreeBit) != 0;
    if (is_free && prev_free) return fail(r, index, off, "two adjacent free blocks");
    if (is_free) {
      free_bytes += size;
      ++free_blocks;
      free_sum += off;
      free_mix += mix64(off);
    } else {
      used_bytes += size;
      ++used_blocks;
    }
    prev = off;
    prev_free = is_free;
    off += size;
  }
  if (off != a.end) return fail(r, index, off, "blocks do not end at the arena end", off, a.end);
  if (used_bytes + free_bytes != a.end - a.begin) return fail(r, index, a.begin, "sizes do not sum to the arena");
  if (used_bytes != a.used_bytes) return fail(r, index, a.begin, "used bytes counter wrong", a.used_bytes, used_bytes);
  if (free_bytes != a.free_bytes) return fail(r, index, a.begin, "free bytes counter wrong", a.free_bytes, free_bytes);
  if (used_blocks != a.used_blocks) {
    return fail(r, index, a.begin, "used blocks counter wrong", a.used_blocks, used_blocks);
  }
  if (free_blocks != a.free_blocks) {
    return fail(r, index, a.begin, "free blocks counter wrong", a.free_blocks, free_blocks);
  }
  // Free lists: bitmaps match non-empty lists; each entry is a free block of its class with consistent
  // links; together they hold exactly the free blocks of the walk (count and two checksums over offsets;
  // a list can hold no duplicate since the links are doubly consistent and the walk is bounded).
  uint64_t listed = 0, list_sum = 0, list_mix = 0;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t fl = 0; fl < kFLCount; ++fl) {
    const bool fl_bit = (a.fl_bitmap >> fl) & 1;
    if (fl_bit != (a.sl_bitmap[fl] != 0)) return fail(r, index, a.begin, "first-level bitmap wrong", fl);
    GPUOS_TLSF_NO_UNROLL
    for (uint32_t sl = 0; sl < kSLCount; ++sl) {
      const bool sl_bit = (a.sl_bitmap[fl] >> sl) & 1;
      const uint64_t head = a.heads[fl][sl];
      if (sl_bit != (head != kNil)) return fail(r, index, a.begin, "second-level bitmap wrong", fl, sl);
      uint64_t back = kNil;
      GPUOS_TLSF_NO_UNROLL
      for (uint64_t e = head; e != kNil; e = links(base, e)->next) {
        if (++listed > free_blocks) return fail(r, index, e, "free lists hold more entries than free blocks");
        if (e < a.begin || e >= a.end || (e & (kAlign - 1)) || a.end - e < kMinBlock) {
          return fail(r, index, e, "free-list entry outside the arena", fl, sl);
        }
        const uint64_t w0 = hdr(base, e)->w0;
        if (!tag_ok(e, w0) || size_of(w0) < kMinBlock) return fail(r, index, e, "free-list entry is not a block");
        if (!(w0 & kFreeBit)) return fail(r, index, e, "free-list entry is not free");
        const Class k = mapping(size_of(w0));
        if (k.fl != fl || k.sl != sl) return fail(r, index, e, "free block in the wrong list", fl, sl);
        if (links(base, e)->prev != back) return fail(r, index, e, "free-list back link wrong");
        list_sum += e;
        list_mix += mix64(e);
        back = e;
      }
    }
  }
  if (a.fl_bitmap >> kFLCount) return fail(r, index, a.begin, "first-level bitmap has bits past the last list");
  if (listed != free_blocks || list_sum != free_sum || list_mix != free_mix) {
    return fail(r, index, a.begin, "free lists do not hold exactly the free blocks", listed, free_blocks);
  }
  return true;
}

/// Largest free block of an arena (lock held): the top non-empty class holds it; walk that one list.
GPUOS_HD GPUOS_TLSF_COLD inline uint64_t largest_free_locked(char* base, const Arena& a) {
  if (a.fl_bitmap == 0) return 0;
  const uint32_t fl = fls64(a.fl_bitmap);
  const uint32_t sl = 31u - static_cast<uint32_t>(cuda::std::countl_zero(a.sl_bitmap[fl]));
  uint64_t best = 0;
  GPUOS_TLSF_NO_UNROLL
  for (uint64_t e = a.heads[fl][sl]; e != kNil; e = links(base, e)->next) {
    const uint64_t s = size_of(hdr(base, e)->w0);
    best = s > best ? s : best;
  }
  return best;
}

}  // namespace detail

// ---- public API -----------------------------------------------------------------------------------
/// Arena `i` of the control block (0 .. small arenas - 1, then the large arena if any).
GPUOS_HD inline Arena* arena(Control* c, uint32_t i) { return detail::arenas(c) + i; }
GPUOS_HD inline const Arena* arena(const Control* c, uint32_t i) { return detail::arenas(c) + i; }
GPUOS_HD inline uint32_t arena_count(const Control* c) { return detail::narenas(c); }

/// Lays out the heap: validates the arguments, writes the control header and each arena's range.
/// Touches no pool memory and no list heads; follow with init_arena(c, i) for every arena (e.g. one
/// block per arena on the device). `c` must provide control_bytes(arenas) bytes, 128-aligned.
/// `pool_base` must be 16-aligned; pool_bytes < 2^48. Small arenas are equal (multiples of 4 KiB, the
/// last one takes the remainder); the large arena, if any, is the end of the pool.
GPUOS_HD GPUOS_TLSF_COLD inline Status init_layout(Control* c, void* pool_base, uint64_t pool_bytes, uint32_t arenas,
                                   const Options& opt = Options{}) {
  using namespace detail;
  if (c == nullptr || pool_base == nullptr || (reinterpret_cast<uint64_t>(c) & 127)) return kInvalidArg;
  if (reinterpret_cast<uint64_t>(pool_base) & (kAlign - 1)) return kInvalidArg;
  if (arenas == 0 || arenas > kMaxArenas || pool_bytes >= kMaxPool) return kInvalidArg;
  const uint64_t usable = round_down(pool_bytes, kAlign);
  uint64_t large = round_down(opt.large_bytes, kArenaGranule);
  if (opt.large_bytes != 0 && (large < kMinArenaBytes || large >= usable)) return kInvalidArg;
  const uint64_t small_total = usable - large;
  const uint64_t stride = round_down(small_total / arenas, kArenaGranule);
  if (stride < kMinArenaBytes) return kInvalidArg;
  if ((opt.flags & ~static_cast<uint32_t>(kChecked)) != 0) return kInvalidArg;

  c->magic = 0;  // not usable until fully written
  c->version = kVersion;
  c->flags = opt.flags;
  c->base = reinterpret_cast<uint64_t>(pool_base);
  c->pool_bytes = usable;
  c->small_arenas = arenas;
  c->has_large = large != 0 ? 1u : 0u;
  c->stride = stride;
  c->large_begin = small_total;
  c->large_threshold = opt.large_threshold != 0 ? opt.large_threshold : stride / 4;
  const uint64_t last_small = small_total - stride * (arenas - 1);
  c->max_arena = large > last_small ? large : last_small;
  for (uint64_t& w : c->pad0) w = 0;
  c->failed_allocs = c->bad_align = c->too_large = c->bad_free = c->double_free = 0;
  for (uint64_t& w : c->pad1) w = 0;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t i = 0; i < arenas + c->has_large; ++i) {
    Arena& a = detail::arenas(c)[i];
    a.index = i;
    a.begin = i < arenas ? stride * i : small_total;
    a.end = i + 1 < arenas ? stride * (i + 1) : (i + 1 == arenas ? small_total : usable);
  }
  c->magic = kMagic;
  return kOk;
}

/// Initialises arena `i` after init_layout: empty lists and one free block over its range.
GPUOS_HD GPUOS_TLSF_COLD inline void init_arena(Control* c, uint32_t i) {
  Arena& a = detail::arenas(c)[i];
  detail::init_arena_at(detail::base_of(c), a, i, a.begin, a.end);
}

/// Initialises a heap over [pool_base, pool_base + pool_bytes) split into `arenas` small arenas (plus
/// the optional large arena of opt.large_bytes). Writes the control block and one header per arena;
/// the rest of the pool is never touched.
GPUOS_HD GPUOS_TLSF_COLD inline Status init(Control* c, void* pool_base, uint64_t pool_bytes, uint32_t arenas,
                            const Options& opt = Options{}) {
  const Status s = init_layout(c, pool_base, pool_bytes, arenas, opt);
  if (s != kOk) return s;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t i = 0; i < arena_count(c); ++i) init_arena(c, i);
  return kOk;
}

/// Points the heap at a new mapping of the same pool (all metadata is offsets). Quiescent heap only;
/// alignments above 16 hold only if the new base has the same residue modulo them.
GPUOS_HD inline void rebase(Control* c, void* pool_base) { c->base = reinterpret_cast<uint64_t>(pool_base); }

/// Turns checked mode on or off (takes effect for later frees; safe at any time).
GPUOS_HD inline void set_checked(Control* c, bool on) {
  detail::aref<uint32_t> f(c->flags);
  if (on) {
    f.fetch_or(static_cast<uint32_t>(kChecked), cuda::memory_order_relaxed);
  } else {
    f.fetch_and(~static_cast<uint32_t>(kChecked), cuda::memory_order_relaxed);
  }
}

/// Allocates `n` blocks of `bytes` bytes each, aligned to `align`, into out[0..n). Returns how many were
/// served (the rest of out[] is null). Takes each arena's lock once for the whole batch: this is the
/// primitive behind warp aggregation (a leader allocates for its lanes; see warp_alloc and the docs).
///
/// Policy: `align` must be a power of two (1..2^47; <= 16 means the default 16); anything else fails
/// every slot and counts bad_align. bytes == 0 is served as a minimum block: a unique pointer that must
/// be freed (so null always means failure). The home arena is hint % small arenas; requests whose block
/// needs >= large_threshold start at the large arena. On failure the other arenas are tried in order
/// (skipping, lock-free, those whose bitmaps show nothing big enough). Null is returned, never a wait,
/// when nothing fits; a request bigger than every arena fails at once with too_large counted.
GPUOS_HD inline uint32_t alloc_n(Control* c, uint64_t bytes, uint64_t align, uint32_t hint, uint32_t n,
                                 void** out) {
  using namespace detail;
  for (uint32_t i = 0; i < n; ++i) out[i] = nullptr;
  if (n == 0) return 0;
  if (!initialised(c)) return 0;
  if (!is_pow2(align)) {
    count(c->bad_align);
    count(c->failed_allocs, n);
    return 0;
  }
  if (bytes > kMaxRequest || align > kMaxPool / 2) {
    count(c->too_large);
    count(c->failed_allocs, n);
    return 0;
  }
  const uint64_t need = block_size_for(bytes);
  if (need > c->max_arena) {
    count(c->too_large);
    count(c->failed_allocs, n);
    return 0;
  }
  char* base = base_of(c);
  const uint32_t small = c->small_arenas;
  const uint32_t total = small + c->has_large;
  const bool large_first = c->has_large && need >= c->large_threshold;
  const uint32_t home = hint % small;
  uint32_t got = 0;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t k = 0; k < total && got < n; ++k) {
    // Visiting order: [large,] home, home+1, ..., home-1[, large].
    uint32_t i;
    if (large_first) {
      i = k == 0 ? small : (home + k - 1) % small;
    } else {
      i = k < small ? (home + k) % small : small;
    }
    Arena& a = detail::arenas(c)[i];
    if (k != 0 && !may_serve(a, need)) continue;
    if (need > a.end - a.begin) continue;
    lock(a);
    while (got < n) {
      if (align <= kAlign) {  // one search and one split for as many blocks as the found block holds
        got = carve_locked(base, a, got, n, [need](uint32_t) { return need; },
                           [&](uint32_t j, uint64_t off) { out[j] = base + off + kHeader; });
        break;
      }
      const uint64_t off = alloc_locked(base, a, need, align);
      if (off == kNil) break;
      out[got++] = base + off + kHeader;
    }
    unlock(a);
  }
  if (got < n) count(c->failed_allocs, n - got);
  return got;
}

/// Allocates one block; null on failure (see alloc_n for the policy).
GPUOS_HD GPUOS_TLSF_COLD inline void* alloc(Control* c, uint64_t bytes, uint64_t align, uint32_t hint) {
  void* p = nullptr;
  alloc_n(c, bytes, align, hint, 1, &p);
  return p;
}

/// Frees a block. free(null) is a no-op returning kOk. Always refused (nothing changes, the counter
/// bad_free or double_free goes up): pointers outside the pool, misaligned, before the first payload,
/// blocks whose header says free. In checked mode (kChecked) the block's tag and both neighbours'
/// boundary tags must also agree, which refuses interior pointers, stale pointers to blocks since
/// merged or reused, and corrupted headers. Unchecked, such a pointer is undefined behaviour.
GPUOS_HD GPUOS_TLSF_COLD inline Status free(Control* c, void* p) {
  using namespace detail;
  if (p == nullptr) return kOk;
  if (!initialised(c)) return kNotInit;
  uint32_t ai = 0;
  uint64_t off = 0;
  Status s = locate(c, p, ai, off);
  if (s == kOk) {
    const bool checked = (load_relaxed(c->flags) & kChecked) != 0;
    Arena& a = detail::arenas(c)[ai];
    lock(a);
    s = free_locked(base_of(c), a, off, checked);
    unlock(a);
  }
  if (s == kForeign) count(c->bad_free);
  if (s == kDoubleFree) count(c->double_free);
  return s;
}

/// Frees n blocks, taking each arena's lock once per run of consecutive pointers into that arena (the
/// warp-aggregated free). Pointers to physically adjacent blocks that follow each other in ptrs[] (what
/// a carved allocation hands out) are validated one by one and then released as one range: one
/// coalescing step for the run. status[i] (optional) receives each result. Returns the number freed.
GPUOS_HD inline uint32_t free_n(Control* c, void* const* ptrs, uint32_t n, Status* status = nullptr) {
  using namespace detail;
  if (!initialised(c)) {
    for (uint32_t i = 0; status && i < n; ++i) status[i] = kNotInit;
    return 0;
  }
  const bool checked = (load_relaxed(c->flags) & kChecked) != 0;
  char* base = base_of(c);
  Arena* held = nullptr;
  uint32_t freed = 0;
  // The pending run: blocks [run_off, run_end) of arena `held`, all validated, none changed yet. It is
  // released before any pointer that does not extend it is looked at, so a duplicate of a run member
  // sees it free (a double free), never a block about to be freed twice.
  uint64_t run_off = kNil, run_end = 0, run_count = 0;
  auto flush = [&]() {
    if (run_count != 0) free_run_locked(base, *held, run_off, run_end - run_off, run_count);
    run_count = 0;
    run_off = kNil;
  };
  for (uint32_t i = 0; i < n; ++i) {
    Status s = kOk;
    if (ptrs[i] != nullptr) {
      uint32_t ai = 0;
      uint64_t off = 0;
      s = locate(c, ptrs[i], ai, off);
      if (s == kOk) {
        Arena* a = detail::arenas(c) + ai;
        if (a != held || off != run_end) flush();
        if (a != held) {
          if (held) unlock(*held);
          lock(*a);
          held = a;
        }
        s = check_free(base, *a, off, checked);
        if (s == kOk) {
          if (run_count == 0) run_off = off;
          run_end = off + size_of(hdr(base, off)->w0);
          run_count += 1;
          freed += 1;
        }
      }
      if (s == kForeign) count(c->bad_free);
      if (s == kDoubleFree) count(c->double_free);
    }
    if (status) status[i] = s;
  }
  flush();
  if (held) unlock(*held);
  return freed;
}

/// Payload bytes of a live block (>= the size asked for). The pointer must come from alloc.
GPUOS_HD inline uint64_t usable_size(const Control* c, const void* p) {
  const uint64_t off = reinterpret_cast<uint64_t>(p) - c->base - kHeader;
  return detail::size_of(detail::hdr(detail::base_of(c), off)->w0) - kHeader;
}

/// Heap statistics; locks each arena in turn.
GPUOS_HD GPUOS_TLSF_COLD inline Stats stats(Control* c) {
  using namespace detail;
  Stats s{};
  if (!initialised(c)) return s;
  s.pool_bytes = c->pool_bytes;
  uint64_t largest_sum = 0;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t i = 0; i < arena_count(c); ++i) {
    Arena& a = detail::arenas(c)[i];
    lock(a);
    const uint64_t largest = largest_free_locked(base_of(c), a);
    s.used_bytes += a.used_bytes;
    s.free_bytes += a.free_bytes;
    s.used_blocks += a.used_blocks;
    s.free_blocks += a.free_blocks;
    s.allocs += a.allocs;
    s.frees += a.frees;
    unlock(a);
    largest_sum += largest;
    s.largest_free = largest > s.largest_free ? largest : s.largest_free;
  }
  s.failed_allocs = load_relaxed(c->failed_allocs);
  s.bad_align = load_relaxed(c->bad_align);
  s.too_large = load_relaxed(c->too_large);
  s.bad_free = load_relaxed(c->bad_free);
  s.double_free = load_relaxed(c->double_free);
  s.fragmentation = s.free_bytes ? 1.0 - static_cast<double>(largest_sum) / static_cast<double>(s.free_bytes) : 0.0;
  s.arenas = arena_count(c);
  s.checked = (c->flags & kChecked) ? 1u : 0u;
  return s;
}

/// Invariant checker for arena i alone (locks it): its range continues the previous arena's (arena 0
/// starts at 0, the last one ends at pool_bytes), the free-path lookup maps it to itself, and the walk
/// of check_arena holds. Arenas can be checked in parallel (the device checker gives each its thread).
GPUOS_HD GPUOS_TLSF_COLD inline CheckResult check_one(Control* c, uint32_t i) {
  using namespace detail;
  CheckResult r{};
  r.ok = true;
  r.message[0] = 0;
  if (!initialised(c)) {
    fail(r, 0, 0, "control block not initialised");
    return r;
  }
  if (c->small_arenas == 0 || c->small_arenas > kMaxArenas || c->has_large > 1) {
    fail(r, 0, 0, "bad arena count", c->small_arenas, c->has_large);
    return r;
  }
  if (i >= arena_count(c)) {
    fail(r, i, 0, "no such arena", i, arena_count(c));
    return r;
  }
  Arena& a = detail::arenas(c)[i];
  const uint64_t expect_begin = i == 0 ? 0 : detail::arenas(c)[i - 1].end;
  if (a.begin != expect_begin) {
    fail(r, i, a.begin, "arenas do not tile the pool", a.begin, expect_begin);
    return r;
  }
  if (i + 1 == arena_count(c) && a.end != c->pool_bytes) {
    fail(r, i, a.end, "arenas do not cover the pool", c->pool_bytes);
    return r;
  }
  if (a.end <= a.begin || a.end > c->pool_bytes) {
    fail(r, i, a.begin, "bad arena bounds", a.begin, a.end);
    return r;
  }
  if (arena_of(c, a.begin) != i || arena_of(c, a.end - kAlign) != i) {
    fail(r, i, a.begin, "arena lookup does not map the arena to itself");
    return r;
  }
  lock(a);
  check_arena(base_of(c), a, i, r);
  unlock(a);
  return r;
}

/// Invariant checker: walks every block of every arena (locking each in turn) and verifies the control
/// header, that the arenas tile [0, pool_bytes), boundary tags, prev-physical links and prev-free bits,
/// that no two free blocks are adjacent, that block sizes sum to each arena, that the free lists hold
/// exactly the free blocks in the right classes with consistent links, that bitmaps match non-empty
/// lists, and that the arena counters match the walk. O(blocks); for tests and debugging.
GPUOS_HD GPUOS_TLSF_COLD inline CheckResult check(Control* c) {
  CheckResult r{};
  r.ok = true;
  r.message[0] = 0;
  const uint32_t n = detail::initialised(c) ? arena_count(c) : 1;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t i = 0; i < n; ++i) {
    r = check_one(c, i);
    if (!r.ok) return r;
  }
  return r;
}

namespace detail {
/// Arena visiting order of a request (alloc_n's): [large,] home, home + 1, ..., home - 1[, large].
GPUOS_HD inline uint32_t visit(uint32_t k, uint32_t home, uint32_t small, bool large_first) {
  if (large_first) return k == 0 ? small : (home + k - 1) % small;
  return k < small ? (home + k) % small : small;
}

/// Serves requests order[first .. last) of a group (block sizes needs[], by index) arena by arena in
/// alloc_n's order, one lock acquisition per arena visited, carve_locked in each; offs[] receives each
/// served request's header offset. The requests are in ascending size, so the first one no arena can
/// serve leaves the rest (as large or larger) unserved too. Returns the index in `order` it stopped at.
GPUOS_HD inline uint32_t serve_sorted(Control* c, const uint64_t* needs, const uint8_t* order, uint32_t first,
                                      uint32_t last, bool large_first, uint32_t hint, uint64_t* offs) {
  char* base = base_of(c);
  const uint32_t small = c->small_arenas, narenas = small + c->has_large;
  const uint32_t home = hint % small;
  uint32_t got = first;
  GPUOS_TLSF_NO_UNROLL
  for (uint32_t v = 0; v < narenas && got < last; ++v) {
    Arena& a = arenas(c)[visit(v, home, small, large_first)];
    if (v != 0 && !may_serve(a, needs[order[got]])) continue;
    lock(a);
    got = carve_locked(base, a, got, last, [needs, order](uint32_t j) { return needs[order[j]]; },
                       [offs, order](uint32_t j, uint64_t off) { offs[order[j]] = off; });
    unlock(a);
  }
  return got;
}

/// Leader side of warp_alloc: serves a group's requests (block sizes needs[0..n), n <= 32, 16-byte
/// alignment); offs[r] receives the header offset of request r, or kNil. The requests below the large
/// arena's threshold are served from the small arenas first, the others from the large arena first
/// (as alloc serves each), each part in ascending size: one large request that cannot be served fails
/// alone, not with every request behind it. Returns how many were served.
GPUOS_HD inline uint32_t serve_group(Control* c, const uint64_t* needs, uint32_t n, uint32_t hint, uint64_t* offs) {
  // The order: small requests, then large ones, each ascending (insertion sort: a warp's requests are
  // most often alike, and then this is one pass).
  uint8_t order[32];
  uint32_t nsmall = 0;
  for (uint32_t r = 0; r < n; ++r) {
    offs[r] = kNil;
    nsmall += !(c->has_large && needs[r] >= c->large_threshold);
  }
  uint32_t is = 0, il = nsmall;
  for (uint32_t r = 0; r < n; ++r) {
    const bool large = c->has_large && needs[r] >= c->large_threshold;
    uint32_t i = large ? il++ : is++;
    const uint32_t lo = large ? nsmall : 0u;
    while (i > lo && needs[order[i - 1]] > needs[r]) {
      order[i] = order[i - 1];
      --i;
    }
    order[i] = static_cast<uint8_t>(r);
  }
  const uint32_t s_end = serve_sorted(c, needs, order, 0, nsmall, false, hint, offs);
  const uint32_t l_end = serve_sorted(c, needs, order, nsmall, n, true, hint, offs);
  const uint32_t got = s_end + (l_end - nsmall);
  if (got < n) count(c->failed_allocs, n - got);
  return got;
}
}  // namespace detail

// ---- hints ----------------------------------------------------------------------------------------
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
/// Home-arena hint on the device: the SM the caller runs on (blocks of one SM share an arena and its
/// L2 lines; SMs do not contend with each other).
__device__ inline uint32_t sm_hint() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

/// Home-arena hint of a warp: 16 per SM (SM id x 16 + the low four bits of the warp's slot on the SM),
/// so with up to 16 arenas per SM an SM's warps spread over arenas of their own, and with fewer,
/// hint % arenas still spreads every SM's warps evenly over the arenas.
__device__ inline uint32_t warp_hint() {
  uint32_t w;
  asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
  return sm_hint() * 16u + (w & 15u);
}


/// Warp-aggregated allocation: every active lane calls it with its own request. The lanes asking for
/// 16-byte alignment (any sizes) form one group; a leader gathers their sizes and serves them all under
/// one lock acquisition per arena visited (serve_group / carve_locked: each search serves every request
/// that fits the block found, so a warp's requests usually cost one search and one split), writing the
/// blocks' headers itself, then hands each lane its pointer. Lanes asking for larger alignments are
/// served per (bytes, align) group by alloc_n. Each lane gets its own ordinary block, which it may free
/// on its own, from any thread. Null when the heap cannot serve the request (never a wait).
///
/// Lanes of one warp may call it at different times (independent thread scheduling: lanes that took
/// another branch, e.g. after a null, call it from a later loop iteration while the others are still in
/// warp_free), and lanes that called it apart may run its later instructions together. So
/// __activemask() is the mask of the first collective only: a collective with it may report lanes that
/// are outside it (a ballot's bit is set for every *active* lane, and gpuos_dev_malloc as compiled into
/// the run-time images treats the __activemask() value as warp-uniform: R2UR of one lane's mask, a
/// BRA.DIV that checks only that mask's lanes are converged, then an unmasked VOTE / SHFL over whatever
/// lanes are active). Every later collective uses the mask the first one returned (a __match_any_sync
/// result: the same value in every lane it names, and one the compiler treats as divergent, so it checks
/// it fully: match on the mask, the active set, the union). The leader, the count and each lane's rank
/// come from that mask. warp_free follows the same rule.
__device__ inline void* warp_alloc(Control* c, uint64_t bytes, uint64_t align, uint32_t hint) {
  using namespace detail;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned below_me = (1u << lane) - 1u;
  const bool fast = initialised(c) && is_pow2(align) && align <= kAlign && bytes <= kMaxRequest &&
                    block_size_for(bytes) <= c->max_arena;
  // The lanes that run this together, split by `fast`: each lane gets the lanes of its own kind.
  const unsigned group = __match_any_sync(__activemask(), fast ? 1u : 0u);
  if (fast) {
    const int leader = __ffs(group) - 1;
    const bool is_leader = static_cast<int>(lane) == leader;
    const uint32_t n = __popc(group), rank = __popc(group & below_me);
    const uint64_t need = block_size_for(bytes);
    uint64_t needs[32], offs[32];
    uint32_t r = 0;
    for (unsigned m = group; m != 0; m &= m - 1) {
      const uint64_t v = __shfl_sync(group, need, __ffs(m) - 1);
      if (is_leader) needs[r++] = v;
    }
    if (is_leader) serve_group(c, needs, n, hint, offs);
    void* mine = nullptr;
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t off = __shfl_sync(group, is_leader ? offs[k] : 0ull, leader);
      if (k == rank && off != kNil) mine = base_of(c) + off + kHeader;
    }
    return mine;
  }
  // Alignment above 16, or a request that fails anyway: per (bytes, align) group, block by block.
  const unsigned peers = __match_any_sync(__match_any_sync(group, bytes), align);
  const int leader = __ffs(peers) - 1;
  const bool is_leader = static_cast<int>(lane) == leader;
  const unsigned rank = __popc(peers & below_me);
  const unsigned n = __popc(peers);
  void* got[32];
  if (is_leader) alloc_n(c, bytes, align, hint, n, got);
  void* mine = nullptr;
  for (unsigned i = 0; i < n; ++i) {
    const unsigned long long v =
        __shfl_sync(peers, is_leader ? reinterpret_cast<unsigned long long>(got[i]) : 0ull, leader);
    if (i == rank) mine = reinterpret_cast<void*>(v);
  }
  return mine;
}

/// Warp-aggregated free: lanes whose blocks live in the same arena form a group. The leader takes the
/// arena's lock once; the lanes validate their own blocks in parallel (checked mode: every boundary tag
/// involved; a pointer freed twice within the group is a double free); lanes whose block directly
/// follows the previous lane's valid block poison their header; the leader releases each run of adjacent
/// blocks as one range (free_run_locked's effect, one coalescing step per run). Returns this lane's
/// status; errors are counted as by free().
__device__ inline Status warp_free(Control* c, void* p) {
  using namespace detail;
  const unsigned active = __activemask();
  uint32_t ai = 0xffffffffu;
  uint64_t off = 0;
  if (p != nullptr && initialised(c) && locate(c, p, ai, off) != kOk) ai = 0xfffffffeu;
  const unsigned peers = __match_any_sync(active, ai);
  if (ai >= 0xfffffffeu) return free(c, p);  // null, foreign or no heap: no lock to share
  const int leader = __ffs(peers) - 1;
  const unsigned lane = threadIdx.x & 31u;
  const bool is_leader = static_cast<int>(lane) == leader;
  char* base = base_of(c);
  Arena& a = arenas(c)[ai];
  const bool checked = (load_relaxed(c->flags) & kChecked) != 0;
  const unsigned dup = __match_any_sync(peers, off);
  if (is_leader) lock(a);
  __syncwarp(peers);
  // Every validation reads the heap before any lane changes it.
  Status s = static_cast<int>(lane) != __ffs(dup) - 1 ? kDoubleFree : check_free(base, a, off, checked);
  const uint64_t size = s == kOk ? size_of(hdr(base, off)->w0) : 0;
  const unsigned ok = __ballot_sync(peers, s == kOk);
  // A valid block continues a run when the previous valid lane's block ends where it starts.
  const unsigned below = ok & ((1u << lane) - 1u);
  const int prev_lane = below ? 31 - __clz(below) : lane;
  const uint64_t prev_end = __shfl_sync(peers, off + size, prev_lane);
  const bool joins = s == kOk && below != 0 && prev_end == off;
  __syncwarp(peers);
  if (joins) hdr(base, off)->w0 = kPoison;
  const unsigned heads = __ballot_sync(peers, s == kOk && !joins);
  __syncwarp(peers);  // the poison writes before the leader's release and unlock
  // The leader releases the runs; all lanes walk the valid lanes together for the shuffles.
  uint64_t run_off = 0, run_bytes = 0, freed_bytes = 0;
  for (unsigned m = ok; m != 0; m &= m - 1) {
    const int src = __ffs(m) - 1;
    const uint64_t o = __shfl_sync(peers, off, src), z = __shfl_sync(peers, size, src);
    if (is_leader) {
      if ((heads >> src) & 1u) {
        if (run_bytes) release_locked(base, a, run_off, run_bytes);
        run_off = o;
        run_bytes = 0;
      }
      run_bytes += z;
      freed_bytes += z;
    }
  }
  if (is_leader) {
    if (run_bytes) release_locked(base, a, run_off, run_bytes);
    const unsigned k = __popc(ok);
    a.used_blocks -= k;
    a.used_bytes -= freed_bytes;
    a.frees += k;
    __threadfence();
    unlock(a);
  }
  __syncwarp(peers);
  if (s == kForeign) count(c->bad_free);
  if (s == kDoubleFree) count(c->double_free);
  return s;
}
#endif

#if !defined(__CUDA_ARCH__) && !defined(__CUDACC_RTC__)
/// Home-arena hint on the host: a hash of the calling thread (stable for the thread's lifetime).
inline uint32_t host_thread_hint() {
  static thread_local char anchor;
  return static_cast<uint32_t>(detail::mix64(reinterpret_cast<uint64_t>(&anchor)) >> 32);
}
#endif

}  // namespace gpuos::tlsf

#endif  // GPUOS_KERNEL_TLSF_HPP
