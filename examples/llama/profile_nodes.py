"""Time of a step truncated after n nodes (launch + wait, median of reps), for n = 1..; the differences
give each node's cost in the chain (its work and the hand-over from the node before)."""
import sys, json, time, statistics
import torch
import gpuos
from llama_engine import Engine

model_dir, R = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
opts = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
ops_dir = opts.pop("ops_dir", None)
only = opts.pop("points", None)  # e.g. [82]: just the whole step
with gpuos.Runtime(**opts) as rt:
    eng = Engine(rt, model_dir, slots=8, max_pos=256, ops_dir=ops_dir)
    L = eng.cfg.layers
    rows = [(1, 40 + i, i, 0.0, 0) for i in range(R)]
    points = only or list(range(1, 12)) + [1 + 5 * l for l in range(3, L + 1)] + [2 + 5 * L]
    res = {}
    for n in points:
        eng.graph(R, n)
        ts = []
        for _ in range(25):
            t = time.perf_counter()
            eng.step(rows, nodes=n)
            ts.append(time.perf_counter() - t)
        res[n] = statistics.median(ts[5:]) * 1e6
    names = ["embed"] + ["qkv", "attn", "o_proj", "swiglu", "down"] * L + ["logits"]
    prev = 0.0
    for n in points:
        print(f"nodes {n:3d} ({names[n-1]:7s}): {res[n]:8.1f} us  (+{res[n]-prev:7.1f})")
        prev = res[n]
    # Each operator alone: one task submitted and waited for (latency), and 40 back to back (throughput).
    tasks = eng._tasks(R)
    for i, name in ((1, "qkv"), (2, "attn"), (3, "o_proj"), (4, "swiglu"), (5, "down"), (len(tasks) - 1, "logits")):
        t = tasks[i]
        lat = []
        for _ in range(20):
            t0 = time.perf_counter()
            rt.wait(rt.submit(t))
            lat.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        first = rt.submit_batch([t] * 40)
        rt.wait(first + 39)
        thr = (time.perf_counter() - t0) / 40
        print(f"{name:7s} alone: {statistics.median(lat[5:]) * 1e6:7.1f} us round trip, {thr * 1e6:7.1f} us each in a batch of 40")
    print("stats", rt.stats())
    eng.close()
