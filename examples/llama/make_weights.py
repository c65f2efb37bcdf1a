"""Random, seeded Llama weights made by transformers (no download) and saved as safetensors.

    python make_weights.py OUT_DIR --preset tiny|tiny-g8|1b [--seed N]

The model is LlamaForCausalLM with transformers' own initialization under torch.manual_seed(seed); the
RMSNorm gains, which that initialization sets to 1, are drawn from N(1, 0.1) so that they matter. Saved
with save_pretrained (config.json, model.safetensors) in bfloat16.
"""

from __future__ import annotations

import argparse

LLAMA3_ROPE = {"rope_type": "llama3", "factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
               "original_max_position_embeddings": 8192}
PRESETS = {
    # The shape of Llama-3.2-1B.
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256),
    # For tests: every mechanism of the 1b shape (GQA, llama3 rope, tied head), small.
    "tiny": dict(hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=1024),
    # For tests: the most query heads per KV head the attention operator takes (8).
    "tiny-g8": dict(hidden_size=512, intermediate_size=512, num_hidden_layers=2, num_attention_heads=8,
                    num_key_value_heads=1, vocab_size=1024),
}


def make(out_dir: str, preset: str = "tiny", seed: int = 0) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**PRESETS[preset], head_dim=64, rms_norm_eps=1e-5, rope_theta=500000.0,
                      rope_scaling=dict(LLAMA3_ROPE), max_position_embeddings=131072, tie_word_embeddings=True,
                      bos_token_id=None, eos_token_id=None, pad_token_id=None)
    torch.manual_seed(seed)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(1.0, 0.1)
    model.to(torch.bfloat16).save_pretrained(out_dir, safe_serialization=True, max_shard_size="100GB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    make(a.out_dir, a.preset, a.seed)


if __name__ == "__main__":
    main()
