// llama_attn: grouped-query attention of each row over its sequence's KV cache, positions 0..pos (so a
// prefill chunk of consecutive positions is causal), split over the sequence. A tile takes one row, one
// query head and one part of the row's chunks of `chunk` positions: part i of `parts` takes chunks i,
// i + parts, ... that hold positions, one after another, folding each into its running softmax
// statistics and output. The query heads of a KV head read the same keys and values (from L2), each in
// tiles of its own, so that a row's heads run on as many blocks (the 1B shape at batch 1 on an H200:
// attention 5.7 us a layer against 8.4 with a KV head's 4 query heads a tile, the step 1.040 ms against
// 1.098); the engine chooses `parts` so that a step has about a tile a block, whatever the cache's
// length (a tile a chunk would make most of a long cache's tiles empty). A row whose chunks fall to one
// tile is done by it, which writes the output; otherwise each of its tiles writes its statistics and
// unnormalized output (m, l, o[64]), and the last of them to finish, counted by an atomic, combines them
// and writes the output (bf16). Scores and the combinations are in fp32, every sum in a fixed order: a
// row's result does not depend on which tiles ran where or on the other rows of the step.
// tiles = R * heads * parts.
#include "llama.cuh"

struct LlamaAttnArgs {
  const llama::bf16* q;   // [R][heads * 64]
  const llama::bf16* kv;  // this layer's cache (llama_qkv)
  llama::bf16* out;       // [R][heads * 64]
  float* part;            // [R][heads][parts][2 + 64]
  unsigned* count;        // [R][heads], zero between steps
  const llama::Row* rows;
  const llama::Dims* dims;
  const char* pf;         // nullptr, or what to ask L2 for: pf_bytes, tile t's share at pf + t * pf_bytes
  unsigned parts;         // tiles per row and head
  unsigned chunk;         // positions a tile takes at once, <= 64
  float scale;            // 1 / sqrt(64)
  unsigned heads;         // Dims::heads and ::kv_heads, here so that the row's load need not wait for the
  unsigned kv_heads;      // dimensions'
  unsigned pf_bytes;      // a multiple of 16
};

