// llama_resid: a projection added to the residual stream, x[r] += bf16(W in[r]) in bf16, as the
// reference adds; the attention's output projection and the MLP's down projection. A tile computes
// kResidRows (8) rows of W, so that these nodes of hidden / 8 tiles spread over every block; tile j also
// writes the sum of squares of its 8 new x values of each row to ss[j][r], the next RMSNorm's partial
// sums. tiles = rows of W / 8.
//
// With `pf`, each call first asks L2 (llama::prefetch_l2, one thread) for its tiles' shares of pf_bytes
// at `pf`, before the operator awaits its inputs. The engine points the attention's output projection at
// the top of the layer's gate/up weights (the tiles the placement gives the last blocks): its calls are
// made while attention runs and leaves the memory idle. On an H100 the 1B step takes 1.282 ms with 12 MiB
// against 1.286 with 16 and 1.299 with 24; on an H200, 1.036 ms with 12 MiB against 1.043 with 8 and
// 1.037 with 16, and 1.023 against 1.043 with the first tile of every block's share (16 MiB) instead.
// It points each down projection but the last at the first bytes of the next layer's qkv weights: on an
// H100 1.268 ms with 4 MiB against 1.278 without, 1.273 with 8 and 1.284 with 12; on an H200 1.036 ms
// against 1.038 with 2 and 1.041 with 8, and 1.021 against 1.026 / 1.031 with each down tile asking for
// the first 16 / 32 KiB of the qkv tile its block runs next.
#include "llama.cuh"

struct LlamaResidArgs {
  const llama::bf16* w;   // [hidden][K] in tiles (llama.cuh): tile j is rows 8 j .. 8 j + 7
  const llama::bf16* in;  // [R][K]
  llama::bf16* x;         // [R][hidden]
  float* ss;              // [hidden / 8][kMaxRows]: partial sums of squares of the new x rows
  unsigned K;
  unsigned hidden;
  unsigned R;
  const char* pf;         // nullptr, or what to ask L2 for: pf_bytes, tile j's share at pf + j * share
  unsigned pf_bytes;      // a multiple of 16 x tiles
};

__device__ void llama_resid_tiles(const LlamaResidArgs& a, const gpuos::TileCtx& c, unsigned count) {
  using namespace llama;
  const Input in{a.in, nullptr, nullptr, a.K, a.R, 0.0f, 0u};
  if (a.pf && threadIdx.x == 0) {
    const unsigned share = a.pf_bytes / (a.hidden / kResidRows);
    prefetch_l2(a.pf + static_cast<unsigned long long>(c.tile + 1u - count) * share,
                static_cast<unsigned long long>(count) * share);
  }
  // Two rounds in flight a lane, both asked for before the await (llama::project).
  project<kResidRows, 2, 2>(c.tile + 1u - count, count, a.w, in, static_cast<float*>(c.smem),
                            [&](unsigned j, const float* out) {
    if (threadIdx.x >= kResidRows * kMaxRows) return;  // 8 x 8 threads, r-major: a row's 8 values in 8 lanes
    const unsigned i = threadIdx.x % kResidRows, r = threadIdx.x / kResidRows;
    float sq = 0.0f;
    if (r < a.R) {
      bf16* xp = a.x + static_cast<unsigned long long>(r) * a.hidden + j * kResidRows + i;
      const float v = rbf(bf2f(*xp) + rbf(out[i * kMaxRows + r]));
      *xp = f2bf(v);
      sq = v * v;
    }
#pragma unroll
    for (unsigned o = kResidRows / 2u; o > 0u; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    if (i == 0) a.ss[j * kMaxRows + r] = sq;
  });
}

GPUOS_OPERATOR_RANGES(llama_resid, LlamaResidArgs, llama_resid_tiles, GPUOS_OP_AWAITS_INPUTS)
