// llama_swiglu: the MLP's gate and up projections with RMSNorm on the fly and the SwiGLU between them:
// out[r][n] = bf16(silu(bf16(gate[n] . in[r])) * bf16(up[n] . in[r])), every step rounded to bf16 as the
// reference rounds. A tile computes 8 features: their gate rows and their up rows. tiles = inter / 8; a
// block's consecutive tiles stream in one call (project).
#include "llama.cuh"

struct LlamaSwigluArgs {
  const llama::bf16* w;     // tiles (llama.cuh): tile j is gate rows 8j..8j+7, then up rows 8j..8j+7
  const llama::bf16* x;     // [R][hidden]
  const float* ss;          // [hidden / kResidRows][kMaxRows]: partial sums of squares
  const llama::bf16* gain;  // post_attention_layernorm.weight
  llama::bf16* out;         // [R][inter]
  const llama::Dims* dims;
  unsigned R;
};

__device__ void llama_swiglu_tiles(const LlamaSwigluArgs& a, const gpuos::TileCtx& c, unsigned count) {
  using namespace llama;
  const unsigned H = a.dims->hidden, I = a.dims->inter;
  const Input in{a.x, a.ss, a.gain, H, a.R, a.dims->eps, H / kResidRows};
  // Two rounds in flight a lane, the second asked for after the await (llama::project).
  project<16, 2, 1>(c.tile + 1u - count, count, a.w, in, static_cast<float*>(c.smem), [&](unsigned j, const float* out) {
    const unsigned i = threadIdx.x & 7u, r = threadIdx.x >> 3;
    if (r >= a.R) return;
    const float gv = rbf(out[i * kMaxRows + r]), uv = rbf(out[(i + 8u) * kMaxRows + r]);
    const float act = rbf(gv / (1.0f + expf(-gv)));
    a.out[static_cast<unsigned long long>(r) * I + j * 8u + i] = f2bf(act * uv);
  });
}

GPUOS_OPERATOR_RANGES(llama_swiglu, LlamaSwigluArgs, llama_swiglu_tiles, GPUOS_OP_AWAITS_INPUTS)