__device__ __forceinline__ void llama_attn_tile(const LlamaAttnArgs& a, void* smem, unsigned tile) {
  using namespace llama;
  const Dims& d = *a.dims;
  const unsigned part = tile % a.parts, head = (tile / a.parts) % a.heads, r = tile / (a.parts * a.heads);
  const unsigned kvh = head / (a.heads / a.kv_heads);
  const Row row = a.rows[r];
  const int len = row.slot >= 0 ? (row.pos < static_cast<int>(d.max_pos) ? row.pos + 1 : static_cast<int>(d.max_pos)) : 0;
  const unsigned used = static_cast<unsigned>(len + static_cast<int>(a.chunk) - 1) / a.chunk;  // chunks with positions
  // The row's tiles that run: one per chunk up to `parts` (part 0 for an unused row, which writes zeros).
  const unsigned nparts = used < a.parts ? (used > 0u ? used : 1u) : a.parts;
  if (part >= nparts) return;

  // Shared memory: q [64] f32, scores then weights [64], the chunk's statistics [2], the last-tile flag.
  float* qs = static_cast<float*>(smem);
  float* s = qs + kHeadDim;
  float* stat = s + 64u;
  unsigned* flag = reinterpret_cast<unsigned*>(stat + 2u);
  const unsigned long long plane = static_cast<unsigned long long>(d.slots) * a.kv_heads * d.max_pos * kHeadDim;
  const bf16* kseq = a.kv + (static_cast<unsigned long long>(row.slot >= 0 ? row.slot : 0) * a.kv_heads + kvh) *
                                d.max_pos * kHeadDim;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  static_assert(4u * 64u == GPUOS_BLOCK_THREADS);
  static_assert(kWarps * 8u == kHeadDim, "a warp's values are 8 dimensions");
  // What a chunk's result depends on is asked for at once, so that the round trips overlap: a quarter of
  // the key row of position p = threadIdx.x / 4 (16 dimensions, 2 loads of 16 B), and the values this
  // thread weighs: dimensions vd, vd + 1 of the 8 positions 8 vg .. 8 vg + 7 (warp w takes dimensions
  // 8 w .. 8 w + 7, lane 4 vg + i the pair i). The first chunk's come with the head's query (threads < 64).
  const unsigned vg = lane >> 2, vd = warp * 8u + 2u * (lane & 3u);
  const unsigned kp = threadIdx.x >> 2, kq = threadIdx.x & 3u;  // position, quarter of its key row
  unsigned vpair[8];
  uint4 kr[2];
  auto load = [&](unsigned ch) {  // chunk ch's loads; its positions (0 for an unused row)
    const int c0 = static_cast<int>(ch * a.chunk);
    const int n = len - c0 < static_cast<int>(a.chunk) ? (len - c0 > 0 ? len - c0 : 0) : static_cast<int>(a.chunk);
    const bf16* kbase = kseq + static_cast<unsigned long long>(c0) * kHeadDim;
    const bf16* vbase = kbase + plane;
#pragma unroll
    for (unsigned i = 0; i < 8u; ++i) {
      const int p = static_cast<int>(vg * 8u + i);
      vpair[i] = p < n ? *reinterpret_cast<const unsigned*>(vbase + static_cast<unsigned long long>(p) * kHeadDim + vd) : 0u;
    }
    kr[0] = kr[1] = make_uint4(0u, 0u, 0u, 0u);
    if (static_cast<int>(kp) < n) {
      const uint4* src = reinterpret_cast<const uint4*>(kbase + static_cast<unsigned long long>(kp) * kHeadDim) + 2u * kq;
      kr[0] = src[0];
      kr[1] = src[1];
    }
    return n;
  };
  const bf16 q = threadIdx.x < kHeadDim ? a.q[(static_cast<unsigned long long>(r) * a.heads + head) * kHeadDim + threadIdx.x]
                                       : bf16{};
  int n = load(part);
  if (threadIdx.x < kHeadDim) qs[threadIdx.x] = bf2f(q);

  // The tile's chunks so far: their maximum score M and sum of weights L (the same in every thread) and
  // this thread's dimensions' weighted values O.
  float M = -inf(), L = 0.0f, O0 = 0.0f, O1 = 0.0f;
#pragma unroll 1
  for (unsigned ch = part;;) {
    // The query is written, and the chunk before has read the scores and statistics.
    __syncthreads();
    // Scores: the 4 threads of position p < n (adjacent lanes) each sum their quarter, then add the
    // quarters in a fixed tree.
    {
      const float* qq = qs + 16u * kq;
      float v = 0.0f;
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const unsigned* w = &kr[i].x;
#pragma unroll
        for (int j = 0; j < 4; ++j) v += qq[8 * i + 2 * j] * lo2f(w[j]) + qq[8 * i + 2 * j + 1] * hi2f(w[j]);
      }
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
      if (kq == 0 && static_cast<int>(kp) < n) s[kp] = v * a.scale;
    }
    __syncthreads();
    // Softmax statistics of the chunk: warp 0.
    if (warp == 0) {
      float m = -inf();
      for (int p = static_cast<int>(lane); p < n; p += 32) m = fmaxf(m, s[p]);
      for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
      float l = 0.0f;
      for (int p = static_cast<int>(lane); p < n; p += 32) {
        const float e = expf(s[p] - m);
        s[p] = e;
        l += e;
      }
      for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
      if (lane == 0) {
        stat[0] = m;
        stat[1] = l;
      }
    }
    __syncthreads();
    // Unnormalized output: each lane weighs its 8 positions' values of its 2 dimensions, then the 8 lanes
    // of a dimension pair add theirs in a fixed tree (so every step computes the same bits; every lane
    // of the 8 gets the sums).
    float o0 = 0.0f, o1 = 0.0f;
#pragma unroll
    for (unsigned i = 0; i < 8u; ++i) {
      const int p = static_cast<int>(vg * 8u + i);
      if (p < n) {
        const float wgt = s[p];
        o0 += wgt * lo2f(vpair[i]);
        o1 += wgt * hi2f(vpair[i]);
      }
    }
#pragma unroll
    for (unsigned m = 4u; m < 32u; m <<= 1) {
      o0 += __shfl_xor_sync(0xffffffffu, o0, m);
      o1 += __shfl_xor_sync(0xffffffffu, o1, m);
    }
    // Folded into the tile's: the first chunk as it is, a later one with both rescaled to the larger
    // maximum.
    const float mc = stat[0], lc = stat[1];
    if (M == -inf()) {
      M = mc;
      L = lc;
      O0 = o0;
      O1 = o1;
    } else if (mc != -inf()) {
      const float M2 = fmaxf(M, mc), e = expf(M - M2), ec = expf(mc - M2);
      L = L * e + lc * ec;
      O0 = O0 * e + o0 * ec;
      O1 = O1 * e + o1 * ec;
      M = M2;
    }
    ch += a.parts;
    if (ch >= used) break;
    n = load(ch);
  }
  const bool writer = vg == 0u;  // lanes 0..3 of each warp: dimensions vd, vd + 1
  bf16* const out = a.out + (static_cast<unsigned long long>(r) * a.heads + head) * kHeadDim;
  if (nparts == 1u) {  // the row's only tile: the output at once
    if (writer) {
      out[vd] = f2bf(L > 0.0f ? O0 / L : 0.0f);
      out[vd + 1u] = f2bf(L > 0.0f ? O1 / L : 0.0f);
    }
    return;
  }
  float* const parts = a.part + (static_cast<unsigned long long>(r) * a.heads + head) * a.parts * (2u + kHeadDim);
  {
    float* dst = parts + part * (2u + kHeadDim);
    if (writer) {
      dst[2u + vd] = O0;
      dst[3u + vd] = O1;
    }
    if (threadIdx.x == 0) {
      dst[0] = M;
      dst[1] = L;
    }
  }
  // The last of the row's tiles combines. Thread 0 releases the block's part (the barrier orders every
  // thread's writes before its fence) with its count, and the last acquires the others' parts (the
  // barrier after passes them on; they are read from L2): one thread's fences, where __threadfence in
  // every thread is a sequentially consistent fence and an invalidation of the SM's L1, twice (on an
  // H100 the combining tile 8.1 us against 8.8, a row at position 150).
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* ctr = a.count + r * a.heads + head;
    asm volatile("fence.release.gpu;" ::: "memory");
    const unsigned done = atomicAdd(ctr, 1u) + 1u;
    const bool last = done == nparts;
    if (last) {
      *ctr = 0u;
      asm volatile("fence.acquire.gpu;" ::: "memory");
    }
    *flag = last;
  }
  __syncthreads();
  const unsigned dim = threadIdx.x;
  if (!*flag || dim >= kHeadDim) return;
  // Thread dim: the parts' statistics and its dimension's outputs, 8 parts' loads at a time (one round
  // trip up to 8 parts), folded in part order: M the maximum so far, L the sum of the parts' l and o that
  // of their o[dim], each weighted by exp(m - M) (rescaled when M grows).
  float Mc = -inf(), Lc = 0.0f, o = 0.0f;
  for (unsigned sp0 = 0; sp0 < nparts; sp0 += 8u) {
    float m[8], l[8], v[8];
#pragma unroll
    for (unsigned i = 0; i < 8u; ++i) {
      const float* pp = parts + (sp0 + i) * (2u + kHeadDim);
      const bool in = sp0 + i < nparts;
      m[i] = in ? __ldcg(pp) : -inf();
      l[i] = in ? __ldcg(pp + 1) : 0.0f;
      v[i] = in ? __ldcg(pp + 2u + dim) : 0.0f;
    }
    float M2 = Mc;
#pragma unroll
    for (unsigned i = 0; i < 8u; ++i) M2 = fmaxf(M2, m[i]);
    if (M2 == -inf()) continue;  // no part with a score yet
    const float cm = Mc == -inf() ? 0.0f : expf(Mc - M2);
    Lc *= cm;
    o *= cm;
#pragma unroll
    for (unsigned i = 0; i < 8u; ++i) {
      if (m[i] == -inf()) continue;
      const float e = expf(m[i] - M2);
      Lc += e * l[i];
      o += e * v[i];
    }
    Mc = M2;
  }
  out[dim] = f2bf(Lc > 0.0f ? o / Lc : 0.0f);
}

