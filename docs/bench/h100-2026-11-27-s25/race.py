"""Where a step's results vary between identical runs: the same step repeated on the same state, cut after
n nodes, its buffers compared with the first run's."""
import sys, torch, gpuos
from llama_engine import Engine

d = "/tmp/tiny"
with gpuos.Runtime() as rt:
    eng = Engine(rt, d, slots=2, max_pos=192, keep_logits=True, **({"fuse_limit": 0} if "f0" in sys.argv else {}))
    prompts = [[(11 * j + 5 * i) % 1024 for j in range(40 - 7 * i)] for i in range(2)]
    nxt = [eng.prefill(p, slot=i) for i, p in enumerate(prompts)]
    for R3 in (False, True):
        rows = [(nxt[0], 40, 0, 0.0, 0), (nxt[1], 33, 1, 0.0, 0)] + ([(3, 0, -1, 0.0, 0)] if R3 else [])
        R = len(rows)
        bufs = lambda: {"x": eng.x[:R].clone(), "q": eng.q[:R].clone(), "attn": eng.attn[:R].clone(),
                        "mlp": eng.mlp[:R].clone(), "kv": eng.kv.clone(), "ss": eng.ss.clone(),
                        "logits": eng.logits[:R].clone()}
        L = eng.cfg.layers
        for n in [2, 3, 4, 5, 6, 7, 11, 2 + 5 * L, None]:
            ref, bad = None, {}
            for t in range(40):
                eng.step(rows, nodes=n)
                b = bufs()
                if ref is None:
                    ref = b
                    continue
                for k in b:
                    if not torch.equal(b[k], ref[k]):
                        bad[k] = bad.get(k, 0) + 1
            print(f"R={R} nodes={n}: buffers differing from the first run (of 39 repeats): {bad}", flush=True)
    eng.close()
