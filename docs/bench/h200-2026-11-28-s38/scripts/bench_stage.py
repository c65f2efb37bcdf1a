"""Milliseconds per generated token: gpuos against transformers eager and under CUDA graphs, one process.

    python bench_decode.py MODEL_DIR [--json OUT] [--new 128] [--batches 1,4,8]

A 32-token random prompt, then `--new` greedy tokens. Measured in this order, each after a warm-up:
1. the device-to-device copy bandwidth (torch, 1 GiB): bytes read + bytes written per second;
2. transformers eager with a static cache (generate, cache_implementation="static"): decode time per token
   = (time of prompt + new tokens - time of prompt + 1 token) / (new - 1);
3. the same model's decode step captured in one CUDA graph (static cache, torch.cuda.graph), replayed per
   token with the argmax inside the graph (falls back to torch.compile(mode="reduce-overhead"));
4. gpuos (examples/llama): the step graph per token, batch 1, 4 and 8 (one sequence per row), each step
   launched while the one before runs (its tokens taken on the device); also one step at a time (launch,
   wait, read the token, launch), which must choose the same tokens.
Each is also given as a fraction of the bandwidth bound: weight bytes read per token / the bandwidth of 1.
The targets (faster than the faster of 2 and 3, >= 70% of the bound at batch 1) end as TARGET lines and a
RESULT line; exit status 0 when both are met, 4 when not (bench/README.md). `--ops-dir` loads the
operators from another directory (a variant to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch


def copy_bandwidth(nbytes: int = 1 << 30, reps: int = 20) -> float:
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        b.copy_(a)
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t) / reps
    del a, b
    return 2 * nbytes / dt


def eager_static(model, prompt: torch.Tensor, new: int) -> float:
    def run(n: int) -> float:
        torch.cuda.synchronize()
        t = time.perf_counter()
        model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                       cache_implementation="static", pad_token_id=0)
        torch.cuda.synchronize()
        return time.perf_counter() - t

    run(4)
    return (min(run(new) for _ in range(2)) - min(run(1) for _ in range(2))) / (new - 1)


def _static_cache(model, batch: int, length: int):
    from transformers import StaticCache

    for kw in (dict(config=model.config, max_batch_size=batch, max_cache_len=length, device="cuda",
                    dtype=torch.bfloat16),
               dict(config=model.config, max_cache_len=length)):
        try:
            return StaticCache(**kw)
        except TypeError:
            continue
    raise RuntimeError("no StaticCache signature fits this transformers")


def cuda_graph(model, prompt: torch.Tensor, new: int) -> tuple[float, str]:
    """Decode time per token with the step in one CUDA graph."""
    P = prompt.shape[1]
    cache = _static_cache(model, prompt.shape[0], P + new + 8)
    with torch.no_grad():
        out = model(prompt, past_key_values=cache, cache_position=torch.arange(P, device="cuda"), use_cache=True)
        tok = out.logits[:, -1:].argmax(-1)
        pos = torch.tensor([P], device="cuda")

        def step():
            o = model(tok, past_key_values=cache, cache_position=pos, position_ids=pos.view(1, 1), use_cache=True)
            tok.copy_(o.logits[:, -1:].argmax(-1))
            pos.add_(1)

        how = "torch.cuda.graph"
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                step()
            run = g.replay
        except Exception as e:  # capture refused by this model code: the compiled path captures instead
            how = f"torch.compile(mode='reduce-overhead') (capture failed: {type(e).__name__}: {e})"
            torch.cuda.synchronize()
            run = torch.compile(step, mode="reduce-overhead", fullgraph=False)
            for _ in range(4):
                run()
        pos.fill_(P)
        for _ in range(3):
            run()
        pos.fill_(P)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(new):
            run()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) / new, how


def gpuos_decode(model_dir: str, batches: list[int], prompt_len: int, new: int, vocab: int,
                 ops_dir: str | None = None, chunk: int = 64, fold_norms: bool = True) -> dict:
    """Per batch: the decode steps launched one ahead (step_async, each row's token the one its row chose
    in the step before, on the device), then the same decode from the same prompts one step at a time
    (launch, wait, read, launch): both must choose the same tokens."""
    import gpuos
    from llama_engine import Engine, prev

    res = {}
    with gpuos.Runtime(stage_bytes=int(os.environ.get("STAGE", "0"))) as rt:
        eng = Engine(rt, model_dir, slots=max(batches), max_pos=max(64, -(-(prompt_len + new + 8) // 64) * 64),
                     ops_dir=ops_dir, chunk=chunk, fold_norms=fold_norms)
        g = torch.Generator().manual_seed(0)
        for B in batches:
            eng.graph(B)
            prompts = [torch.randint(0, vocab, (prompt_len,), generator=g).tolist() for _ in range(B)]

            def ahead() -> tuple[float, list]:
                first = [eng.prefill(p, slot=b) for b, p in enumerate(prompts)]
                out = [first]
                t = time.perf_counter()
                pend = eng.step_async([(first[b], prompt_len, b, 0.0, 0) for b in range(B)])
                for s in range(1, new):
                    nxt = eng.step_async([(prev(b), prompt_len + s, b, 0.0, 0) for b in range(B)])
                    out.append(pend.result())
                    pend = nxt
                out.append(pend.result())
                return (time.perf_counter() - t) / new, out

            def one_by_one() -> tuple[float, list]:
                nxt = [eng.prefill(p, slot=b) for b, p in enumerate(prompts)]
                out = [nxt]
                t = time.perf_counter()
                for s in range(new):
                    nxt = eng.step([(nxt[b], prompt_len + s, b, 0.0, 0) for b in range(B)])
                    out.append(nxt)
                return (time.perf_counter() - t) / new, out

            ahead()  # warm-up
            dt, toks = ahead()
            dt_sync, toks_sync = one_by_one()
            if toks != toks_sync:
                raise RuntimeError(f"batch {B}: the steps launched ahead chose other tokens than one by one")
            res[B] = {"ms_per_step": dt * 1e3, "tokens_per_s": B / dt, "ms_per_step_one_by_one": dt_sync * 1e3}
            print(f"gpuos batch {B}:", res[B], flush=True)
        res["stats"] = rt.stats()
        res["device"] = rt.device_info()
        eng.close()
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--json")
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--batches", default="1,4,8")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--ops-dir", help="the operators' directory (default: ops/ beside this file)")
    ap.add_argument("--chunk", type=int, default=64, help="attention positions per tile (Engine chunk)")
    ap.add_argument("--no-fold", action="store_true", help="the operators multiply by the RMSNorms' gains "
                    "(Engine fold_norms=False)")
    a = ap.parse_args()
    from llama_engine import Config

    cfg = Config.from_json(f"{a.model_dir}/config.json")
    batches = [int(b) for b in a.batches.split(",")]
    r = {"device": torch.cuda.get_device_name(), "weight_bytes_per_token": cfg.weight_bytes_per_step(),
         "prompt_len": a.prompt_len, "new_tokens": a.new}
    bw = copy_bandwidth()
    r["copy_bandwidth_GBps"] = bw / 1e9
    bound_ms = cfg.weight_bytes_per_step() / bw * 1e3
    r["bandwidth_bound_ms_per_token"] = bound_ms
    print("copy bandwidth", r["copy_bandwidth_GBps"], "GB/s; bound", bound_ms, "ms/token", flush=True)
    if not a.skip_torch:
        from transformers import LlamaForCausalLM

        model = LlamaForCausalLM.from_pretrained(a.model_dir, torch_dtype=torch.bfloat16).cuda().eval()
        prompt = torch.randint(0, cfg.vocab, (1, a.prompt_len), device="cuda")
        with torch.no_grad():
            e = eager_static(model, prompt, a.new)
        r["transformers_eager_static_ms"] = e * 1e3
        print("eager static cache:", r["transformers_eager_static_ms"], "ms/token", flush=True)
        cg, how = cuda_graph(model, prompt, a.new)
        r["cuda_graph_ms"] = cg * 1e3
        r["cuda_graph_how"] = how
        print("cuda graph:", r["cuda_graph_ms"], "ms/token via", how, flush=True)
        del model
        torch.cuda.empty_cache()
    g = gpuos_decode(a.model_dir, batches, a.prompt_len, a.new, cfg.vocab, a.ops_dir, a.chunk, not a.no_fold)
    r["gpuos"] = {str(k): v for k, v in g.items() if isinstance(k, int)}
    r["gpuos_runtime"] = {"stats": g["stats"], "device": g["device"]}
    r["gpuos_ms"] = g[1]["ms_per_step"] if 1 in g else None
    for k in ("transformers_eager_static_ms", "cuda_graph_ms", "gpuos_ms"):
        if r.get(k):
            r[k.replace("_ms", "_fraction_of_bound")] = bound_ms / r[k]
    r["verdicts"] = verdicts(r)
    text = json.dumps(r, indent=1, default=str)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text)
    print(text)
    for v in r["verdicts"]:
        print(f"TARGET {'PASS' if v['met'] else 'MISS'}  {v['what']} = {v['value']} (target {v['rule']})")
    met = all(v["met"] for v in r["verdicts"])
    print(f"RESULT bench_decode: {'every target met' if met else 'a target missed or not measured'}")
    return 0 if met else 4  # the exit statuses of bench/README.md


def verdicts(r: dict) -> list[dict]:
    """The issue's targets at batch 1: faster than the faster torch baseline of the same run (the CUDA
    graph or eager, whichever won), and at least 70% of the bandwidth bound. A target whose numbers were
    not measured is not met."""
    g = r.get("gpuos_ms")
    base = [v for v in (r.get("cuda_graph_ms"), r.get("transformers_eager_static_ms")) if v]
    speedup = min(base) / g if g and base else None
    frac = r.get("gpuos_fraction_of_bound")
    return [
        {"what": "faster torch baseline (CUDA graph, eager) ms / gpuos ms per token, batch 1", "rule": "> 1",
         "value": speedup,
         "met": speedup is not None and speedup > 1.0},
        {"what": "gpuos fraction of the bandwidth bound, batch 1", "rule": ">= 0.70", "value": frac,
         "met": frac is not None and frac >= 0.70},
    ]


if __name__ == "__main__":
    sys.exit(main())