// A block's consecutive tiles in one call. Each tile's first writes to shared memory (the query) come
// after the barriers of the tile before that follow its last reads of them, and its later ones after a
// barrier of its own.
//
// With `pf`, the call first asks L2 (llama::prefetch_l2, one thread) for its tiles' shares: the
// engine points tile t at the o projection's tile t, which the placement gives the same block (it hands
// both nodes' tiles to the blocks in the same order). The blocks that end attention last enter the o
// projection after the others, their inputs already there, and waited there for their first weights
// from memory (the last 8 blocks ended the o projection 2 us after the median); a tile's round trips
// leave the memory idle, and these loads use it (the 1B step on an H200: 1.023 ms against 1.035 in the
// same call).
__device__ void llama_attn_tiles(const LlamaAttnArgs& a, const gpuos::TileCtx& c, unsigned count) {
  if (a.pf && threadIdx.x == 0)
    llama::prefetch_l2(a.pf + static_cast<unsigned long long>(c.tile + 1u - count) * a.pf_bytes,
                       static_cast<unsigned long long>(count) * a.pf_bytes);
#pragma unroll 1
  for (unsigned t = c.tile + 1u - count; t <= c.tile; ++t) llama_attn_tile(a, c.smem, t);
}

GPUOS_OPERATOR_RANGES(llama_attn, LlamaAttnArgs, llama_attn_tiles, 0u)
