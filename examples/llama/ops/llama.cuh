// Shared by the Llama operators (examples/llama/ops/*.cu): the model's dimensions as the device sees
// them, the per-row state of a step, bf16 helpers and the tensor-core matrix-vector product that every
// projection uses.
//
// A step processes R <= 8 rows; a row is one token of one sequence (its KV-cache slot and position), so
// a launch may hold the decode tokens of up to 8 requests, or up to 8 consecutive prompt tokens of one
// (prefill), or a mix. Activations are bf16 row-major [R][width]; weights bf16 row-major [out][in], as
// torch.nn.Linear stores them. Where the reference model rounds to bf16 (every tensor op in bf16), the
// operators round at the same points, except in an RMSNorm followed by a projection (Input): there the
// row's scale multiplies the projection's fp32 sums instead of each element, and the norm's gains are
// multiplied into the projection's weights (the engine does that at load) or into the inputs.
#pragma once

#include "gpuos/op.cuh"

namespace llama {

using bf16 = unsigned short;  // raw bits: the operators need no CUDA header

inline constexpr unsigned kMaxRows = 8;    // rows of one step: the mma's n dimension
inline constexpr unsigned kHeadDim = 64;   // the operators are written for a head dimension of 64
inline constexpr unsigned kWarps = GPUOS_BLOCK_THREADS / 32;
__device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }

/// The model's dimensions and constants, in device memory (the host packs it: llama_engine.py, DIMS).
struct Dims {
  unsigned hidden, heads, kv_heads, inter, vocab, layers, max_pos, slots;
  float eps;
  unsigned pad;
  float inv_freq[kHeadDim / 2];  // rotary frequencies, scaling applied (the host computes them)
};
static_assert(sizeof(Dims) == 40 + 4 * kHeadDim / 2, "Dims layout");

/// One row of a step. The host writes these into mapped memory before a launch (`ctl`); the embedding
/// operator copies them to device memory (`rows`), where every later operator reads them.
struct Row {
  int tok;            ///< input token
  int pos;            ///< its position in the sequence
  int slot;           ///< KV-cache slot of the sequence; < 0: the row is unused
  float temp;         ///< sampling temperature; <= 0: greedy
  unsigned seed;      ///< sampling seed of the request
  unsigned pad[3];
};
static_assert(sizeof(Row) == 32, "Row layout");

// ---- bf16 -----------------------------------------------------------------------------------------
__device__ __forceinline__ float bf2f(bf16 h) { return __uint_as_float(static_cast<unsigned>(h) << 16); }
__device__ __forceinline__ float lo2f(unsigned p) { return __uint_as_float(p << 16); }
__device__ __forceinline__ float hi2f(unsigned p) { return __uint_as_float(p & 0xffff0000u); }
__device__ __forceinline__ bf16 f2bf(float f) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}
/// The bf16 pairs a * b, each product rounded once, as a bf16 multiply rounds: one fma with -0.
__device__ __forceinline__ unsigned mul_bf16x2(unsigned a, unsigned b) {
  unsigned r;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(0x80008000u));
  return r;
}
/// f rounded to bf16, as a float: what a bf16 tensor op stores.
__device__ __forceinline__ float rbf(float f) { return bf2f(f2bf(f)); }

/// Weights stream through once per step: keep them out of L1, which holds the activations, and have L2
/// fetch the 256 bytes around a miss (measured with the weights in row-major order, where a warp read 128
/// B of a row a round and the next warp the next 128: 1% a step on an H100). Not volatile: the weights do
/// not change while a step runs, so the compiler may issue these loads early.
__device__ __forceinline__ uint4 ld_stream(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

/// Asks L2 for `bytes` at `p` (16-byte aligned, a multiple of 16 bytes) without waiting, in bulk
/// prefetches of at most 64 KiB (cp.async.bulk.prefetch.L2): data that another node reads soon, asked for
/// while the memory would otherwise idle. One thread calls it.
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned long long bytes) {
  const char* const c = static_cast<const char*>(p);
  for (unsigned long long off = 0; off < bytes; off += 65536u) {
    const unsigned n = bytes - off < 65536u ? static_cast<unsigned>(bytes - off) : 65536u;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c + off), "r"(n) : "memory");
  }
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// Rows of a tile of llama_resid, which writes the residual stream: the RMSNorms' partial sums of squares
/// come one per kResidRows elements of a row (llama_embed writes them alike).
inline constexpr unsigned kResidRows = 8;

