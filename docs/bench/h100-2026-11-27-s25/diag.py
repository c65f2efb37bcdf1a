"""Diagnostic: per-step logits of fused (fuse_limit 16) vs attention nodes (0), twice each, R = 1 and 3."""
import os, sys, torch, gpuos
from llama_engine import Engine
from make_weights import make

d = "/tmp/tiny"
MAIN = len(sys.argv) > 1 and sys.argv[1] == "main"
if not os.path.exists(d + "/config.json"):
    make(d, "tiny", seed=0)

def run(limit, R3):
    prompts = [[(11 * j + 5 * i) % 1024 for j in range(40 - 7 * i)] for i in range(2)]
    with gpuos.Runtime() as rt:
        kw = {} if MAIN else {"fuse_limit": limit}
        eng = Engine(rt, d, slots=2, max_pos=192, keep_logits=True, **kw)
        nxt = [eng.prefill(p, slot=i) for i, p in enumerate(prompts)]
        pre = eng.logits[:8].clone().cpu()
        out, toks = [], []
        for s in range(30):
            if R3:
                rows = [(nxt[i], len(p) + s, i, 0.0, 0) for i, p in enumerate(prompts)] + [(3, 0, -1, 0.0, 0)]
            else:
                rows = [(nxt[0], len(prompts[0]) + s, 0, 0.0, 0)]
            nxt = eng.step(rows)[:2] + [0]
            out.append(eng.logits[:2].cpu())
            toks.append(list(nxt[:2]))
        keys = sorted(eng._graphs)
        eng.close()
    return torch.stack(out).cpu(), pre, keys, toks

for R3 in (False, True):
    res = {}
    for name, limit in (("f0a", 0), ("f0b", 0), ("f0c", 0)) + ((("f16a", 16), ("f16b", 16)) if not MAIN else ()):
        res[name] = run(limit, R3)
    print("R3" if R3 else "R1", "graphs f0:", res["f0a"][2])
    for a, b in (("f0a", "f0b"), ("f0a", "f0c")) + ((("f16a", "f16b"), ("f0a", "f16a")) if not MAIN else ()):
        dif = (res[a][0] - res[b][0]).abs().amax(dim=(1, 2))
        pdif = (res[a][1] - res[b][1]).abs().max().item()
        print(f"  {a} vs {b}: prefill-last-logits diff {pdif:.4g}; per step max diff:",
              " ".join(f"{x:.3g}" for x in dif.tolist()))
        print("    first differing token step:", next((i for i, (x, y) in enumerate(zip(res[a][3], res[b][3])) if x != y), None))
