"""A Llama-architecture decoder served by gpuos: weights from safetensors, one task graph per step.

A *step* processes up to 8 rows; a row is one token of one sequence: (token, position, KV-cache slot,
temperature, seed). The step's graph is a chain of nodes, each a gpuos task of many tiles spread over the
resident kernel's grid:

    embed -> [qkv -> attn -> o_proj -> swiglu -> down] x layers -> logits

RMSNorms are folded into the projections that read them (llama_resid writes partial sums of squares of
the rows it writes, the next projection adds them up and scales its sums; the norms' gains are
multiplied into that projection's weights at load), rotary embeddings and the KV-cache writes into
llama_qkv, and the token choice into llama_logits. The host writes the rows into mapped memory, launches
the graph of that row count and reads the chosen tokens from mapped memory: one submission and one wait
per step. A step may be launched while the one before runs (step_async), its rows' tokens taken on the
device from the one before's choices, so that the GPU does not wait for the host between steps. Decode
rows of several requests, and prompt tokens (prefill, up to 8 consecutive positions per step), mix
freely in a step, since attention reads each row's own slot up to its own position.

Torch holds the buffers (the projections' weights are copies of the tensors safetensors loaded, the
norms' gains multiplied in and laid out in the order the operators read them: tile_order) and computes
nothing while steps run.

The operators are loaded in one generation whose dispatch loops inline their tiles (GPUOS_INLINE_OPERATORS,
docs/configuration.md), and the LM head's tiles, where they are claimed, are claimed several at a time
(GPUOS_CLAIM_SPREAD 4, below): importing this module sets both for runtimes created afterwards unless the
environment already sets them (GPUOS_INLINE_OPERATORS=0 compares with the operators called through their
rows).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import struct
import threading
from pathlib import Path

import numpy as np

os.environ.setdefault("GPUOS_INLINE_OPERATORS", "1")
# A claim takes (tiles left) / (4 x grid) tiles instead of the runtime's 64 x grid (one tile a claim below
# ~17k tiles). It matters where the LM head's 8,016 tiles are claimed: placed, the runtime claims a node
# only from 32 tiles a block, so on the 264 blocks of an H100 or H200 they are fixed shares (~30 a block,
# one run each: the 1B step 1.007 ms against 1.014-1.018 claimed, H200); on smaller grids, and in
# launches that run unplaced, a block takes its share in ~12 claims instead of ~30 and streams them in one
# call (llama_logits is a stream operator, ops/llama.cuh). Claimed, on an H200, the 1B step took 1.035 ms
# with 4, 1.037 with 8 and 16, 1.040 with 3 and 1.070 with 2 (fewer, larger claims leave the blocks' ends
# uneven); before the stream, with one call a claim, 4 took 1.117 ms against 1.142 with 64.
os.environ.setdefault("GPUOS_CLAIM_SPREAD", "4")
import gpuos

OPS_DIR = Path(__file__).resolve().parent / "ops"
OP_NAMES = ("llama_embed", "llama_qkv", "llama_attn", "llama_resid", "llama_swiglu", "llama_logits")
MAX_ROWS = 8
HEAD_DIM = 64
ROW = struct.Struct("<iiifI12x")  # llama::Row
DIMS = struct.Struct("<8Iff32f")  # llama::Dims
# Each operator's argument struct (ops/<name>.cu, Llama<Name>Args), padding included: a CPU test compiles
# the operators with static_asserts of these sizes (tests/test_llama_cpu.py).
ARGS = {
    "llama_embed": struct.Struct("<7Q"),
    "llama_qkv": struct.Struct("<8QI4x"),
    "llama_attn": struct.Struct("<8QIIfIII"),
    "llama_resid": struct.Struct("<4Q3I4xQI4x"),
    "llama_swiglu": struct.Struct("<6QI4x"),
    "llama_logits": struct.Struct("<10QI4x"),
}


def tile_order(K: int, rows: int = 16) -> np.ndarray:
    """Where a projection's weights come from in the order the operators stream them (ops/llama.cuh): for
    a tile of `rows` (16 or 8) rows of K weights, element p of the tile's run takes element
    tile_order(K, rows)[p] of its rows in row-major order. Per round of 8192 / rows k (a last, shorter one
    when K is not a multiple of that), per warp's 1024 / rows k, [i][lane = 4 g + t][8]: for 16 rows
    k 32 (i / 2) + 8 t + 0..7 of row g (i even) or 8 + g (i odd), for 8 rows k 32 i + 8 t + 0..7 of row g."""
    if rows not in (16, 8) or K % 256:
        raise ValueError(f"K {K} is not a multiple of 256, or {rows} rows not 16 or 8")
    part = 1024 // rows  # k of a warp's part
    x = np.arange(rows * K, dtype=np.int64).reshape(rows // 8, 8, K)  # (h, g): row 8 h + g
    runs = []
    full = K // (8 * part) * (8 * part)
    for k0, k1 in ((0, full), (full, K)):
        if k1 > k0:  # rounds of 8 parts (a last, shorter round: fewer)
            p = x[..., k0:k1].reshape(rows // 8, 8, -1, min(8, (k1 - k0) // part), part // 32, 4, 8)  # h g round w v t e
            runs.append(p.transpose(2, 3, 4, 0, 1, 5, 6).reshape(-1))  # round w (v h) g t e: i = 2 v + h, or v
    return np.concatenate(runs)


# Rows of a tile of llama_resid (ops/llama.cuh, kResidRows): the RMSNorms' partial sums come one per 8
# elements of a row.
RESID_ROWS = 8
# What the attention's output projection asks L2 for while attention runs: the top of the layer's gate/up
# weights, the tiles the placement gives the last blocks (ops/llama_resid.cu).
GATE_UP_PREFETCH_BYTES = 12 << 20
# What each layer's down projection but the last asks L2 for: the first bytes of the next layer's qkv
# weights, which qkv's tiles read as the next layer starts (ops/llama_resid.cu).
QKV_PREFETCH_BYTES = 4 << 20


@dataclasses.dataclass(frozen=True)
class Config:
    """The shape of the model, as a Hugging Face LlamaConfig (config.json) gives it."""

    hidden: int
    heads: int
    kv_heads: int
    inter: int
    vocab: int
    layers: int
    eps: float
    rope_theta: float
    rope_scaling: dict | None
    tied: bool

    @staticmethod
    def from_json(path: str | os.PathLike) -> "Config":
        c = json.loads(Path(path).read_text())
        # Older configs: rope_theta and rope_scaling; newer: one rope_parameters dict holding both.
        rope = c.get("rope_parameters") or c.get("rope_scaling") or {}
        cfg = Config(
            hidden=c["hidden_size"],
            heads=c["num_attention_heads"],
            kv_heads=c.get("num_key_value_heads", c["num_attention_heads"]),
            inter=c["intermediate_size"],
            vocab=c["vocab_size"],
            layers=c["num_hidden_layers"],
            eps=c["rms_norm_eps"],
            rope_theta=c.get("rope_theta", rope.get("rope_theta", 10000.0)),
            rope_scaling={k: v for k, v in rope.items() if k != "rope_theta"}
            if rope.get("rope_type", rope.get("type", "default")) != "default" else None,
            tied=c.get("tie_word_embeddings", False),
        )
        cfg.check(c.get("head_dim", cfg.hidden // cfg.heads))
        return cfg

    def check(self, head_dim: int) -> None:
        why = []
        if head_dim != HEAD_DIM or self.hidden != self.heads * HEAD_DIM:
            why.append(f"head_dim {head_dim} (the operators are written for {HEAD_DIM} = hidden / heads)")
        if self.heads % self.kv_heads:
            why.append(f"{self.heads} heads over {self.kv_heads} KV heads (not a whole number of query heads per KV head)")
        for name, v in (("hidden_size", self.hidden), ("intermediate_size", self.inter)):
            if v % 256:
                why.append(f"{name} {v} is not a multiple of 256")
        if self.vocab % 16:
            why.append(f"vocab_size {self.vocab} is not a multiple of 16")
        if self.rope_scaling and self.rope_scaling.get("rope_type", self.rope_scaling.get("type")) not in ("llama3", "default"):
            why.append(f"rope scaling {self.rope_scaling} (llama3 or none)")
        if why:
            raise ValueError("unsupported model: " + "; ".join(why))

    def inv_freq(self) -> list[float]:
        """Rotary frequencies in float32, as the reference computes them (llama3 scaling included)."""
        f32 = np.float32
        inv = f32(1.0) / (f32(self.rope_theta) ** (np.arange(0, HEAD_DIM, 2, dtype=np.int64).astype(f32) / f32(HEAD_DIM)))
        s = self.rope_scaling
        if s and s.get("rope_type", s.get("type")) == "llama3":
            factor, lo, hi = f32(s["factor"]), f32(s["low_freq_factor"]), f32(s["high_freq_factor"])
            old = f32(s["original_max_position_embeddings"])
            lo_wave, hi_wave = old / lo, old / hi
            wave = f32(2 * math.pi) / inv
            scaled = np.where(wave > lo_wave, inv / factor, inv).astype(f32)
            smooth = ((old / wave - lo) / (hi - lo)).astype(f32)
            smoothed = ((f32(1) - smooth) * scaled / factor + smooth * scaled).astype(f32)
            medium = ~(wave < hi_wave) & ~(wave > lo_wave)
            inv = np.where(medium, smoothed, scaled).astype(f32)
        return [float(v) for v in inv]

    def weight_bytes_per_step(self) -> int:
        """Bytes of weights a step reads: every projection once, the LM head once."""
        per_layer = (self.heads + 2 * self.kv_heads) * HEAD_DIM * self.hidden + self.hidden * self.hidden
        per_layer += 3 * self.inter * self.hidden
        return 2 * (self.layers * per_layer + self.vocab * self.hidden)


def _ptr(t) -> int:
    return t.data_ptr()


def prev(i: int) -> int:
    """A row's token in Engine.step_async: the token row i of the step launched before chooses."""
    if not 0 <= i < MAX_ROWS:
        raise ValueError(f"prev({i}): a step has rows 0..{MAX_ROWS - 1}")
    return -1 - i


