"""Where gpuos's step departs from transformers: the residual stream after each layer, and layer 0's
k/v cache, attention output and MLP activation, for one prefill step of 8 tokens."""
import sys, json
import torch
import gpuos
from llama_engine import Engine, HEAD_DIM
from transformers import LlamaForCausalLM

model_dir = sys.argv[1]
model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.bfloat16).cuda().eval()
V = model.config.vocab_size
ids = torch.randint(0, V, (1, 8), generator=torch.Generator().manual_seed(3)).cuda()
cap = {}
L0 = model.model.layers[0]
L0.self_attn.o_proj.register_forward_pre_hook(lambda m, a: cap.__setitem__("attn", a[0][0].clone()))
L0.mlp.down_proj.register_forward_pre_hook(lambda m, a: cap.__setitem__("mlp", a[0][0].clone()))
with torch.no_grad():
    out = model(ids, output_hidden_states=True, use_cache=True)
hs = [h[0].clone() for h in out.hidden_states]
pkv = out.past_key_values
try:
    k0, v0 = pkv.layers[0].keys[0], pkv.layers[0].values[0]
except Exception:
    k0, v0 = pkv[0][0][0], pkv[0][1][0]
ref_logits = out.logits[0].float()
del model
torch.cuda.empty_cache()

def rel(a, b):
    a, b = a.float(), b.float()
    return float((a - b).abs().max()), float((a - b).abs().max() / b.abs().max())

res = {}
with gpuos.Runtime() as rt:
    eng = Engine(rt, model_dir, slots=1, max_pos=64, keep_logits=True)
    L = eng.cfg.layers
    rows = [(int(t), i, 0, 0.0, 0) for i, t in enumerate(ids[0].tolist())]
    for n in [1, 2, 3, 4, 5, 6] + [1 + 5 * l for l in range(2, L + 1)] + [2 + 5 * L]:
        eng.step(rows, nodes=n)
        torch.cuda.synchronize()
        if n == 1:
            res["embed x vs hs0"] = rel(eng.x, hs[0])
        if n == 2:
            kvh = eng.cfg.kv_heads
            res["k cache l0"] = rel(eng.kv[0, 0, 0, :, :8], k0)
            res["v cache l0"] = rel(eng.kv[0, 1, 0, :, :8], v0)
        if n == 3:
            res["attn l0"] = rel(eng.attn, cap["attn"])
        if n == 4:
            pass
        if n == 5:
            res["mlp l0"] = rel(eng.mlp, cap["mlp"])
        if n >= 6 and (n - 1) % 5 == 0:
            l = (n - 1) // 5
            res[f"x after layer {l - 1} vs hs{l}"] = rel(eng.x, hs[l])
        if n == 2 + 5 * L:
            res["logits"] = rel(eng.logits, ref_logits)
    eng.close()
for k, v in res.items():
    print(f"{k:32s} max abs {v[0]:.4g}  rel {v[1]:.4g}")
