"""Where a decode step's time goes, seen from the device: every tile's start and end on the GPU clock.

    python trace_step.py MODEL_DIR [ROWS] [--json OUT]

The operators are loaded from a traced copy of ops/ (written to a temporary folder): each tile function is
wrapped so that thread 0 notes the global timer when the tile starts and after its last thread is done,
with the node's identity (its first two argument words), the tile, the SM and the block, into a buffer
in device memory whose address the copy is compiled with. A step is then a set of nodes, each with its
start (its first tile's), its end (its last tile's), and for the blocks that run it, how long after the
node before it ended they started. The nodes are taken in the order they completed (a step's nodes form
one chain, so that is their dependency order even when an operator that awaits its inputs starts a
node's tiles before the node before it ends). Printed per operator, medians over the layers, with the
step's time on the host beside it.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import gpuos
from llama_engine import Engine, OPS_DIR, OP_NAMES

MAX_BLOCKS, PER_BLOCK = 4096, 256  # records per block and step: a step runs < 200 tiles on a block
KINDS = {name: i for i, name in enumerate(OP_NAMES)}

TRACE_H = r"""
#define LLAMA_TRACE_BUF {addr}ull
namespace llama {{
__device__ __forceinline__ unsigned long long gtime() {{
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}}
__device__ __forceinline__ unsigned smid() {{
  unsigned s;
  asm volatile("mov.u32 %0, %smid;" : "=r"(s));
  return s;
}}
}}  // namespace llama
#define LLAMA_TRACE_RECORD(KIND, TILE, COUNT)                                                          \
  __syncthreads();                                                                                      \
  if (threadIdx.x == 0) {{                                                                               \
    unsigned* count = reinterpret_cast<unsigned*>(LLAMA_TRACE_BUF);                                     \
    const unsigned i = count[blockIdx.x]++;                                                             \
    if (i < {per_block}u) {{                                                                             \
      const unsigned long long* w = reinterpret_cast<const unsigned long long*>(&a);                    \
      unsigned long long* r = reinterpret_cast<unsigned long long*>(LLAMA_TRACE_BUF + {rec_off}ull) +   \
                              (static_cast<unsigned long long>(blockIdx.x) * {per_block}u + i) * 4u;    \
      r[1] = (static_cast<unsigned long long>(KIND) << 56) |                                            \
             (static_cast<unsigned long long>(llama::smid()) << 40) |                                   \
             (static_cast<unsigned long long>(blockIdx.x) << 24) |                                      \
             (static_cast<unsigned long long>((COUNT) < 255u ? (COUNT) : 255u) << 16) | ((TILE) & 0xFFFFu); \
      /* the await's stamp if this call made one (shared memory starts undefined: a stamp from   */   \
      /* before the call is not this call's)                                                       */   \
      const unsigned long long aw = llama::trace_awaited();                                             \
      const unsigned long long t1 = llama::gtime();                                                     \
      const unsigned long long start = aw >= t0 && aw <= t1 ? aw : t0;                                  \
      /* the node's key in the low half, the call's entry to its start (ns) in the high half      */   \
      r[0] = ((w[0] * 0x9E3779B97F4A7C15ull + w[1]) & 0xFFFFFFFFull) | ((start - t0) << 32);           \
      r[2] = start;                                                                                     \
      r[3] = t1;                                                                                        \
    }}                                                                                                   \
    llama::trace_awaited() = 0ull;                                                                      \
  }}
#define LLAMA_TRACED(FN, ARGS, KIND)                                                                   \
  __device__ void FN##_traced(const ARGS& a, const gpuos::TileCtx& c) {{                                 \
    const unsigned long long t0 = llama::gtime();                                                       \
    FN(a, c);                                                                                           \
    LLAMA_TRACE_RECORD(KIND, c.tile, 1u)                                                                \
  }}
#define LLAMA_TRACED_RANGES(FN, ARGS, KIND)                                                            \
  __device__ void FN##_traced(const ARGS& a, const gpuos::TileCtx& c, unsigned n) {{                     \
    const unsigned long long t0 = llama::gtime();                                                       \
    FN(a, c, n);                                                                                        \
    LLAMA_TRACE_RECORD(KIND, c.tile, n)                                                                 \
  }}
