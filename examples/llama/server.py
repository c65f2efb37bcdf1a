"""An inference server that embeds gpuos: OpenAI-style completions over HTTP on 127.0.0.1.

    python server.py MODEL_DIR [--port 8000] [--slots 8] [--max-pos 1024] [--ops-dir DIR]

Endpoints:
- POST /v1/completions  {"prompt": [token ids] or a string, "max_tokens": n, "temperature": t, "seed": s,
  "stream": bool}. The example's weights are random and come without a tokenizer, so tokens are ids: a
  string prompt is taken as its UTF-8 bytes (ids 0..255), and each choice's `text` is the generated ids
  separated by spaces (also given as a list, `token_ids`). With "stream": true the tokens arrive as
  server-sent events, one per token, then `data: [DONE]`.
- GET /health    200 {"status": "ok"} while the decode loop runs, 503 with the reason once it stopped.
- GET /metrics   Prometheus text: the runtime's (gpuos_metrics) and the server's own counters.

Requests are batched continuously: each step of the model (one gpuos graph launch) carries the next token
of every decoding request and up to the rest of its 8 rows of prompt tokens of requests being prefilled,
so a new request starts without waiting for the others to finish. Each step is launched while the one
before runs (Engine.step_async): a decoding row's token is the one its request's row chose in the step
before, taken on the device, so the GPU does not wait for the host between steps. The operators are served from
`--ops-dir` (default: examples/llama/ops), which the runtime watches: a source saved there goes live at
the next step; one that does not compile is refused and the version before keeps serving.

Exit status: 0 after a clean stop (SIGINT/SIGTERM); 3 when the decode loop failed (a device fault, a
timed-out step): every request in flight got an error, and a supervisor should restart the process.
"""

from __future__ import annotations

import argparse
import collections
import json
import queue
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gpuos
from llama_engine import MAX_ROWS, OPS_DIR, Engine, prev

# Exit statuses, as `gpuos run`'s: 5 the device faulted, 6 the watchdog gave up on a hung operator
# (GPUOS_ERR_HUNG), 1 any other failure of the decode loop. A supervisor restarts the server on any of them.
EXIT_STATUS = {"GPUOS_ERR_DEVICE_FAULT": 5, "GPUOS_ERR_HUNG": 6}


class Request:
    def __init__(self, prompt: list[int], max_tokens: int, temp: float, seed: int):
        self.prompt, self.max_tokens, self.temp, self.seed = prompt, max_tokens, temp, seed
        self.out: queue.Queue = queue.Queue()  # token ids, then None (done) or an Exception
        self.slot = -1
        self.fed = 0        # prompt tokens launched
        self.planned = 0    # tokens whose step was launched (generated: those read back)
        self.generated: list[int] = []
        self.t_submit = time.perf_counter()
        self.t_first = None

    def tokens(self, timeout: float | None = None) -> list[int]:
        """Waits for the whole answer; raises the decode loop's error if it failed."""
        toks = []
        while (t := self.out.get(timeout=timeout)) is not None:
            if isinstance(t, Exception):
                raise t
            toks.append(t)
        return toks


