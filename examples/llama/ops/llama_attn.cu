// llama_attn: grouped-query attention of each row over its sequence's KV cache, positions 0..pos (so a
// prefill chunk of consecutive positions is causal), split over the sequence. A tile takes one row, one
// KV head (the `group` query heads that share it) and one chunk of `chunk` positions. A row whose
// positions fit one chunk is done by that chunk's tile alone, which writes the output. Otherwise each
// of the row's `used` chunks (those holding positions) writes its softmax statistics and unnormalized
// output (m, l, o[64]) per query head, and the last of them to finish, counted by an atomic, combines
// them and writes the output (bf16). Tiles of chunks past the row's position return at once. Scores and
// the combination are in fp32, every sum in a fixed order: a row's result does not depend on which tiles
// ran where or on the other rows of the step. tiles = R * kv_heads * splits.
#include "llama.cuh"

struct LlamaAttnArgs {
  const llama::bf16* q;   // [R][heads * 64]
  const llama::bf16* kv;  // this layer's cache (llama_qkv)
  llama::bf16* out;       // [R][heads * 64]
  float* part;            // [R][heads][splits][2 + 64]
  unsigned* count;        // [R][kv_heads], zero between steps
  const llama::Row* rows;
  const llama::Dims* dims;
  unsigned splits;        // chunks per row: splits * chunk >= max_pos
  unsigned chunk;         // positions per tile, <= 64
  float scale;            // 1 / sqrt(64)
  unsigned kv_heads;      // Dims::kv_heads, here so that the row's load need not wait for the dimensions'
};

