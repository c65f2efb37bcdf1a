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
};

__device__ void llama_attn_tile(const LlamaAttnArgs& a, const gpuos::TileCtx& c) {
  using namespace llama;
  const Dims& d = *a.dims;
  const unsigned group = d.heads / d.kv_heads;  // <= 8
  const unsigned split = c.tile % a.splits, kvh = (c.tile / a.splits) % d.kv_heads,
                 r = c.tile / (a.splits * d.kv_heads);
  const Row row = a.rows[r];
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
  const unsigned long long plane = static_cast<unsigned long long>(d.slots) * d.kv_heads * d.max_pos * kHeadDim;
  const bf16* kbase = a.kv + ((static_cast<unsigned long long>(row.slot >= 0 ? row.slot : 0) * d.kv_heads + kvh) *
                                  d.max_pos + c0) * kHeadDim;
  const bf16* vbase = kbase + plane;
  const bf16* qrow = a.q + static_cast<unsigned long long>(r) * d.heads * kHeadDim + kvh * group * kHeadDim;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (unsigned j = threadIdx.x; j < group * kHeadDim; j += blockDim.x) qs[j] = bf2f(qrow[j]);
  __syncthreads();

  // Scores: thread p < n takes position p, its key row in 8 loads of 16 B issued together.
  if (static_cast<int>(threadIdx.x) < n) {
    const uint4* kp = reinterpret_cast<const uint4*>(kbase + static_cast<unsigned long long>(threadIdx.x) * kHeadDim);
    uint4 kr[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) kr[i] = kp[i];
    for (unsigned h = 0; h < group; ++h) {
      const float* qh = qs + h * kHeadDim;
      float v = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const unsigned* w = &kr[i].x;
#pragma unroll
        for (int j = 0; j < 4; ++j) v += qh[8 * i + 2 * j] * lo2f(w[j]) + qh[8 * i + 2 * j + 1] * hi2f(w[j]);
      }
      s[h * 64u + threadIdx.x] = v * a.scale;
    }
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
  // Unnormalized output: thread (h, dim) over the chunk's positions in order (so every step computes the
  // same bits), the values of 16 positions loaded at a time.
  for (unsigned j = threadIdx.x; j < group * kHeadDim; j += blockDim.x) {
    const unsigned h = j / kHeadDim, dim = j % kHeadDim;
    float o = 0.0f;
    for (int p0 = 0; p0 < n; p0 += 16) {
      float v[16];
#pragma unroll
      for (int i = 0; i < 16; ++i)
        v[i] = p0 + i < n ? bf2f(vbase[static_cast<unsigned long long>(p0 + i) * kHeadDim + dim]) : 0.0f;
#pragma unroll
      for (int i = 0; i < 16; ++i)
        if (p0 + i < n) o += s[h * 64u + p0 + i] * v[i];
    }
    os[j] = o;
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
  // The last used chunk of (r, kvh) combines: its readers see the other tiles' parts through L2.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* ctr = a.count + r * d.kv_heads + kvh;
    const unsigned done = atomicAdd(ctr, 1u) + 1u;
    const bool last = done == used;
    if (last) *ctr = 0u;
    *flag = last;
  }
  __syncthreads();
  if (!*flag) return;
  __threadfence();
  // Warp h < group: the chunks' maximum M and the sum L of their l weighted by exp(m - M), over the
  // chunks in lane order and a fixed tree; M and L go to stat[h].
  if (warp < group) {
    const float* src = a.part + (static_cast<unsigned long long>(r) * d.heads + qh0 + warp) * a.splits * (2u + kHeadDim);
    float m = -inf();
    for (unsigned sp = lane; sp < used; sp += 32u) m = fmaxf(m, __ldcg(src + sp * (2u + kHeadDim)));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float l = 0.0f;
    if (m != -inf())
      for (unsigned sp = lane; sp < used; sp += 32u) {
        const float* pp = src + sp * (2u + kHeadDim);
        l += expf(__ldcg(pp) - m) * __ldcg(pp + 1);
      }
    for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
    if (lane == 0) {
      stat[warp * 2u] = m;
      stat[warp * 2u + 1u] = l;
    }
  }
  __syncthreads();
  for (unsigned j = threadIdx.x; j < group * kHeadDim; j += blockDim.x) {
    const unsigned h = j / kHeadDim, dim = j % kHeadDim;
    const float* src = a.part + (static_cast<unsigned long long>(r) * d.heads + qh0 + h) * a.splits * (2u + kHeadDim);
    const float m = stat[h * 2u], l = stat[h * 2u + 1u];
    float o = 0.0f;
    if (m != -inf()) {
#pragma unroll 4
      for (unsigned sp = 0; sp < used; ++sp) {
        const float* pp = src + sp * (2u + kHeadDim);
        o += expf(__ldcg(pp) - m) * __ldcg(pp + 2u + dim);
      }
    }
    out[j] = f2bf(l > 0.0f ? o / l : 0.0f);
  }
}

GPUOS_OPERATOR(llama_attn, LlamaAttnArgs, llama_attn_tile)