class Scheduler:
    """The decode loop: one thread owns the engine and runs steps while there is work."""

    def __init__(self, engine: Engine):
        self.eng = engine
        self.waiting: collections.deque[Request] = collections.deque()
        self.active: list[Request] = []
        self.free_slots = list(range(engine.slots))
        self.cv = threading.Condition()
        self.failed: str | None = None
        self.exit_status = 0  # the status main() exits with once failed is set (EXIT_STATUS)
        self.stopping = False
        self.counters = collections.Counter()
        self.latency = []  # seconds per completed request (bounded)
        self.thread = threading.Thread(target=self._loop, name="decode", daemon=True)
        self.thread.start()

    def submit(self, r: Request) -> None:
        with self.cv:
            if self.failed:
                raise RuntimeError(self.failed)
            if len(r.prompt) + r.max_tokens > self.eng.max_pos:
                raise ValueError(f"prompt + max_tokens = {len(r.prompt) + r.max_tokens} exceeds the cache's "
                                 f"{self.eng.max_pos} positions")
            self.waiting.append(r)
            self.counters["requests_received"] += 1
            self.cv.notify()

    def stop(self) -> None:
        with self.cv:
            self.stopping = True
            self.cv.notify()
        self.thread.join()

    def _rows(self, before: list) -> tuple[list, list]:
        """The next step's rows and, per row, (request, is the row the one whose output is a new token).
        `before`: the owners of the step launched before, whose tokens are not read yet: a request whose
        last token comes from it takes it on the device (prev)."""
        rows, owners = [], []
        for r in self.active:  # decoding: one row each
            if r.fed == len(r.prompt) and r.planned < r.max_tokens and len(rows) < MAX_ROWS:
                pos = len(r.prompt) + r.planned - 1
                if len(r.generated) == r.planned:
                    tok = r.generated[-1]
                else:
                    tok = prev(next(i for i, (q, emits) in enumerate(before) if q is r and emits))
                rows.append((tok, pos, r.slot, r.temp, r.seed))
                owners.append((r, True))
                r.planned += 1
        for r in self.active:  # prefilling: the rest of the rows, consecutive prompt tokens
            while r.fed < len(r.prompt) and len(rows) < MAX_ROWS:
                rows.append((r.prompt[r.fed], r.fed, r.slot, r.temp, r.seed))
                r.fed += 1
                owners.append((r, r.fed == len(r.prompt)))
                r.planned += r.fed == len(r.prompt)
        return rows, owners

    def _collect(self, pending, owners: list) -> None:
        """Reads a step's tokens (waiting for it) and hands them to their requests."""
        toks = pending.result()
        self.counters["steps"] += 1
        self.counters["rows"] += len(owners)
        done = []
        for (r, emits), tok in zip(owners, toks):
            if not emits:
                continue
            if r.t_first is None:
                r.t_first = time.perf_counter()
            r.generated.append(tok)
            r.out.put(tok)
            self.counters["tokens_generated"] += 1
            if len(r.generated) >= r.max_tokens:
                done.append(r)
        with self.cv:
            for r in done:
                r.out.put(None)
                self.active.remove(r)
                self.free_slots.append(r.slot)
                self.counters["requests_completed"] += 1
                self.latency.append(time.perf_counter() - r.t_submit)
                del self.latency[:-10000]

    def _loop(self) -> None:
        before = None  # the step launched and not read yet: (Pending, owners)
        try:
            while True:
                with self.cv:
                    while self.waiting and self.free_slots:
                        r = self.waiting.popleft()
                        r.slot = self.free_slots.pop()
                        self.active.append(r)
                    if not self.active and before is None:
                        if self.stopping:
                            return
                        self.cv.wait()
                        continue
                rows, owners = self._rows(before[1] if before else [])
                launched = (self.eng.step_async(rows), owners) if rows else None
                if before is not None:
                    self._collect(*before)
                before = launched
        except Exception as e:  # a fault or a hang: fail everything, say why, stop serving
            with self.cv:
                self.exit_status = EXIT_STATUS.get(getattr(e, "status", ""), 1)
                self.failed = f"decode loop stopped: {type(e).__name__}: {e}"
                for r in self.active + list(self.waiting):
                    r.out.put(RuntimeError(self.failed))
                self.active.clear()
                self.waiting.clear()
            print(f"server: {self.failed}", file=sys.stderr, flush=True)