class Pending:
    """A launched step (Engine.step_async)."""

    def __init__(self, eng: "Engine", ticket: int, R: int, buf: int, timeout: float | None):
        self.eng, self.ticket, self.R, self.buf, self.timeout = eng, ticket, R, buf, timeout
        self._tokens: list[int] | None = None

    def result(self) -> list[int]:
        """Waits for the step (up to the step's timeout) and returns each row's next token (-1 for a row
        with slot < 0 or a prev() token of a row the step before did not have). Raises gpuos.Error if the
        launch failed (a step after a failed one fails too), TimeoutError if it did not finish in time."""
        with self.eng._lock:
            if self._tokens is None:
                try:
                    done = self.eng.rt.wait(self.ticket, self.timeout)
                except Exception:  # failed: nothing of it runs any more, its buffers are free
                    if self in self.eng._pending:
                        self.eng._pending.remove(self)
                    raise
                if not done:  # still running: it keeps its buffers, a later call waits again
                    raise TimeoutError(f"step of {self.R} rows did not finish in {self.timeout} s")
                self._tokens = self.eng.out[self.buf][: self.R].tolist()
                self.eng._pending.remove(self)
            return self._tokens


class Engine:
    """The model on a gpuos runtime: its buffers, its operators and a step graph per row count.

    `slots` sequences can be in flight, each up to `max_pos` tokens. `fold_norms`: the RMSNorms' gains
    are multiplied into the weights of the projections that follow them at load (a tied LM head gets a
    copy of the embedding for that), so that the operators multiply no input by a gain; False: the
    operators do (llama::Input). Operators are loaded from `ops_dir` (None: OPS_DIR, the ops/ beside this
    file; the runtime's watcher may reload them there while serving: the graphs name operators by id, so
    a new generation's code runs from the next launch on). Not thread-safe: one caller runs steps.
    """

    def __init__(self, rt: gpuos.Runtime, model_dir: str | os.PathLike, *, slots: int = 8, max_pos: int = 1024,
                 chunk: int = 64, keep_logits: bool = False, load_ops: bool = True,
                 ops_dir: str | os.PathLike | None = None, fold_norms: bool = True, attn_parts: int | None = None):
        import torch
        from safetensors.torch import load_file

        self.rt = rt
        self.cfg = cfg = Config.from_json(Path(model_dir) / "config.json")
        if max_pos % chunk or chunk > 64:
            raise ValueError("max_pos must be a multiple of chunk, chunk <= 64")
        self.slots, self.max_pos, self.chunk, self.splits = slots, max_pos, chunk, max_pos // chunk
        if attn_parts is not None and attn_parts < 1:
            raise ValueError("attn_parts must be at least 1")
        self.attn_parts = attn_parts
        self.blocks = rt.device_info()["grid_blocks"]
        dev = torch.device("cuda", torch.cuda.current_device())
        files = sorted(Path(model_dir).glob("model*.safetensors"))
        if not files:
            raise FileNotFoundError(f"{model_dir}: no model*.safetensors")
        w = {}
        for f in files:
            w.update(load_file(str(f), device=str(dev)))
        bf = torch.bfloat16

        def get(name: str) -> torch.Tensor:
            t = w[name]
            if t.dtype != bf:
                raise ValueError(f"{name}: {t.dtype}, expected bfloat16")
            return t.contiguous()

        def fold(t: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
            """t's columns times an RMSNorm's gains (rounded to bf16), when the gains are folded."""
            return (t.float() * gain.float()).to(bf).contiguous() if fold_norms else t

        orders: dict[tuple, torch.Tensor] = {}

        def tiles(t: torch.Tensor, rows: int = 16) -> torch.Tensor:
            """[tiles, rows, K] (a tile's rows in the order of its outputs) laid out as the operators
            stream them (tile_order)."""
            K = t.shape[-1]
            if (K, rows) not in orders:
                orders[K, rows] = torch.from_numpy(tile_order(K, rows)).to(dev)
            return t.reshape(-1, rows * K)[:, orders[K, rows]].reshape(-1)

        self.fold_norms = fold_norms
        self.emb = get("model.embed_tokens.weight")
        self.final_norm = get("model.norm.weight")
        head = self.emb if cfg.tied or "lm_head.weight" not in w else get("lm_head.weight")
        self.head = tiles(fold(head, self.final_norm))  # tile j: rows 16 j .. 16 j + 15
        self.layers = []
        H = cfg.hidden
        for i in range(cfg.layers):
            p = f"model.layers.{i}."
            norm1, norm2 = get(p + "input_layernorm.weight"), get(p + "post_attention_layernorm.weight")
            qkv = fold(torch.cat([get(p + "self_attn.q_proj.weight"), get(p + "self_attn.k_proj.weight"),
                                  get(p + "self_attn.v_proj.weight")]), norm1)
            gate, up = fold(get(p + "mlp.gate_proj.weight"), norm2), fold(get(p + "mlp.up_proj.weight"), norm2)
            self.layers.append({
                # tile j: dimensions 8 (j % 4) + 0..7 of head j / 4, then their rotary partners 32 + ...
                "qkv": tiles(qkv.reshape(-1, 2, 4, 8, H).transpose(1, 2)),
                "o": tiles(get(p + "self_attn.o_proj.weight"), RESID_ROWS),  # tile j: rows 8 j .. 8 j + 7
                # tile j: gate rows 8 j .. 8 j + 7, then the same rows of up
                "gate_up": tiles(torch.stack([gate.reshape(-1, 8, H), up.reshape(-1, 8, H)], 1)),
                "down": tiles(get(p + "mlp.down_proj.weight"), RESID_ROWS),
                "norm1": norm1,
                "norm2": norm2,
            })
            del qkv, gate, up
        del w, head

        R, H, NH, KVH = MAX_ROWS, cfg.hidden, cfg.heads, cfg.kv_heads
        z = dict(device=dev)
        self.x = torch.zeros(R, H, dtype=bf, **z)
        self.q = torch.zeros(R, NH * HEAD_DIM, dtype=bf, **z)
        self.attn = torch.zeros(R, NH * HEAD_DIM, dtype=bf, **z)
        self.mlp = torch.zeros(R, cfg.inter, dtype=bf, **z)
        # Per RMSNorm (2 a layer and the final one): the rows' sums of squares in partial sums, one per tile of
        # the projection that wrote them (llama.cuh, Input).
        self.ss = torch.zeros(2 * cfg.layers + 1, H // RESID_ROWS, R, dtype=torch.float32, **z)
        self.kv = torch.zeros(cfg.layers, 2, slots, KVH, max_pos, HEAD_DIM, dtype=bf, **z)
        self.part = torch.zeros(R * NH * self.splits * (2 + HEAD_DIM), dtype=torch.float32, **z)
        self.count = torch.zeros(R * NH, dtype=torch.int32, **z)
        self.keys = torch.zeros(R, dtype=torch.int64, **z)
        self.rows = torch.zeros(R, ROW.size // 4, dtype=torch.int32, **z)
        # The last step's logits (keep_logits): the next step overwrites them, and torch's stream is not
        # ordered with the resident kernel (a torch copy enqueued now runs when the kernel next exits,
        # after later steps), so copy them to the host (which waits) before launching the next step
        # (step, or step_async after Pending.result()).
        self.logits = torch.zeros(R, cfg.vocab, dtype=torch.float32, **z) if keep_logits else None
        dims = DIMS.pack(H, NH, KVH, cfg.inter, cfg.vocab, cfg.layers, max_pos, slots, cfg.eps, 0.0,
                         *cfg.inv_freq())
        self.dims = torch.frombuffer(bytearray(dims), dtype=torch.uint8).to(dev)
        # Each row's token as the last step chose it, for a next step launched before the host has read it.
        self.last = torch.full((R,), -1, dtype=torch.int32, **z)
        # Mapped host memory (pinned memory is mapped into the device's address space under UVA), two of
        # each: a step is launched while the one before runs (step_async), so the steps alternate.
        self.ctl = [torch.zeros(R * ROW.size, dtype=torch.uint8).pin_memory() for _ in range(2)]
        self.out = [torch.full((R,), -1, dtype=torch.int32).pin_memory() for _ in range(2)]
        self._ctl_np = [c.numpy() for c in self.ctl]
        torch.cuda.synchronize()

        if load_ops:
            g = rt.load_operator_files([str(Path(ops_dir or OPS_DIR) / f"{name}.cu") for name in OP_NAMES])
            if g["failed"]:
                raise RuntimeError("llama operators left out of the generation: " + ", ".join(
                    f"{o['name']}: {o['error']}" for o in rt.list_ops() if o["kind"] == "failed"))
        self.op = {name: rt.op_id(name) for name in OP_NAMES}
        self._graphs: dict[tuple, gpuos.GraphExec] = {}
        self._lock = threading.RLock()
        self._launched = 0  # steps launched
        self._pending: list[Pending] = []  # launched steps whose tokens were not read yet (at most 2)

    # ---- graphs --------------------------------------------------------------------------------------
    def attn_parts_for(self, R: int) -> int:
        """Attention's tiles per row and query head in a step of R rows (llama_attn): about a tile a block of
        the runtime's grid for the step (the 1B shape on an H200: 8 at one row, 1 at eight), at most one a
        chunk; `attn_parts` if given. A tile takes its chunks one after another, so the node's tiles do
        not grow with the cache (a tile a chunk: 4,096 tiles for 8 rows at 1,024 positions, most of them
        empty, which served 2,678 tokens/s against 3,303, H200)."""
        want = self.attn_parts or max(1, self.blocks // (R * self.cfg.heads))
        return min(want, self.splits)

    def _tasks(self, R: int, buf: int) -> list[gpuos.Task]:
        c, op, P = self.cfg, self.op, _ptr
        kvh = self.kv[0].numel() * 2  # bytes of one layer's cache

        def gain(t) -> int:  # an RMSNorm's gains for the operator, none where they are in the weights
            return 0 if self.fold_norms else P(t)

        resid_tiles = c.hidden // RESID_ROWS
        parts = self.attn_parts_for(R)

        def prefetch(limit: int, t) -> int:  # what a llama_resid node asks L2 for of t: a multiple of 16 x its tiles
            return min(limit, t.numel() * 2) // (16 * resid_tiles) * 16 * resid_tiles

        T = []
        T.append(gpuos.Task(op["llama_embed"], R, ARGS["llama_embed"].pack(
            P(self.ctl[buf]), P(self.last), P(self.rows), P(self.emb), P(self.x), P(self.ss), P(self.dims))))
        for i, L in enumerate(self.layers):
            kv = P(self.kv) + i * kvh
            qkv_rows = (c.heads + 2 * c.kv_heads) * HEAD_DIM
            T.append(gpuos.Task(op["llama_qkv"], qkv_rows // 16, ARGS["llama_qkv"].pack(
                P(L["qkv"]), P(self.x), P(self.ss[2 * i]), gain(L["norm1"]), P(self.q), kv, P(self.rows),
                P(self.dims), R)))
            attn_tiles = R * c.heads * parts
            o_tile = L["o"].numel() * 2 // resid_tiles  # bytes of an o projection tile
            T.append(gpuos.Task(op["llama_attn"], attn_tiles, ARGS["llama_attn"].pack(
                P(self.q), kv, P(self.attn), P(self.part), P(self.count), P(self.rows), P(self.dims),
                P(L["o"]) if attn_tiles <= resid_tiles else 0, parts, self.chunk, HEAD_DIM ** -0.5, c.heads,
                c.kv_heads, o_tile)))
            gu_bytes, pf = L["gate_up"].numel() * 2, prefetch(GATE_UP_PREFETCH_BYTES, L["gate_up"])
            T.append(gpuos.Task(op["llama_resid"], resid_tiles, ARGS["llama_resid"].pack(
                P(L["o"]), P(self.attn), P(self.x), P(self.ss[2 * i + 1]), c.heads * HEAD_DIM, c.hidden,
                R, P(L["gate_up"]) + gu_bytes - pf if pf else 0, pf)))
            T.append(gpuos.Task(op["llama_swiglu"], c.inter // 8, ARGS["llama_swiglu"].pack(
                P(L["gate_up"]), P(self.x), P(self.ss[2 * i + 1]), gain(L["norm2"]), P(self.mlp),
                P(self.dims), R)))
            nxt = self.layers[i + 1]["qkv"] if i + 1 < len(self.layers) else None
            qpf = prefetch(QKV_PREFETCH_BYTES, nxt) if nxt is not None else 0
            T.append(gpuos.Task(op["llama_resid"], resid_tiles, ARGS["llama_resid"].pack(
                P(L["down"]), P(self.mlp), P(self.x), P(self.ss[2 * i + 2]), c.inter, c.hidden, R,
                P(nxt) if qpf else 0, qpf)))
        T.append(gpuos.Task(op["llama_logits"], c.vocab // 16, ARGS["llama_logits"].pack(
            P(self.head), P(self.x), P(self.ss[2 * c.layers]), gain(self.final_norm),
            P(self.logits) if self.logits is not None else 0, P(self.keys), P(self.out[buf]), P(self.last),
            P(self.rows), P(self.dims), R)))
        return T

    def graph(self, R: int, nodes: int | None = None, buf: int = 0) -> gpuos.GraphExec:
        """The step graph of R rows (built and instantiated on first use). `nodes`: only the step's first
        nodes (embed, then 5 per layer), to check intermediate results. `buf`: which of the two host
        buffers (rows in, tokens out) the step uses."""
        if not 1 <= R <= MAX_ROWS:
            raise ValueError(f"a step has 1..{MAX_ROWS} rows, not {R}")
        key = (R, nodes, buf)
        g = self._graphs.get(key)
        if g is None:
            graph, prev = gpuos.Graph(), None
            for t in self._tasks(R, buf)[:nodes]:
                prev = graph.add(t, [] if prev is None else [prev])
            g = self._graphs[key] = gpuos.GraphExec(self.rt, graph)
        return g

    @property
    def nodes_per_step(self) -> int:
        return 2 + 5 * self.cfg.layers

    # ---- steps ---------------------------------------------------------------------------------------
    def step(self, rows: list[tuple[int, int, int, float, int]], timeout: float | None = 30.0,
             nodes: int | None = None) -> list[int]:
        """Runs one step over `rows` = [(token, position, slot, temperature, seed)]; returns each row's
        next token (-1 for a row with slot < 0). Raises gpuos.Error if the launch failed, TimeoutError if
        it did not finish within `timeout` seconds."""
        return self.step_async(rows, timeout, nodes).result()

    def step_async(self, rows: list[tuple[int, int, int, float, int]], timeout: float | None = 30.0,
                   nodes: int | None = None) -> "Pending":
        """Launches one step over `rows` (as step) to run after the step launched before, and returns at
        once; Pending.result() waits for its tokens. A row's token may be prev(i): the token that row i of
        the step launched before chooses, read on the device when this step starts, so that the host can
        launch step n + 1 while step n runs. The tokens of the step launched two before are read first
        (its buffers are this one's). Raises ValueError for a row outside the cache."""
        R = len(rows)
        buf = bytearray(R * ROW.size)
        for i, (tok, pos, slot, temp, seed) in enumerate(rows):
            if slot >= self.slots or (slot >= 0 and not 0 <= pos < self.max_pos):
                raise ValueError(f"row {i}: slot {slot} / position {pos} outside the cache "
                                 f"({self.slots} slots x {self.max_pos} positions)")
            if not -MAX_ROWS <= tok:
                raise ValueError(f"row {i}: token {tok} (prev(i) is -1 - i, i < {MAX_ROWS})")
            ROW.pack_into(buf, i * ROW.size, tok, pos, slot, temp, seed & 0xFFFFFFFF)
        with self._lock:
            b = self._launched % 2
            for p in [p for p in self._pending if p.buf == b]:
                p.result()
            g = self.graph(R, nodes, b)
            self._ctl_np[b][: len(buf)] = np.frombuffer(buf, dtype=np.uint8)
            ticket = g.launch([self._pending[-1].ticket] if self._pending else [])
            self._launched += 1
            p = Pending(self, ticket, R, b, timeout)
            self._pending.append(p)
            return p

    def prefill(self, tokens: list[int], slot: int, temp: float = 0.0, seed: int = 0) -> int:
        """Runs a prompt through slot `slot` (positions 0..len-1), 8 tokens a step; returns the token
        chosen after the last one."""
        nxt = -1
        for s in range(0, len(tokens), MAX_ROWS):
            chunk = tokens[s:s + MAX_ROWS]
            nxt = self.step([(t, s + i, slot, temp, seed) for i, t in enumerate(chunk)])[-1]
        return nxt

    def close(self) -> None:
        for g in self._graphs.values():
            g.close()
        self._graphs.clear()
