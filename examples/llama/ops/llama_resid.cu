// llama_resid: a projection added to the residual stream, x[r] += bf16(W in[r]) in bf16, as the
// reference adds; the attention's output projection and the MLP's down projection. Tile i also writes
// the sum of squares of its 16 new x values of each row to ss[i][r], the next RMSNorm's partial sums.
// tiles = rows of W / 16.
#include "llama.cuh"

struct LlamaResidArgs {
  const llama::bf16* w;   // [hidden][K] in tiles (llama.cuh): tile j is rows 16 j .. 16 j + 15
  const llama::bf16* in;  // [R][K]
  llama::bf16* x;         // [R][hidden]
  float* ss;              // [hidden / 16][kMaxRows]: partial sums of squares of the new x rows
  unsigned K;
  unsigned hidden;
  unsigned R;
};

__device__ void llama_resid_tiles(const LlamaResidArgs& a, const gpuos::TileCtx& c, unsigned count) {
  using namespace llama;
  const Input in{a.in, nullptr, nullptr, a.K, a.R, 0.0f, 0u};
  auto tile = [&](unsigned j) { return a.w + static_cast<unsigned long long>(j) * 16u * a.K; };
  project16(c.tile + 1u - count, count, tile, in, static_cast<float*>(c.smem), [&](unsigned j, const float* out) {
    if (threadIdx.x >= 128u) return;  // 16 x 8 threads, r-major: a row's 16 values in one half warp
    const unsigned i = threadIdx.x & 15u, r = threadIdx.x >> 4;
    float sq = 0.0f;
    if (r < a.R) {
      bf16* xp = a.x + static_cast<unsigned long long>(r) * a.hidden + j * 16u + i;
      const float v = rbf(bf2f(*xp) + rbf(out[i * kMaxRows + r]));
      *xp = f2bf(v);
      sq = v * v;
    }
    sq = half_warp_sum(sq);
    if (i == 0) a.ss[j * kMaxRows + r] = sq;
  });
}

GPUOS_OPERATOR_RANGES(llama_resid, LlamaResidArgs, llama_resid_tiles, GPUOS_OP_AWAITS_INPUTS)