def make_handler(sched: Scheduler, rt: gpuos.Runtime, ops: gpuos.OpsDir, vocab: int):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one response per connection; a stream ends when it closes

        def log_message(self, fmt, *args):  # quiet: the metrics count requests
            pass

        def _send(self, code: int, body, ctype="application/json") -> None:
            data = body if isinstance(body, bytes) else (json.dumps(body) if ctype == "application/json" else body).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                if sched.failed:
                    self._send(503, {"status": "failed", "reason": sched.failed})
                else:
                    self._send(200, {"status": "ok"})
            elif self.path == "/metrics":
                self._send(200, metrics_text(sched, rt, ops), "text/plain; version=0.0.4")
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            if self.path != "/v1/completions":
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                prompt = body.get("prompt", [])
                if isinstance(prompt, str):
                    prompt = list(prompt.encode())
                if not prompt or not all(isinstance(t, int) and 0 <= t < vocab for t in prompt):
                    raise ValueError(f"prompt: a non-empty string or list of token ids in [0, {vocab})")
                req = Request(prompt, int(body.get("max_tokens", 16)), float(body.get("temperature", 0.0)),
                              int(body.get("seed", 0)))
                if req.max_tokens < 1:
                    raise ValueError("max_tokens must be >= 1")
                sched.submit(req)
            except (ValueError, TypeError, json.JSONDecodeError) as e:
                return self._send(400, {"error": {"message": str(e), "type": "invalid_request_error"}})
            except RuntimeError as e:
                return self._send(503, {"error": {"message": str(e)}})
            rid = f"cmpl-{id(req):x}"
            if body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                while True:
                    item = req.out.get()
                    if item is None:
                        self.wfile.write(b"data: [DONE]\n\n")
                        break
                    if isinstance(item, Exception):
                        self.wfile.write(f"data: {json.dumps({'error': {'message': str(item)}})}\n\n".encode())
                        break
                    chunk = {"id": rid, "object": "text_completion", "choices": [
                        {"index": 0, "text": f"{item} ", "token_ids": [item], "finish_reason": None}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                return
            toks = []
            while True:
                item = req.out.get()
                if item is None:
                    break
                if isinstance(item, Exception):
                    return self._send(500, {"error": {"message": str(item)}})
                toks.append(item)
            self._send(200, {"id": rid, "object": "text_completion", "choices": [
                {"index": 0, "text": " ".join(map(str, toks)), "token_ids": toks, "finish_reason": "length"}],
                "usage": {"prompt_tokens": len(req.prompt), "completion_tokens": len(toks),
                          "total_tokens": len(req.prompt) + len(toks)}})

    return Handler


def metrics_text(sched: Scheduler, rt: gpuos.Runtime, ops: gpuos.OpsDir) -> str:
    lines = [rt.metrics().rstrip("\n")]
    c = sched.counters
    for name, help_ in (("requests_received", "Completion requests accepted."),
                        ("requests_completed", "Completion requests answered in full."),
                        ("tokens_generated", "Tokens generated."),
                        ("steps", "Model steps run (one gpuos graph launch each)."),
                        ("rows", "Rows run over all steps (tokens decoded or prefilled).")):
        lines += [f"# HELP llama_server_{name}_total {help_}", f"# TYPE llama_server_{name}_total counter",
                  f"llama_server_{name}_total {c[name]}"]
    lines += ["# HELP llama_server_up 1 while the decode loop runs.", "# TYPE llama_server_up gauge",
              f"llama_server_up {0 if sched.failed else 1}"]
    st = ops.stats()
    for name, key, help_ in (("loads", "loads", "Operator sources loaded from the operator directory."),
                             ("refused", "failures", "Operator sources refused (the version before kept serving).")):
        lines += [f"# HELP llama_server_operator_{name}_total {help_}", f"# TYPE llama_server_operator_{name}_total counter",
                  f"llama_server_operator_{name}_total {st[key]}"]
    lines += ["# HELP llama_server_operators_failing Sources whose latest version does not serve.",
              "# TYPE llama_server_operators_failing gauge", f"llama_server_operators_failing {st['failing']}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--max-pos", type=int, default=1024)
    ap.add_argument("--ops-dir", default=str(OPS_DIR))
    ap.add_argument("--sm-budget", type=int, default=0)
    a = ap.parse_args()
    with gpuos.Runtime(sm_budget=a.sm_budget) as rt:
        ops = rt.watch_operator_dir(a.ops_dir)
        eng = Engine(rt, a.model_dir, slots=a.slots, max_pos=a.max_pos, load_ops=False)
        sched = Scheduler(eng)
        httpd = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(sched, rt, ops, eng.cfg.vocab))
        httpd.daemon_threads = True
        stop = threading.Event()

        def on_signal(*_):
            stop.set()

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        print(f"server: listening on 127.0.0.1:{httpd.server_address[1]}, operators from {a.ops_dir}", flush=True)
        while not stop.is_set() and not sched.failed:
            stop.wait(0.2)
        httpd.shutdown()
        failed = sched.failed
        if not failed:
            sched.stop()
        ops.close()
        eng.close()
        if failed:
            print(f"server: exiting with status {sched.exit_status}: {failed}", file=sys.stderr, flush=True)
            return sched.exit_status
    return 0


if __name__ == "__main__":
    sys.exit(main())