__device__ void llama_attn_tile(const LlamaAttnArgs& a, const gpuos::TileCtx& c) {
  using namespace llama;
  const Dims& d = *a.dims;
  const unsigned split = c.tile % a.splits, kvh = (c.tile / a.splits) % a.kv_heads,
                 r = c.tile / (a.splits * a.kv_heads);
  const Row row = a.rows[r];
  const unsigned group = d.heads / a.kv_heads;  // <= 8
  const int len = row.slot >= 0 ? (row.pos < static_cast<int>(d.max_pos) ? row.pos + 1 : static_cast<int>(d.max_pos)) : 0;
  const int c0 = static_cast<int>(split * a.chunk);
  const int n = len - c0 < static_cast<int>(a.chunk) ? (len - c0 > 0 ? len - c0 : 0) : static_cast<int>(a.chunk);
  const unsigned used = static_cast<unsigned>(len + static_cast<int>(a.chunk) - 1) / a.chunk;  // <= splits
  if (split >= (used > 1u ? used : 1u)) return;  // past the row's positions (chunk 0 runs for an unused row)

  // Shared memory: q of the group's heads [group][64] f32, scores then weights [group][64], the chunk's
  // statistics [group][2], its output [group][64], the last-tile flag.
  float* qs = static_cast<float*>(c.smem);
  float* s = qs + 8u * kHeadDim;
  float* stat = s + 8u * 64u;
  float* os = stat + 16u;
  unsigned* flag = reinterpret_cast<unsigned*>(os + 8u * kHeadDim);
  const unsigned long long plane = static_cast<unsigned long long>(d.slots) * a.kv_heads * d.max_pos * kHeadDim;
  const bf16* kbase = a.kv + ((static_cast<unsigned long long>(row.slot >= 0 ? row.slot : 0) * a.kv_heads + kvh) *
                                  d.max_pos + c0) * kHeadDim;
  const bf16* vbase = kbase + plane;
  const bf16* qrow = a.q + static_cast<unsigned long long>(r) * d.heads * kHeadDim + kvh * group * kHeadDim;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  static_assert(8u * kHeadDim <= 2u * GPUOS_BLOCK_THREADS && 4u * 64u == GPUOS_BLOCK_THREADS);
  // Every load the chunk's result depends on is asked for at once, so that their round trips overlap:
  // the group's queries (at most two per thread); a quarter of the key row of position p = threadIdx.x / 4
  // (16 dimensions, 2 loads of 16 B); and the values this thread weighs later: dimensions vd, vd + 1 of
  // the 8 positions 8 vg .. 8 vg + 7 (warp w takes dimensions 8 w .. 8 w + 7, lane 4 vg + i the pair i).
  const unsigned nq = group * kHeadDim, j1 = threadIdx.x + GPUOS_BLOCK_THREADS;
  const bf16 q0 = threadIdx.x < nq ? qrow[threadIdx.x] : bf16{}, q1 = j1 < nq ? qrow[j1] : bf16{};
  static_assert(kWarps * 8u == kHeadDim, "a warp's values are 8 dimensions");
  const unsigned vg = lane >> 2, vd = warp * 8u + 2u * (lane & 3u);
  unsigned vpair[8];
#pragma unroll
  for (unsigned i = 0; i < 8u; ++i) {
    const int p = static_cast<int>(vg * 8u + i);
    vpair[i] = p < n ? *reinterpret_cast<const unsigned*>(vbase + static_cast<unsigned long long>(p) * kHeadDim + vd) : 0u;
  }
  const unsigned kp = threadIdx.x >> 2, kq = threadIdx.x & 3u;  // position, quarter of its key row
  uint4 kr[2] = {};
  if (static_cast<int>(kp) < n) {
    const uint4* src = reinterpret_cast<const uint4*>(kbase + static_cast<unsigned long long>(kp) * kHeadDim) + 2u * kq;
    kr[0] = src[0];
    kr[1] = src[1];
  }
  if (threadIdx.x < nq) qs[threadIdx.x] = bf2f(q0);
  if (j1 < nq) qs[j1] = bf2f(q1);
  __syncthreads();

  // Scores: the 4 threads of position p < n (adjacent lanes) each sum their quarter, then add the
  // quarters in a fixed tree.
  for (unsigned h = 0; h < group; ++h) {
    const float* qh = qs + h * kHeadDim + 16u * kq;
    float v = 0.0f;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const unsigned* w = &kr[i].x;
#pragma unroll
      for (int j = 0; j < 4; ++j) v += qh[8 * i + 2 * j] * lo2f(w[j]) + qh[8 * i + 2 * j + 1] * hi2f(w[j]);
    }
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    if (kq == 0 && static_cast<int>(kp) < n) s[h * 64u + kp] = v * a.scale;
  }
  __syncthreads();
  // Softmax statistics of the chunk: warp h < group takes query head h.
  if (warp < group) {
    float m = -inf();
    for (int p = static_cast<int>(lane); p < n; p += 32) m = fmaxf(m, s[warp * 64u + p]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0.0f;
    for (int p = static_cast<int>(lane); p < n; p += 32) {
      const float e = expf(s[warp * 64u + p] - m);
      s[warp * 64u + p] = e;
      l += e;
    }
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    if (lane == 0) {
      stat[warp * 2u] = m;
      stat[warp * 2u + 1u] = l;
    }
  }
  __syncthreads();
  // Unnormalized output: each lane weighs its 8 positions' values of its 2 dimensions for every query
  // head of the group, then the 8 lanes of a dimension pair add theirs in a fixed tree (so every step
  // computes the same bits), and lanes 0..3 of each warp write the pair's sums.
  {
    float o[8][2];
#pragma unroll
    for (unsigned h = 0; h < 8u; ++h) {
      o[h][0] = o[h][1] = 0.0f;
      if (h >= group) continue;
#pragma unroll
      for (unsigned i = 0; i < 8u; ++i) {
        const int p = static_cast<int>(vg * 8u + i);
        if (p < n) {
          const float wgt = s[h * 64u + p];
          o[h][0] += wgt * lo2f(vpair[i]);
          o[h][1] += wgt * hi2f(vpair[i]);
        }
      }
    }
#pragma unroll
    for (unsigned h = 0; h < 8u; ++h) {
      if (h >= group) continue;
#pragma unroll
      for (unsigned m = 4u; m < 32u; m <<= 1) {
        o[h][0] += __shfl_xor_sync(0xffffffffu, o[h][0], m);
        o[h][1] += __shfl_xor_sync(0xffffffffu, o[h][1], m);
      }
      if (vg == 0u) {
        os[h * kHeadDim + vd] = o[h][0];
        os[h * kHeadDim + vd + 1u] = o[h][1];
      }
    }
  }
  __syncthreads();
  const unsigned qh0 = kvh * group;
  bf16* const out = a.out + static_cast<unsigned long long>(r) * d.heads * kHeadDim + qh0 * kHeadDim;
  if (used <= 1u) {  // the only chunk: the output at once (the combination of one chunk is o / l)
    for (unsigned j = threadIdx.x; j < group * kHeadDim; j += blockDim.x) {
      const float l = stat[(j / kHeadDim) * 2u + 1u];
      out[j] = f2bf(n > 0 && l > 0.0f ? os[j] / l : 0.0f);
    }
    return;
  }
  for (unsigned j = threadIdx.x; j < group * kHeadDim; j += blockDim.x) {
    const unsigned h = j / kHeadDim, dim = j % kHeadDim;
    float* dst = a.part + ((static_cast<unsigned long long>(r) * d.heads + qh0 + h) * a.splits + split) * (2u + kHeadDim);
    dst[2u + dim] = os[j];
    if (dim == 0) {
      dst[0] = stat[h * 2u];
      dst[1] = stat[h * 2u + 1u];
    }
  }
  // The last used chunk of (r, kvh) combines. Thread 0 releases the block's parts (the barrier orders
  // every thread's writes before its fence) with its count, and the last acquires the others' parts
  // (the barrier after passes them on; they are read from L2): one thread's fences, where __threadfence
  // in every thread is a sequentially consistent fence and an invalidation of the SM's L1, twice (on an
  // H100 the combining tile 8.1 us against 8.8, a row at position 150).
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* ctr = a.count + r * a.kv_heads + kvh;
    asm volatile("fence.release.gpu;" ::: "memory");
    const unsigned done = atomicAdd(ctr, 1u) + 1u;
    const bool last = done == used;
    if (last) {
      *ctr = 0u;
      asm volatile("fence.acquire.gpu;" ::: "memory");
    }
    *flag = last;
  }
  __syncthreads();
  if (!*flag) return;
  // Thread (h, dim): the chunks' statistics and its dimension's outputs, 8 chunks' loads at a time (one
  // round trip up to 8 chunks), folded in chunk order: M the maximum so far, L the sum of the chunks' l
  // and o that of their o[dim], each weighted by exp(m - M) (rescaled when M grows).
  for (unsigned j = threadIdx.x; j < nq; j += blockDim.x) {
    const unsigned h = j / kHeadDim, dim = j % kHeadDim;
    const float* src = a.part + (static_cast<unsigned long long>(r) * d.heads + qh0 + h) * a.splits * (2u + kHeadDim);
    float M = -inf(), L = 0.0f, o = 0.0f;
    for (unsigned sp0 = 0; sp0 < used; sp0 += 8u) {
      float m[8], l[8], v[8];
#pragma unroll
      for (unsigned i = 0; i < 8u; ++i) {
        const float* pp = src + (sp0 + i) * (2u + kHeadDim);
        const bool in = sp0 + i < used;
        m[i] = in ? __ldcg(pp) : -inf();
        l[i] = in ? __ldcg(pp + 1) : 0.0f;
        v[i] = in ? __ldcg(pp + 2u + dim) : 0.0f;
      }
      float M2 = M;
#pragma unroll
      for (unsigned i = 0; i < 8u; ++i) M2 = fmaxf(M2, m[i]);
      if (M2 == -inf()) continue;  // no chunk with a score yet
      const float c = M == -inf() ? 0.0f : expf(M - M2);
      L *= c;
      o *= c;
#pragma unroll
      for (unsigned i = 0; i < 8u; ++i) {
        if (m[i] == -inf()) continue;
        const float e = expf(m[i] - M2);
        L += e * l[i];
        o += e * v[i];
      }
      M = M2;
    }
    out[j] = f2bf(L > 0.0f ? o / L : 0.0f);
  }
}

GPUOS_OPERATOR(llama_attn, LlamaAttnArgs, llama_attn_tile)
