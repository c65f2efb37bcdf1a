// llama_embed: the first node of a step. Tile r copies row r of the step from the host's mapped `ctl`
// to device memory (`rows`), looks up its token's embedding into x[r] and writes the sum of squares of
// x[r] for the first layer's RMSNorm, as its first partial sum (the others zero). A row's token -1 - i
// is the token row i of the step before chose (`last`, written by llama_logits), so that the host can
// launch a step before it has read the one before. tiles = R.
#include "llama.cuh"

struct LlamaEmbedArgs {
  const llama::Row* ctl;   // [R], mapped host memory
  const int* last;         // [kMaxRows]: the step before's tokens
  llama::Row* rows;        // [R]
  const llama::bf16* emb;  // [vocab][hidden]
  llama::bf16* x;          // [R][hidden]
  float* ss;               // the first layer's norm sums: [hidden / kResidRows][kMaxRows]
  const llama::Dims* dims;
};

__device__ void llama_embed_tile(const LlamaEmbedArgs& a, const gpuos::TileCtx& c) {
  using namespace llama;
  const unsigned r = c.tile, H = a.dims->hidden;
  Row& row = *static_cast<Row*>(c.smem);
  float* red = static_cast<float*>(c.smem) + sizeof(Row) / 4;
  if (threadIdx.x == 0) {
    // The row in two 16-byte volatile reads over the bus, both in flight at once (each is a round trip).
    static_assert(sizeof(Row) == 2 * sizeof(uint4), "Row is read as two uint4");
    const uint4* src = reinterpret_cast<const uint4*>(a.ctl + r);
    Row v;
    uint4* dst = reinterpret_cast<uint4*>(&v);
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%8];\n\t"
                 "ld.volatile.global.v4.u32 {%4,%5,%6,%7}, [%9];"
                 : "=r"(dst[0].x), "=r"(dst[0].y), "=r"(dst[0].z), "=r"(dst[0].w), "=r"(dst[1].x), "=r"(dst[1].y),
                   "=r"(dst[1].z), "=r"(dst[1].w)
                 : "l"(src), "l"(src + 1));
    // The step before's token: written in another launch, so read from L2.
    if (v.tok < 0 && v.tok >= -static_cast<int>(kMaxRows)) v.tok = __ldcg(a.last - 1 - v.tok);
    if (v.tok < 0 || static_cast<unsigned>(v.tok) >= a.dims->vocab) v.slot = -1;  // refuse, never read out of bounds
    row = v;
    a.rows[r] = v;
  }
  __syncthreads();
  const bool used = row.slot >= 0;
  const uint4* src = reinterpret_cast<const uint4*>(a.emb + static_cast<unsigned long long>(used ? row.tok : 0) * H);
  uint4* dst = reinterpret_cast<uint4*>(a.x + static_cast<unsigned long long>(r) * H);
  float ss = 0.0f;
  for (unsigned i = threadIdx.x; i < H / 8u; i += blockDim.x) {
    uint4 v = used ? src[i] : make_uint4(0u, 0u, 0u, 0u);
    dst[i] = v;
    const unsigned* p = &v.x;
    for (int j = 0; j < 4; ++j) ss += lo2f(p[j]) * lo2f(p[j]) + hi2f(p[j]) * hi2f(p[j]);
  }
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31u) == 0) red[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = 0.0f;
  for (unsigned w = 0; w < kWarps; ++w) total += red[w];
  for (unsigned part = threadIdx.x; part < H / kResidRows; part += blockDim.x) a.ss[part * kMaxRows + r] = part == 0 ? total : 0.0f;
}

GPUOS_OPERATOR(llama_embed, LlamaEmbedArgs, llama_embed_tile)