/// The input of a projection: rows of activations, optionally RMS-normalized. With `ss`, the sums of
/// squares of each row in `parts` partial sums ([parts][kMaxRows], written by the operator that wrote
/// the rows, one part per tile, and added here in a fixed order so that every step computes the same
/// bits), the projection of row r is rsqrt(ss[r] / K + eps) * sum_k W[k] bf16(x[k] * gain[k]): the
/// reference's LlamaRMSNorm followed by the projection, with the row's scale applied to the sums instead
/// of to each element (one rounding to bf16 per element instead of two), so that no element waits for
/// the scale, and the scale's round trip overlaps the products.
struct Input {
  const bf16* x;      ///< [R][K]
  const float* ss;    ///< nullptr: no normalization
  const bf16* gain;   ///< [K], or nullptr: folded into the weights (W[k] gain[k])
  unsigned K;
  unsigned R;
  float eps;
  unsigned parts;
};

/// The RMSNorm scales of a step's rows from `parts` partial sums ([parts][kMaxRows]), in three steps so
/// that their round trip overlaps other work: row_sums_load asks for thread i's float4s i and i + 256
/// (float4 j: part j / 2, rows 4 (j % 2) to 4 (j % 2) + 3; both at once, so that a hidden size of 2048,
/// 512 float4s, costs one round trip); row_sums_fold adds the second to the first and then the float4s
/// i + 512, ... (if any), folds each warp's lanes of one parity with shuffles and writes the warp's 8 sums
/// to `red` (64 floats); after a barrier, row_scale adds the 8 warps' sums of row r in warp order (a fixed
/// order: every step computes the same bits). All threads enter the first two.
struct RowSums {
  float4 a, b;
};
__device__ __forceinline__ RowSums row_sums_load(const Input& in) {
  const float4* p = reinterpret_cast<const float4*>(in.ss);
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  const unsigned n = in.parts * 2u, j = threadIdx.x + GPUOS_BLOCK_THREADS;
  return RowSums{threadIdx.x < n ? __ldcg(p + threadIdx.x) : zero, j < n ? __ldcg(p + j) : zero};
}
__device__ __forceinline__ void row_sums_fold(const Input& in, const RowSums& s, float* red) {
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const float4* p = reinterpret_cast<const float4*>(in.ss);
  float4 v = s.a;
  v.x += s.b.x;
  v.y += s.b.y;
  v.z += s.b.z;
  v.w += s.b.w;
  for (unsigned i = threadIdx.x + 2u * GPUOS_BLOCK_THREADS; i < in.parts * 2u; i += GPUOS_BLOCK_THREADS) {
    const float4 x = __ldcg(p + i);
    v.x += x.x;
    v.y += x.y;
    v.z += x.z;
    v.w += x.w;
  }
#pragma unroll
  for (int o = 2; o < 32; o <<= 1) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
    v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
    v.z += __shfl_xor_sync(0xffffffffu, v.z, o);
    v.w += __shfl_xor_sync(0xffffffffu, v.w, o);
  }
  if (lane < 2u) reinterpret_cast<float4*>(red)[warp * 2u + lane] = v;
}
__device__ __forceinline__ float row_scale(const Input& in, unsigned r, const float* red) {
  float s = 0.0f;
#pragma unroll
  for (unsigned w = 0; w < kWarps; ++w) s += red[w * kMaxRows + r];
  return rsqrtf(s / static_cast<float>(in.K) + in.eps);
}

/// project's `ready` where none is given.
struct NoReady {
  __device__ void operator()() const {}
};

