"""The Llama example's host side without a GPU: configs, rotary frequencies, the ABI of the step rows and
of the operators' arguments, and the server's batching of rows."""

import json
import math
import os
import queue
import re
import shutil
import struct
import subprocess
import types
from pathlib import Path

import numpy as np
import pytest

from llama_engine import ARGS, DIMS, HEAD_DIM, MAX_ROWS, OP_NAMES, RESID_ROWS, ROW, Config, tile_order

BASE = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
            num_key_value_heads=8, vocab_size=128256, rms_norm_eps=1e-5, tie_word_embeddings=True, head_dim=64)
LLAMA3 = {"rope_type": "llama3", "factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
          "original_max_position_embeddings": 8192}


def config(tmp_path, **kw):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**BASE, **kw}))
    return Config.from_json(p)


def test_both_config_formats_give_the_same_rope(tmp_path):
    old = config(tmp_path, rope_theta=500000.0, rope_scaling=LLAMA3)
    new = config(tmp_path, rope_parameters={**LLAMA3, "rope_theta": 500000.0})
    assert old == new
    assert old.rope_theta == 500000.0 and old.rope_scaling["rope_type"] == "llama3"
    plain = config(tmp_path, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    assert plain.rope_scaling is None and plain.rope_theta == 10000.0


def test_llama3_frequencies(tmp_path):
    inv = config(tmp_path, rope_theta=500000.0, rope_scaling=LLAMA3).inv_freq()
    plain = config(tmp_path, rope_theta=500000.0).inv_freq()
    assert len(inv) == HEAD_DIM // 2
    assert plain[0] == 1.0 and inv[0] == 1.0  # wavelength 2 pi < 8192 / 4: unchanged
    for i, (a, b) in enumerate(zip(inv, plain)):
        assert b == pytest.approx(500000.0 ** (-2 * i / HEAD_DIM), rel=1e-6)
        wave = 2 * math.pi / b
        if wave < 8192 / 4:
            assert a == b
        elif wave > 8192 / 1:
            assert a == pytest.approx(b / 32, rel=1e-6)
        else:  # the smooth band lies between the two
            assert b / 32 < a < b


def test_unsupported_shapes_are_refused_with_reasons(tmp_path):
    with pytest.raises(ValueError, match="head_dim 128"):
        config(tmp_path, head_dim=128)
    with pytest.raises(ValueError, match="vocab_size 1000"):
        config(tmp_path, vocab_size=1000)
    with pytest.raises(ValueError, match="intermediate_size 1000"):
        config(tmp_path, intermediate_size=1000)
    with pytest.raises(ValueError, match="rope scaling"):
        config(tmp_path, rope_scaling={"rope_type": "yarn", "factor": 4.0})


def test_weight_bytes_of_the_1b_shape(tmp_path):
    c = config(tmp_path)
    # 1.236 G parameters (tied head counted once as the LM head's read) x 2 bytes
    per_layer = 3072 * 2048 + 2048 * 2048 + 3 * 8192 * 2048
    assert c.weight_bytes_per_step() == 2 * (16 * per_layer + 128256 * 2048)


def test_abi_sizes_match_the_operators():
    assert ROW.size == 32  # llama::Row (static_assert in ops/llama.cuh)
    assert DIMS.size == 40 + 4 * HEAD_DIM // 2  # llama::Dims
    assert len(struct.pack("<iiifI12x", 1, 2, 3, 0.5, 7)) == ROW.size


@pytest.mark.parametrize("K", [256, 768, 2048])
@pytest.mark.parametrize("rows", [16, 8])
def test_tile_order_is_the_layout_the_operators_read(K, rows):
    # What a lane of warp w loads as its i-th 16 B of a round (ops/llama.cuh, project: the part holding k
    # is rows * k further, i 256 weights apart, lane 8): 16 rows: k 32 (i / 2) + 8 t .. + 7 of row g or
    # 8 + g; 8 rows: k 32 i + 8 t .. + 7 of row g.
    w = np.arange(rows * K).reshape(rows, K)
    run = w.reshape(-1)[tile_order(K, rows)]
    assert sorted(run) == list(range(rows * K))
    for k in range(0, K, 1024 // rows):
        for i in range(4):
            for lane in range(32):
                g, t = lane // 4, lane % 4
                start = rows * k + 256 * i + 8 * lane
                row, kk = (8 * (i % 2) + g, k + 32 * (i // 2) + 8 * t) if rows == 16 else (g, k + 32 * i + 8 * t)
                assert list(run[start:start + 8]) == list(w[row, kk:kk + 8])
    with pytest.raises(ValueError, match="is not a multiple of"):
        tile_order(K + 64, rows)


def gpuos_cli():
    """The gpuos command line tool: GPUOS_CLI, else the build's (build/tools/gpuos), else on PATH."""
    built = Path(__file__).resolve().parents[3] / "build" / "tools" / "gpuos"
    for c in (os.environ.get("GPUOS_CLI"), str(built), shutil.which("gpuos")):
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


def test_argument_packs_have_the_sizes_of_the_operators_structs(tmp_path):
    # The engine packs each operator's arguments with ARGS (explicit padding, no alignment); the operators
    # compile with a static_assert of that size after their struct (NVRTC, as `gpuos compile` checks a
    # directory of operators: no GPU needed). A pack of another size would be refused at run time.
    cli = gpuos_cli()
    if cli is None:
        pytest.skip("the gpuos command line tool is not built (build/tools/gpuos) nor on PATH")
    ops = tmp_path / "ops"
    shutil.copytree(Path(__file__).resolve().parents[1] / "ops", ops)
    assert set(ARGS) == set(OP_NAMES)
    for name, pack in ARGS.items():
        struct_name = "".join(w.capitalize() for w in name.split("_")) + "Args"
        f = ops / f"{name}.cu"
        f.write_text(f.read_text() + f'\nstatic_assert(sizeof({struct_name}) == {pack.size}, '
                                      f'"{struct_name}: the engine packs {pack.size} bytes");\n')
    r = subprocess.run([cli, "compile", *sorted(str(p) for p in ops.glob("llama_*.cu"))], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "GPUOS_CACHE_DIR": "off"})
    assert r.returncode == 0, r.stdout + r.stderr


def test_resid_rows_match_the_operators():
    # The engine sizes llama_resid's tiles and the norms' partial sums with RESID_ROWS; the operators with
    # llama::kResidRows.
    header = (Path(__file__).resolve().parents[1] / "ops" / "llama.cuh").read_text()
    assert re.search(r"kResidRows = (\d+);", header).group(1) == str(RESID_ROWS)


class FakeEngine:
    """Stands in for the model in the scheduler's bookkeeping: the next token is (token + position) % 97."""

    slots, max_pos = 4, 64

    def __init__(self):
        self.steps = []
        self.last = []   # the tokens of the step launched before (what prev(i) reads on the device)
        self.ahead = 0   # rows whose token was prev(i)

    def step_async(self, rows):
        assert 1 <= len(rows) <= MAX_ROWS
        self.ahead += sum(tok < 0 for tok, *_ in rows)
        rows = [(self.last[-1 - tok] if tok < 0 else tok, *rest) for tok, *rest in rows]
        self.steps.append(rows)
        toks = self.last = [(tok + pos) % 97 for tok, pos, *_ in rows]
        return types.SimpleNamespace(result=lambda: list(toks))


def test_scheduler_batches_decode_and_prefill_rows():
    from server import Request, Scheduler

    eng = FakeEngine()
    s = Scheduler(eng)
    reqs = [Request(list(range(10 + i, 10 + i + n)), 5, 0.0, 0) for i, n in enumerate((3, 12, 1, 9, 5))]
    for r in reqs:
        s.submit(r)
    outs = [r.tokens(timeout=10) for r in reqs]
    s.stop()
    # Each answer is what decoding alone would give: the prompt's last token, then token by token.
    for r, toks in zip(reqs, outs):
        want, tok, pos = [], r.prompt[-1], len(r.prompt) - 1
        for _ in range(5):
            tok = (tok + pos) % 97
            want.append(tok)
            pos += 1
        assert toks == want
    # No step had more rows than a graph takes, at most `slots` sequences were in flight, every prompt
    # token ran exactly once at its own position.
    seen = {}
    for rows in eng.steps:
        assert len({slot for _, _, slot, _, _ in rows}) <= eng.slots
    assert s.counters["requests_completed"] == len(reqs)
    assert s.counters["tokens_generated"] == 5 * len(reqs)
    assert s.counters["rows"] == sum(len(r.prompt) for r in reqs) + 4 * len(reqs)
    assert eng.ahead > 0  # steps were launched before the host read the tokens they take


def test_scheduler_refuses_what_does_not_fit_and_reports_a_failed_step():
    from server import Request, Scheduler

    eng = FakeEngine()
    s = Scheduler(eng)
    with pytest.raises(ValueError, match="exceeds"):
        s.submit(Request(list(range(60)), 10, 0.0, 0))

    def broken(rows):
        raise TimeoutError("step of 1 rows did not finish")

    eng.step_async = broken
    r = Request([1, 2], 3, 0.0, 0)
    s.submit(r)
    item = r.out.get(timeout=10)
    assert isinstance(item, RuntimeError) and "did not finish" in str(item)
    assert s.failed and "TimeoutError" in s.failed
    with pytest.raises(RuntimeError):
        s.submit(Request([1], 1, 0.0, 0))


class FakeRuntime:
    def metrics(self):
        return "# HELP gpuos_tasks_completed_total Tasks completed.\ngpuos_tasks_completed_total 7\n"


class FakeOps:
    def stats(self):
        return {"loads": 6, "failures": 1, "removals": 0, "generation": 3, "failing": 0, "watching": True}


def test_http_completions_health_and_metrics():
    import http.client
    import threading
    from http.server import ThreadingHTTPServer

    from server import Scheduler, make_handler

    eng = FakeEngine()
    sched = Scheduler(eng)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(sched, FakeRuntime(), FakeOps(), vocab=97))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]

    def call(method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()

    try:
        assert call("GET", "/health")[0] == 200
        st, _, text = call("POST", "/v1/completions", {"prompt": [5, 6, 7], "max_tokens": 4})
        out = json.loads(text)
        want, tok, pos = [], 7, 2
        for _ in range(4):
            tok = (tok + pos) % 97
            want.append(tok)
            pos += 1
        assert st == 200 and out["choices"][0]["token_ids"] == want
        assert out["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        st, ctype, text = call("POST", "/v1/completions", {"prompt": [5, 6, 7], "max_tokens": 4, "stream": True})
        events = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
        assert st == 200 and ctype == "text/event-stream" and events[-1] == "[DONE]"
        assert [json.loads(e)["choices"][0]["token_ids"][0] for e in events[:-1]] == want
        st, _, text = call("POST", "/v1/completions", {"prompt": "ab", "max_tokens": 1})
        assert st == 400 and "token ids in [0, 97)" in text  # 'a' is 97: outside this vocabulary
        assert call("POST", "/v1/completions", {"prompt": [], "max_tokens": 1})[0] == 400
        assert call("POST", "/v1/completions", {"prompt": [1], "max_tokens": 0})[0] == 400
        assert call("POST", "/v1/completions", {"prompt": [1], "max_tokens": 100})[0] == 400  # past max_pos
        assert call("GET", "/nowhere")[0] == 404
        st, ctype, text = call("GET", "/metrics")
        assert st == 200 and ctype.startswith("text/plain")
        assert "gpuos_tasks_completed_total 7" in text
        assert "llama_server_requests_completed_total 2" in text
        assert "llama_server_operator_refused_total 1" in text and "llama_server_up 1" in text

        def broken(rows):  # the launch is accepted; waiting for it reports the fault
            def fault():
                raise RuntimeError("GPUOS_ERR_DEVICE_FAULT: an illegal address")
            return types.SimpleNamespace(result=fault)

        eng.step_async = broken
        st, _, text = call("POST", "/v1/completions", {"prompt": [1, 2], "max_tokens": 2})
        assert st == 500 and "illegal address" in text  # the request in flight gets the error
        st, _, text = call("GET", "/health")
        assert st == 503 and "illegal address" in text
        assert call("POST", "/v1/completions", {"prompt": [1], "max_tokens": 1})[0] == 503
        assert "llama_server_up 0" in call("GET", "/metrics")[2]
    finally:
        httpd.shutdown()
        sched.stop()
