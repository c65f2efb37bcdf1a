"""The server under load, with operators swapped while it serves.

    python serve_check.py MODEL_DIR [--requests 48] [--concurrency 8] [--max-tokens 32] [--json OUT]

Starts server.py on a copy of the operator directory, then runs the same bounded load (loadgen.py,
streaming, greedy):
1. once as it is: the reference answers;
2. again and again, back to back, while operators change under it, until the changes are done: a new
   version of llama_resid (its epilogue on the block's other four warps: the same operations on the same
   values, so the same bits, and a request whose steps straddle the switch must still answer as the
   reference) is saved into the directory and goes live; then a broken
   llama_swiglu (a syntax error) is saved and must be refused while the version before keeps serving;
   then the good one is saved back. (A generation's build takes seconds, longer than one run of the
   load: repeating the run keeps requests in flight while each change builds and goes live.)
Every request must complete in every run with answers identical to the reference (the steps compute the
same bits whichever rows share them: deterministic sums). Checks /health and /metrics, stops the server
with SIGTERM and expects exit status 0. Exit status 0 when all of it holds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import loadgen
from llama_engine import OPS_DIR

HERE = Path(__file__).resolve().parent


def save(path: Path, text: str) -> None:
    """As an editor saves: write a temporary file, rename it into place."""
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(text: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--json")
    a = ap.parse_args()
    vocab = json.loads((Path(a.model_dir) / "config.json").read_text())["vocab_size"]
    ops = Path(tempfile.mkdtemp(prefix="gpuos-ops-"))
    for f in OPS_DIR.iterdir():
        shutil.copy(f, ops / f.name)
    resid, swiglu = (ops / "llama_resid.cu"), (ops / "llama_swiglu.cu")
    resid_v1, swiglu_ok = resid.read_text(), swiglu.read_text()
    # v2: the epilogue on the next 64 threads (warps 2 and 3) instead of the first 64: other code, the same bits.
    resid_v2 = resid_v1.replace(
        "if (threadIdx.x >= kResidRows * kMaxRows) return;",
        "if (threadIdx.x < kResidRows * kMaxRows || threadIdx.x >= 2u * kResidRows * kMaxRows) return;").replace(
        "const unsigned i = threadIdx.x % kResidRows, r = threadIdx.x / kResidRows;",
        "const unsigned e = threadIdx.x - kResidRows * kMaxRows, i = e % kResidRows, r = e / kResidRows;")
    assert resid_v2.count("threadIdx.x - kResidRows * kMaxRows") == 1 and "2u * kResidRows * kMaxRows" in resid_v2
    swiglu_broken = swiglu_ok.replace("const float act =", "const float act = ;")
    assert resid_v2 != resid_v1 and swiglu_broken != swiglu_ok

    report: dict = {"ok": False}
    srv = subprocess.Popen([sys.executable, str(HERE / "server.py"), a.model_dir, "--port", "0", "--ops-dir", str(ops)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log: list[str] = []
    port_box: list[int] = []

    def pump():
        for line in srv.stdout:
            log.append(line.rstrip())
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                port_box.append(int(m.group(1)))

    threading.Thread(target=pump, daemon=True).start()
    try:
        deadline = time.time() + 300
        while not port_box and time.time() < deadline and srv.poll() is None:
            time.sleep(0.1)
        if not port_box:
            raise RuntimeError("the server did not start:\n" + "\n".join(log[-20:]))
        url = f"http://127.0.0.1:{port_box[0]}"
        report["health"] = get(url + "/health")
        run = dict(requests=a.requests, concurrency=a.concurrency, prompt_len=a.prompt_len, max_tokens=a.max_tokens,
                   stream=True, vocab=vocab)
        loadgen.run(url, requests=a.concurrency, concurrency=a.concurrency, prompt_len=a.prompt_len, max_tokens=4,
                    stream=True, vocab=vocab, seed=99)  # warm-up
        ref = loadgen.run(url, **run)
        events: list[str] = []

        def wait_for(name: str, above: float, what: str) -> None:
            """Until metric `name` exceeds `above` (60 s at most), then logs `what` and how long it took."""
            t = time.time()
            while time.time() - t < 60:
                _, m = get(url + "/metrics")
                if metric(m, name) > above:
                    events.append(f"{what} after {time.time() - t:.2f} s "
                                  f"(failing: {metric(m, 'llama_server_operators_failing'):.0f})")
                    return
                time.sleep(0.02)

        def swapper():
            _, m0 = get(url + "/metrics")
            loads0, refused0 = metric(m0, "llama_server_operator_loads_total"), metric(m0, "llama_server_operator_refused_total")
            time.sleep(ref["wall_s"] * 0.2)
            save(resid, resid_v2)
            events.append(f"saved llama_resid v2 at {time.time() - t_swap:.2f} s")
            wait_for("llama_server_operator_loads_total", loads0, "llama_resid v2 live")
            save(swiglu, swiglu_broken)
            events.append("saved a broken llama_swiglu")
            wait_for("llama_server_operator_refused_total", refused0, "broken llama_swiglu refused")
            time.sleep(ref["wall_s"] * 0.1)
            save(swiglu, swiglu_ok)
            events.append("saved llama_swiglu back")

        t_swap = time.time()
        sw = threading.Thread(target=swapper)
        sw.start()
        runs = []
        while True:  # bounded: the swapper's waits end within 60 s each
            runs.append(loadgen.run(url, **run))
            runs[-1]["end_s"] = time.time() - t_swap
            if not sw.is_alive():
                break
        sw.join()
        time.sleep(1.0)
        _, metrics = get(url + "/metrics")
        swapped = runs[0] if len(runs) == 1 else {
            "completed": sum(r["completed"] for r in runs), "errors": sum((r["errors"] for r in runs), []),
            "short_answers": sum(r["short_answers"] for r in runs), "runs": len(runs),
            "wall_s": sum(r["wall_s"] for r in runs),
            "tokens_per_s": sum(r["tokens_per_s"] * r["wall_s"] for r in runs) / sum(r["wall_s"] for r in runs),
            "answers": [x for r in runs for x in r["answers"]]}
        same = sum(x == y for r in runs for x, y in zip(ref["answers"], r["answers"]))
        report.update({
            "reference_run": {k: v for k, v in ref.items() if k != "answers"},
            "swap_run": {k: v for k, v in swapped.items() if k != "answers"},
            "swap_events": events,
            "identical_answers": same,
            "identical_per_run": [sum(x == y for x, y in zip(ref["answers"], r["answers"])) for r in runs],
            "swap_run_ends_s": [round(r["end_s"], 2) for r in runs] if runs and "end_s" in runs[0] else None,
            "metrics_ok": "gpuos_" in metrics and "llama_server_tokens_generated_total" in metrics,
            "operators_failing_at_end": metric(metrics, "llama_server_operators_failing"),
        })
        n = a.requests * len(runs)
        report["ok"] = (ref["completed"] == a.requests and swapped["completed"] == n and same == n
                        and not ref["short_answers"] and not swapped["short_answers"] and report["metrics_ok"]
                        and report["health"][0] == 200 and len(events) == 5
                        and report["operators_failing_at_end"] == 0)
    finally:
        if srv.poll() is None:
            srv.send_signal(signal.SIGTERM)
            try:
                report["server_exit"] = srv.wait(60)
            except subprocess.TimeoutExpired:
                srv.kill()
                report["server_exit"] = "killed after 60 s"
        else:
            report["server_exit"] = srv.returncode
        report["server_log"] = log[-40:]
        shutil.rmtree(ops, ignore_errors=True)
    report["ok"] = report["ok"] and report.get("server_exit") == 0
    text = json.dumps(report, indent=1)
    if a.json:
        Path(a.json).write_text(text)
    print(text)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