/// The projections' weights in the order the operators stream them (the engine lays them out so at load:
/// llama_engine.tile_order). Tile by tile, a tile being kRows = 16 or 8 weight rows (row i gives the
/// tile's output i; each operator says which of its matrix's rows those are); each tile in rounds of
/// 16 KiB (8192 / kRows k; a last, shorter round when K is not a multiple of that); each round in 8
/// parts of 1024 / kRows k (2 KiB, warp w's part w); each part as [i = 0..3][lane = 4 g + t = 0..31][8
/// weights]: for 16 rows, k 32 (i / 2) + 8 t .. + 7 of the part in row g (i even) or 8 + g (i odd); for
/// 8 rows, k 32 i + 8 t .. + 7 in row g. A warp's load of one i reads 512 consecutive bytes, and a round
/// is one contiguous stretch of 16 KiB, against 16 stretches of 1 KiB from 16 rows in the weights'
/// row-major order (the 1B step 1.39 ms against 1.43 on an H100).
///
/// For each tile j of first .. first + count - 1 in turn, out[i][r] (16 x 8 floats in shared memory; rows
/// i >= kRows zero) = sum_k W[row_i][k] * in[r][k] over the tile's rows (`w`: the tiles, laid out as above,
/// tile j at w + j kRows K), then `epilogue(j, out)` in every thread. In each round, warp w takes its part:
/// m16n8k16 bf16 mma with fp32 accumulation (n = the rows of the step; rows >= R are zero; with 8 rows, A's
/// rows 8..15 are zero). K must be a multiple of 256 (16 rows) or 128 (8 rows).
///
/// The k order inside each 32-wide block is permuted so that a lane takes 8 consecutive weights (16 B)
/// of each of its rows (g = lane / 4, and 8 + g) and 8 consecutive inputs: logical k 2t, 2t+1, 2t+8, 2t+9
/// of the first mma are k 8t..8t+3 of the block, of the second 8t+4..8t+7 (t = lane % 4). A and B use the
/// same permutation, so the sum is unchanged, and every tile's sums are added in the same order however
/// the block's tiles are grouped into calls.
/// A lane asks for a round's weights (its 4 x 16 B) before it computes the round before, so a round is
/// always in flight (kDepth 1). The first tile's first round is asked for before the operator awaits its
/// inputs (gpuos::await_inputs: the operators are GPUOS_OP_AWAITS_INPUTS, so in a step's graph it is on
/// its way while the node before finishes); the RMSNorm's sums are asked for after the await and added
/// in the first tile's reduction (Input); each next tile's first round is asked for during the last round
/// of the tile before, so it is in flight through that tile's reduction over warps and its epilogue.
///
/// With kDepth 2 a lane keeps two rounds in flight in the same registers: two buffers take turns, each
/// asked for the round two ahead as soon as its products are issued (the loop is written twice, starting
/// with either buffer, so that no register is copied: with one round in flight, the copy of the next
/// round's buffer waits for its loads). The first kAhead rounds are asked for before the await, the
/// rest after it. On an H100 this streams the LM head faster with both asked ahead (the 1B step 1.337 ms
/// against 1.353, `llama_logits`), and gate/up with one (`llama_swiglu`: 1.302 ms against 1.316; on an
/// H200, 1.024 against 1.065 with one round in flight). Asked ahead, gate/up's second round competes with
/// the node before's last tiles (1.313-1.317); on an H200 too (1.0157-1.0165 against 1.0053-1.0084).
/// On an H200 the residual projections (`llama_resid`) keep two rounds, both asked ahead: 1.0020-1.0065 ms
/// against 1.0053-1.0091 with one, in two calls (1.0099-1.0115 with the second asked after the await);
/// qkv (`llama_qkv`, one tile a block) keeps one: 1.0023-1.0065 against 1.0065-1.0084 with a second asked
/// after the await and 1.0106-1.0125 with both ahead (and 1.019 against 1.024 before the residual
/// projections had their second).
///
/// `ready()`, if given, runs in every thread right after the await, where the operator may ask for what its
/// epilogue reads of other tasks' writes, so that those loads' round trip overlaps the products.
///
/// With `runs` (a stream function's: a claimed node), the tiles go on past `last` with the runs it hands
/// out, in the same stream: at the start of a run's last tile the next run is asked for (its claim was
/// issued a run before), so that the lanes ask for its first rounds during that tile's last ones as they
/// do for a next tile of the same run. A claimed LM head block of the 1B shape takes ~12 claims a step;
/// as one call each, every claim drained the rounds in flight. Taken only where each tile has more than
/// kDepth rounds in every warp (K >= (kDepth + 1) x the block's k a round), so that no lane asks for a
/// run's last round before the next run is known; else the runs are left to later calls.
///
/// `out` holds the sums scaled by the rows' RMSNorm scales. Returns without calling `epilogue` when the
/// task must not run (a task before it failed). Uses 4 KiB of `smem` for the reduction over warps, 512 B
/// after it for `out` and 256 B after that for the sums; all threads enter.
template <unsigned kRows, unsigned kDepth = 1, unsigned kAhead = kDepth, class Epilogue, class Ready = NoReady>
__device__ __forceinline__ void project(unsigned first, unsigned count, const bf16* tiles, const Input& in,
                                        float* smem, Epilogue epilogue, Ready ready = {},
                                        gpuos::TileRuns* runs = nullptr) {
  static_assert(kRows == 16 || kRows == 8);
  static_assert(kDepth == 1 || kDepth == 2);
  static_assert(kAhead >= 1 && kAhead <= kDepth);
  constexpr unsigned kRound = 1024u / kRows;     // k a warp takes a round
  constexpr unsigned kStride = kWarps * kRound;  // k a round of the block takes
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3u;
  const bool has_row = g < in.R;
  const bf16* xrow = in.x + static_cast<unsigned long long>(has_row ? g : 0u) * in.K;
  const unsigned k0 = warp * kRound;
  unsigned last = first + count - 1u;  // the last tile of the run the products are in
  // The run after it, once known (runs->next, at the start of `last`): its first and last tiles.
  unsigned next_first = 0u, next_last = 0u;
  bool has_next = false;
  const bool go_on = runs != nullptr && in.K >= (kDepth + 1u) * kStride;

  // This lane's 16 B of i = 0 in the first part of a tile; the part holding k (a multiple of kRound) is
  // kRows k weights further, i 256 weights apart.
  auto lane_tile = [&](unsigned j) { return tiles + static_cast<unsigned long long>(j) * kRows * in.K + lane * 8u; };
  auto load = [&](uint4 (&x)[4], const bf16* w, unsigned k) {
#pragma unroll
    for (unsigned i = 0; i < 4u; ++i) x[i] = ld_stream(w + kRows * k + 256u * i);
  };
  uint4 a[4], na[4];
  // The next round this lane asks for: tile lj (lj_last + 1 once every round was asked for), k lk; lj_last
  // is the last tile of lj's run. After the last round of a run's last tile the lane goes on with the next
  // run's first tile if it is known and the lane is still in the products' run.
  unsigned lj = k0 < in.K ? first : last + 1u, lk = k0, lj_last = last;
  auto ask = [&](uint4 (&x)[4]) {
    if (lj > lj_last) return;
    load(x, lane_tile(lj), lk);
    lk += kStride;
    if (lk >= in.K) {
      lk = k0;
      if (lj == lj_last && has_next && lj_last == last) {
        lj = next_first;
        lj_last = next_last;
      } else {
        ++lj;
      }
    }
  };
  ask(a);
  if constexpr (kAhead == 2) ask(na);
  // Nothing above reads what another task writes.
  if (!gpuos::await_inputs()) return;
  if constexpr (kDepth == 2 && kAhead == 1) ask(na);
  // The RMSNorm's sums, in flight through the first tile's products.
  const RowSums ss = in.ss ? row_sums_load(in) : RowSums{};
  ready();
  float* const sums = smem + kWarps * 32u * 4u + 16u * kMaxRows;
  float rs = 1.0f;  // the scale of the step row whose sums this thread adds (threads < 128)

  xrow += t * 8u;
  const bf16* gain = in.gain ? in.gain + t * 8u : nullptr;
  float c[4];
  // One 32-wide block of k: this lane's 8 inputs of row g (zero past R), times the gains if given.
  auto step = [&](const uint4& wa, const uint4& wb, unsigned kk) {
    uint4 xv = make_uint4(0u, 0u, 0u, 0u);
    if (has_row) {
      xv = *reinterpret_cast<const uint4*>(xrow + kk);
      if (gain) {
        const uint4 gv = *reinterpret_cast<const uint4*>(gain + kk);
        unsigned* xp = &xv.x;
        const unsigned* gp = &gv.x;
#pragma unroll
        for (int j = 0; j < 4; ++j) xp[j] = mul_bf16x2(xp[j], gp[j]);
      }
    }
    mma_bf16(c, wa.x, wb.x, wa.y, wb.y, xv.x, xv.y);
    mma_bf16(c, wa.z, wb.z, wa.w, wb.w, xv.z, xv.w);
  };
  // The products of round k from buffer x.
  unsigned k = k0;
  auto products = [&](const uint4 (&x)[4]) {
    if constexpr (kRows == 16) {
      step(x[0], x[1], k);
      step(x[2], x[3], k + 32u);
    } else {
#pragma unroll
      for (unsigned i = 0; i < 4u; ++i) step(x[i], make_uint4(0u, 0u, 0u, 0u), k + 32u * i);
    }
  };
  // kDepth 2: round k from buffer x, which then asks for the round two ahead; true at the tile's last.
  auto round = [&](uint4 (&x)[4]) {
    products(x);
    ask(x);
    k += kStride;
    return k >= in.K;
  };
  bool na_first = false;  // kDepth 2: the tile's first round is in na (the tile before had an odd count)
  float4* red = reinterpret_cast<float4*>(smem);
  float* out = smem + kWarps * 32u * 4u;
#pragma unroll 1
  for (unsigned j = first;; ++j) {
    if (go_on && j == last && !has_next) {  // the same in every thread
      unsigned top = 0u, n = 1u;
      has_next = runs->next(top, n);
      next_first = top + 1u - n;
      next_last = top;
    }
    c[0] = c[1] = c[2] = c[3] = 0.0f;
    k = k0;
    if constexpr (kDepth == 1) {
#pragma unroll 1
      while (k < in.K) {
        // The next round's weights (the next tile's first) before this round's products.
        ask(na);
        products(a);
#pragma unroll
        for (unsigned i = 0; i < 4u; ++i) a[i] = na[i];
        k += kStride;
      }
    } else if (k0 < in.K) {
      if (!na_first) {
#pragma unroll 1
        for (;;) {
          if (round(a)) {
            na_first = true;
            break;
          }
          if (round(na)) break;
        }
      } else {
#pragma unroll 1
        for (;;) {
          if (round(na)) {
            na_first = false;
            break;
          }
          if (round(a)) break;
        }
      }
    }
    // c: (row g, step rows 2t, 2t+1), (row g + 8, step rows 2t, 2t+1). Sum the warps' partials. The
    // epilogue before read `out` before this barrier, and the reduction before read `red` before the
    // barrier that ended it.
    red[warp * 32u + lane] = make_float4(c[0], c[1], c[2], c[3]);
    if (in.ss && j == first) row_sums_fold(in, ss, sums);
    __syncthreads();
    if (threadIdx.x < 128u) {
      const unsigned l = threadIdx.x >> 2, comp = threadIdx.x & 3u;
      float s = 0.0f;
#pragma unroll
      for (unsigned v = 0; v < kWarps; ++v) s += smem[(v * 32u + l) * 4u + comp];
      const unsigned row = (l >> 2) + 8u * (comp >> 1), col = 2u * (l & 3u) + (comp & 1u);
      if (in.ss && j == first) rs = row_scale(in, col, sums);
      out[row * kMaxRows + col] = s * rs;
    }
    __syncthreads();
    epilogue(j, static_cast<const float*>(out));
    if (j == last) {
      if (!has_next) break;
      j = next_first - 1u;  // the loop's increment makes it next_first
      last = next_last;
      has_next = false;
    }
  }
}

}  // namespace llama
