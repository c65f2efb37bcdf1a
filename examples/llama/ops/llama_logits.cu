// llama_logits: the LM head after the final RMSNorm, and the choice of each row's next token. Each tile
// computes 16 logits per row (rounded to bf16, as the reference's bf16 head), optionally stores them,
// and folds its best candidate into keys[r] with one 64-bit atomic max: (orderable bits of the score)
// << 32 | ~index, so ties go to the lowest index as torch.argmax does. The score is the logit (greedy,
// temp <= 0) or logit / temp + Gumbel noise from a hash of (seed, position, index): a sample from the
// softmax at that temperature. The finish function hands each row's token to the host (`out`, mapped
// memory) and to the next step (`last`, llama_embed) and clears the keys for the next step.
// tiles = vocab / 16.
#include "llama.cuh"

struct LlamaLogitsArgs {
  const llama::bf16* w;     // [vocab][hidden] (the tied embedding) in tiles (llama.cuh):
                            // tile j is rows 16 j .. 16 j + 15
  const llama::bf16* x;     // [R][hidden]
  const float* ss;          // [hidden / kResidRows][kMaxRows]: partial sums of squares
  const llama::bf16* gain;  // model.norm.weight
  float* logits;            // [R][vocab], or nullptr: not stored
  unsigned long long* keys; // [kMaxRows], zero between steps
  int* out;                 // [kMaxRows], mapped host memory: the chosen tokens (-1: unused row)
  int* last;                // [kMaxRows]: the same, for the next step
  const llama::Row* rows;
  const llama::Dims* dims;
  unsigned R;
};

namespace {

__device__ __forceinline__ unsigned hash3(unsigned a, unsigned b, unsigned c) {
  unsigned h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u ^ (c + 0x165667B1u) * 0xC2B2AE3Du;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  h *= 0x846CA68Bu;
  h ^= h >> 16;
  return h;
}

__device__ __forceinline__ unsigned long long key_of(float score, unsigned index) {
  unsigned u = __float_as_uint(score);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(u) << 32) | (0xffffffffu - index);
}

}  // namespace

__device__ void llama_logits_tiles(const LlamaLogitsArgs& a, const gpuos::TileCtx& c, unsigned count,
                                   gpuos::TileRuns& runs) {
  using namespace llama;
  const unsigned H = a.dims->hidden, V = a.dims->vocab;
  const Input in{a.x, a.ss, a.gain, H, a.R, a.dims->eps, H / kResidRows};
  // Two rounds in flight a lane (llama::project): the head streams 525 MB for the 1B shape. Where its tiles
  // are claimed (a block's share in ~12 claims a step) the stream goes on from one claim to the next; in
  // fixed shares (264 blocks) a block's share is one run.
  project<16, 2>(c.tile + 1u - count, count, a.w, in, static_cast<float*>(c.smem), [&](unsigned j, const float* out) {
    if (threadIdx.x >= 128u) return;
    const unsigned i = threadIdx.x & 15u, r = threadIdx.x >> 4, index = j * 16u + i;
    unsigned long long key = 0ull;
    if (r < a.R) {
      const float logit = rbf(out[i * kMaxRows + r]);
      if (a.logits) a.logits[static_cast<unsigned long long>(r) * V + index] = logit;
      const Row row = a.rows[r];
      float score = logit;
      if (row.temp > 0.0f) {
        const float u = (static_cast<float>(hash3(row.seed, static_cast<unsigned>(row.pos), index) >> 8) + 0.5f) *
                        (1.0f / 16777216.0f);
        score = logit / row.temp - logf(-logf(u));
      }
      key = key_of(score, index);
    }
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) {
      const unsigned long long other = __shfl_xor_sync(0xffffffffu, key, o);
      key = other > key ? other : key;
    }
    if (i == 0 && r < a.R) atomicMax(a.keys + r, key);
  }, NoReady{}, &runs);
}

__device__ void llama_logits_finish(const LlamaLogitsArgs& a, const gpuos::TileCtx&) {
  const unsigned r = threadIdx.x;
  if (r >= llama::kMaxRows) return;
  const unsigned long long key = atomicExch(a.keys + r, 0ull);
  int tok = -1;
  if (r < a.R && a.rows[r].slot >= 0 && key != 0ull) tok = static_cast<int>(0xffffffffu - static_cast<unsigned>(key));
  a.out[r] = tok;
  a.last[r] = tok;
}

GPUOS_OPERATOR_STREAMS_WITH_FINISH(llama_logits, LlamaLogitsArgs, llama_logits_tiles, llama_logits_finish,
                                   GPUOS_OP_HOST_WRITES | GPUOS_OP_AWAITS_INPUTS)