#define LLAMA_TRACED_STREAMS(FN, ARGS, KIND)                                                           \
  __device__ void FN##_traced(const ARGS& a, const gpuos::TileCtx& c, unsigned n, gpuos::TileRuns& runs) {{ \
    const unsigned long long t0 = llama::gtime();                                                       \
    const unsigned before = runs.ran();                                                                 \
    FN(a, c, n, runs);                                                                                  \
    LLAMA_TRACE_RECORD(KIND, c.tile, n + runs.ran() - before)                                           \
  }}
"""


# Before project (the top of llama.cuh): when a call's inputs arrived (gpuos::await_inputs returned),
# which a record takes as its start: a call of an awaiting operator starts before the node before ends.
TRACE_AWAITED_H = r"""
namespace llama {
__device__ __forceinline__ unsigned long long& trace_awaited() {
  __shared__ unsigned long long t;
  return t;
}
}  // namespace llama
"""
AWAIT = "if (!gpuos::await_inputs()) return;"
AWAITED = AWAIT + """
  if (threadIdx.x == 0) asm volatile("mov.u64 %0, %globaltimer;" : "=l"(llama::trace_awaited()));"""


CLOCK_OP = r"""
#include "gpuos/op.cuh"
struct TraceClockArgs { unsigned long long* out; };  // mapped host memory
__device__ void trace_clock_tile(const TraceClockArgs& a, const gpuos::TileCtx&) {
  if (threadIdx.x == 0) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(a.out), "l"(t) : "memory");
  }
}
GPUOS_OPERATOR_FLAGS(trace_clock, TraceClockArgs, trace_clock_tile, GPUOS_OP_HOST_WRITES)
"""


def clock_offset(rt, rounds: int = 30) -> int:
    """Host time.time_ns() minus the device's global timer, in ns: a tile writes the timer into mapped
    memory and the host notes when it sees it; the smallest difference over `rounds` (it includes the
    write's trip over the bus, ~1 us)."""
    import struct as st
    box = torch.zeros(1, dtype=torch.int64).pin_memory()
    view = box.numpy()
    task = gpuos.Task(rt.op_id("trace_clock"), 1, st.pack("<Q", box.data_ptr()))
    best = None
    for _ in range(rounds):
        view[0] = 0
        t = rt.submit(task)
        give_up = time.monotonic() + 10.0
        while view[0] == 0:
            if time.monotonic() > give_up:
                raise TimeoutError("the clock task's timer never arrived")
        seen = time.time_ns()
        rt.wait(t)
        d = seen - int(view[0])
        best = d if best is None else min(best, d)
    return best


def traced_ops(buf: torch.Tensor, dst: Path, src: Path = OPS_DIR) -> Path:
    """A copy of the operators in `src` that records each call (a tile, or a range of tiles) into `buf`."""
    rec_off = MAX_BLOCKS * 4 * 8  # bytes: the counts take the buffer's first MAX_BLOCKS * 4 words
    shutil.copytree(src, dst, dirs_exist_ok=True)
    h = dst / "llama.cuh"
    text = h.read_text()
    inc = '#include "gpuos/op.cuh"\n'
    if text.count(AWAIT) != 1 or inc not in text:
        raise RuntimeError(f"{h}: expected one '{AWAIT}' and the include of gpuos/op.cuh")
    text = text.replace(inc, inc + TRACE_AWAITED_H).replace(AWAIT, AWAITED)
    h.write_text(text + TRACE_H.format(addr=buf.data_ptr(), per_block=PER_BLOCK, rec_off=rec_off))
    for name in OP_NAMES:
        f = dst / f"{name}.cu"
        src = f.read_text()
        m = re.search(r"GPUOS_OPERATOR(\w*)\((\w+), (\w+), (\w+)", src)
        macro, op, args, fn = m.groups()
        traced = ("LLAMA_TRACED_RANGES" if macro.startswith("_RANGES") else
                  "LLAMA_TRACED_STREAMS" if macro.startswith("_STREAMS") else "LLAMA_TRACED")
        src = src[: m.start()] + f"{traced}({fn}, {args}, {KINDS[name]})\n" + \
            f"GPUOS_OPERATOR{macro}({op}, {args}, {fn}_traced" + src[m.end():]
        f.write_text(src)
    return dst


def read_trace(buf: torch.Tensor) -> np.ndarray:
    """Records of the step just run: [n][5] uint64 (key, kind|sm|block|tile, start, end, start - entry), the
    start being when the call's inputs arrived for an awaiting operator, else its entry."""
    torch.cuda.synchronize()
    raw = buf.cpu().numpy()
    counts = raw[: MAX_BLOCKS * 4].view(np.uint32)[:MAX_BLOCKS]
    recs = raw[MAX_BLOCKS * 4:].view(np.uint64).reshape(MAX_BLOCKS, PER_BLOCK, 4)
    if counts.max() > PER_BLOCK:
        raise RuntimeError(f"a block ran {counts.max()} tiles, the trace holds {PER_BLOCK}")
    recs = np.concatenate([recs[b, : counts[b]] for b in range(MAX_BLOCKS) if counts[b]])
    return np.column_stack([recs[:, 0] & np.uint64(0xFFFFFFFF), recs[:, 1:4], recs[:, 0] >> np.uint64(32)])


def nodes_of(recs: np.ndarray) -> list[dict]:
    """The step's nodes in the order they completed: kind, tiles, blocks, start, end (ns from the step's
    first tile), each block's first start and last end, its number of calls, and the gaps between its
    consecutive calls (one call's end to the next one's start)."""
    t_base = int(recs[:, 2].min())
    out = []
    for key in np.unique(recs[:, 0]):
        r = recs[recs[:, 0] == key]
        kind = int(r[0, 1] >> 56)
        blocks = (r[:, 1] >> 24) & 0xFFFF
        firsts, lasts, calls, gaps = [], [], [], []
        for b in np.unique(blocks):
            c = r[blocks == b].astype(np.int64)
            c = c[np.argsort(c[:, 2])]
            firsts.append(int(c[0, 2]))
            lasts.append(int(c[:, 3].max()))
            calls.append(len(c))
            gaps.extend(c[1:, 2] - c[:-1, 3])
        counts = ((r[:, 1] >> 16) & 0xFF).astype(np.int64)  # tiles of the record's call (a range's)
        out.append(dict(kind=OP_NAMES[kind], tiles=int(counts.sum()), blocks=len(firsts),
                        start=int(r[:, 2].min()) - t_base, end=int(r[:, 3].max()) - t_base,
                        firsts=np.array(firsts) - t_base, lasts=np.array(lasts) - t_base,
                        tile_ns=(r[:, 3] - r[:, 2]).astype(np.int64) // np.maximum(counts, 1),
                        calls=np.array(calls), gaps=np.array(gaps, dtype=np.int64)))
    out.sort(key=lambda n: n["end"])
    return out


def summarize(nodes: list[dict]) -> dict:
    """Per operator kind (resid split into o_proj and down by position): medians over the layers."""
    rows = {}
    prev_end = None
    names = []
    for i, n in enumerate(nodes):
        name = n["kind"]
        if name == "llama_resid":
            name = "o_proj" if nodes[i - 1]["kind"] == "llama_attn" else "down"
        names.append(name)
        d = rows.setdefault(name, dict(dt=[], span=[], gap=[], first_p50=[], first_max=[], early=[], last_spread=[],
                                       tile_p50=[], tile_max=[], calls=[], call_gap=[], tiles=n["tiles"],
                                       blocks=n["blocks"]))
        d["span"].append((n["end"] - n["start"]) / 1e3)
        if prev_end is not None:
            d["dt"].append((n["end"] - prev_end) / 1e3)
            d["gap"].append((n["start"] - prev_end) / 1e3)
            d["first_p50"].append((np.median(n["firsts"]) - prev_end) / 1e3)
            d["first_max"].append((n["firsts"].max() - prev_end) / 1e3)
            d["early"].append(int((n["firsts"] < prev_end).sum()))  # blocks that started before it ended
        d["last_spread"].append((n["end"] - np.median(n["lasts"])) / 1e3)
        d["tile_p50"].append(np.median(n["tile_ns"]) / 1e3)
        d["tile_max"].append(n["tile_ns"].max() / 1e3)
        d["calls"].append(float(np.median(n["calls"])))
        d["call_gap"].append(np.median(n["gaps"]) / 1e3 if len(n["gaps"]) else 0.0)
        prev_end = n["end"]
    summary = {k: {m: (statistics.median(v) if isinstance(v, list) and v else v) for m, v in d.items()}
               for k, d in rows.items()}
    summary["_step_us"] = (nodes[-1]["end"] - min(n["start"] for n in nodes)) / 1e3
    summary["_order"] = names
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("rows", nargs="?", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--pos", type=int, default=40, help="the rows' position (attention's positions are 0..pos)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--ops", default=str(OPS_DIR), help="the operators to trace (default: ops/)")
    ap.add_argument("--options", default="{}", help="gpuos.Runtime keyword arguments, as JSON")
    ap.add_argument("--engine", default="{}", help="Engine keyword arguments (e.g. chunk), as JSON")
    ap.add_argument("--raw", default=None, help="save the last step's tile records here (.npy: [n][5] uint64 "
                    "key, kind|sm|block|tile, start, end, start - entry)")
    a = ap.parse_args()
    buf = torch.zeros(MAX_BLOCKS * 4 + MAX_BLOCKS * PER_BLOCK * 4, dtype=torch.int64, device="cuda")
    with tempfile.TemporaryDirectory() as tmp, gpuos.Runtime(**json.loads(a.options)) as rt:
        eng = Engine(rt, a.model_dir, ops_dir=traced_ops(buf, Path(tmp), Path(a.ops)),
                     **{"slots": 8, "max_pos": 1024, **json.loads(a.engine)})
        rt.load_operator_source("trace_clock", CLOCK_OP)
        rows = [(1, a.pos + i, i, 0.0, 0) for i in range(a.rows)]
        for _ in range(10):
            eng.step(rows)
        results = []
        for s in range(a.steps):
            buf.zero_()
            torch.cuda.synchronize()
            t0 = time.time_ns()
            eng.step(rows)
            t1 = time.time_ns()
            recs = read_trace(buf)
            summ = summarize(nodes_of(recs))
            summ["_host_us"] = (t1 - t0) / 1e3
            # How long after the call the first tile started, and before the return the last one ended,
            # on the host's clock (the device's timer moved onto it by the offset measured now).
            off = clock_offset(rt)
            summ["_launch_to_first_us"] = (int(recs[:, 2].min()) + off - t0) / 1e3
            summ["_last_to_return_us"] = (t1 - int(recs[:, 3].max()) - off) / 1e3
            results.append(summ)
        eng.close()
    if a.raw:
        np.save(a.raw, recs)
    last = results[-1]
    print(f"rows {a.rows}: step on the device {last['_step_us']:.1f} us (host round trip {last['_host_us']:.1f} us); "
          f"over {a.steps} steps: device {[round(r['_step_us'], 1) for r in results]}")
    print(f"call to first tile {[round(r['_launch_to_first_us'], 1) for r in results]} us, "
          f"last tile to return {[round(r['_last_to_return_us'], 1) for r in results]} us")
    print(f"{'node':8s} {'tiles':>5s} {'blocks':>6s} {'dt':>6s} {'span':>7s} {'gap':>6s} {'1st p50':>7s} "
          f"{'1st max':>7s} {'early':>5s} {'tail':>6s} {'tile p50':>8s} {'tile max':>8s} {'calls':>5s} {'cgap':>5s}   "
          f"(us, medians over the layers; dt: from the node before's end to this one's; a call of an awaiting "
          f"operator starts when its inputs arrived; early: blocks that started before the node before ended; "
          f"calls: a block's calls of the node; cgap: from one of them's end to the next one's start)")
    for k in ("llama_embed", "llama_qkv", "llama_attn", "o_proj", "llama_swiglu", "down", "llama_logits"):
        d = last.get(k)
        if not d:
            continue
        print(f"{k.replace('llama_', ''):8s} {d['tiles']:5d} {d['blocks']:6d} {d['dt'] or 0:6.1f} {d['span']:7.1f} "
              f"{d['gap'] or 0:6.1f} {d['first_p50'] or 0:7.1f} {d['first_max'] or 0:7.1f} {d['early'] or 0:5.0f} "
              f"{d['last_spread']:6.1f} {d['tile_p50']:8.1f} {d['tile_max']:8.1f} {d['calls']:5.0f} {d['call_gap']:5.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=float))


if __name__ == "__main__":
    main()
