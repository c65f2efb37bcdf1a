// llama_qkv: the attention's input projections of one layer, RMSNorm on the fly, rotary embedding on q
// and k, k and v written into the KV cache at each row's slot and position. W is [q; k; v] stacked:
// (heads + 2 kv_heads) x 64 rows of `hidden`. A tile computes 16 rows: 8 dimensions d and their rotary
// partners d + 32 of one head, so each rotation pair is in one thread. tiles = rows of W / 16.
#include "llama.cuh"

struct LlamaQkvArgs {
  const llama::bf16* w;    // [(heads + 2 kv_heads) * 64][hidden] in tiles (llama.cuh): tile j is rows 8 (j % 4) + i
                           // of head j / 4, then their rotary partners 32 + 8 (j % 4) + i, i = 0..7
  const llama::bf16* x;    // [R][hidden], the residual stream
  const float* ss;         // [hidden / kResidRows][kMaxRows]: partial sums of squares of x's rows
  const llama::bf16* gain; // input_layernorm.weight
  llama::bf16* q;          // [R][heads * 64], rotated
  llama::bf16* kv;         // this layer's cache: k [slots][kv_heads][max_pos][64], then v alike
  const llama::Row* rows;
  const llama::Dims* dims;
  unsigned R;
};

__device__ void llama_qkv_tiles(const LlamaQkvArgs& a, const gpuos::TileCtx& c, unsigned count) {
  using namespace llama;
  const Dims& d = *a.dims;
  const unsigned H = d.hidden;
  const Input in{a.x, a.ss, a.gain, H, a.R, d.eps, H / kResidRows};
  const unsigned i = threadIdx.x & 7u, r = threadIdx.x >> 3;  // 8 x R threads: one rotation pair each
  // What the epilogue reads, asked for early so that it is no round trip after the products: the
  // dimensions the rotation and q need (constant) before the await, the thread's row (this step's) right
  // after it (the 1B step 1.1075 ms against 1.1122 on an H200). The cache's dimensions, which only the
  // key and value tiles read, stay in the epilogue: asked for early too, the step took 1.119.
  const unsigned first = c.tile + 1u - count, heads = d.heads, kv_heads = d.kv_heads;
  const float freq_first = d.inv_freq[(first & 3u) * 8u + i];
  int pos = 0, slot = -1;
  // One round in flight a lane (llama::project): a block runs one tile of 4 rounds, and on an H200 the 1B
  // step takes 1.019 ms against 1.024 with a second round asked for after the await (two calls).
  project<16, 1>(first, count, a.w, in, static_cast<float*>(c.smem), [&](unsigned j, const float* out) {
    const unsigned head = j >> 2, part = j & 3u;
    if (r >= a.R) return;
    const unsigned dim = part * 8u + i;  // 0..31
    float v0 = rbf(out[i * kMaxRows + r]), v1 = rbf(out[(i + 8u) * kMaxRows + r]);
    const bool is_v = head >= heads + kv_heads;
    if (!is_v) {  // rotate_half: (v0, v1) -> (v0 cos - v1 sin, v1 cos + v0 sin), each product in bf16
      const float ang = static_cast<float>(pos) * (j == first ? freq_first : d.inv_freq[dim]);
      const float cs = rbf(cosf(ang)), sn = rbf(sinf(ang));
      const float n0 = rbf(rbf(v0 * cs) + rbf(-v1 * sn));
      const float n1 = rbf(rbf(v1 * cs) + rbf(v0 * sn));
      v0 = n0;
      v1 = n1;
    }
    bf16* dst;
    if (head < heads) {
      dst = a.q + static_cast<unsigned long long>(r) * heads * kHeadDim + head * kHeadDim;
    } else {
      if (slot < 0 || static_cast<unsigned>(pos) >= d.max_pos) return;
      const unsigned long long plane = static_cast<unsigned long long>(d.slots) * kv_heads * d.max_pos * kHeadDim;
      const unsigned kvh = is_v ? head - heads - kv_heads : head - heads;
      dst = a.kv + (is_v ? plane : 0ull) +
            ((static_cast<unsigned long long>(slot) * kv_heads + kvh) * d.max_pos + pos) * kHeadDim;
      // One thread of the head's first tile asks L2 for the row's earlier keys or values of the head (128 B
      // a position), so that attention's loads of them, its tiles' longest round trip, hit L2 (the 1B step
      // 1.292 ms against 1.296-1.310 on an H100).
      if (part == 0u && i == 0u && pos > 0)
        prefetch_l2(dst - static_cast<unsigned long long>(pos) * kHeadDim,
                    static_cast<unsigned long long>(pos) * kHeadDim * sizeof(bf16));
    }
    dst[dim] = f2bf(v0);
    dst[dim + 32u] = f2bf(v1);
  }, [&] {
    if (r < a.R) {
      const Row& row = a.rows[r];
      pos = row.pos;
      slot = row.slot;
    }
  });
}

GPUOS_OPERATOR_RANGES(llama_qkv, LlamaQkvArgs, llama_qkv_tiles, GPUOS_OP_AWAITS_INPUTS)
