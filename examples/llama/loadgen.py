"""A bounded load generator for server.py: a fixed number of completion requests, then it stops.

    python loadgen.py [--url http://127.0.0.1:8000] [--requests 64] [--concurrency 8] [--prompt-len 32]
                      [--max-tokens 64] [--stream] [--json OUT]

Each request has a random prompt (seeded) and greedy decoding. Reports requests/s, generated tokens/s and
the latency percentiles (time to the full answer, and with --stream the time to the first token), and
keeps every answer (token ids by request) so that runs can be compared. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import threading
import time
import urllib.request


def complete(url: str, prompt: list[int], max_tokens: int, stream: bool, timeout: float = 120.0) -> dict:
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "stream": stream}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    first = None
    toks: list[int] = []
    with urllib.request.urlopen(req, timeout=timeout) as r:
        if not stream:
            out = json.loads(r.read())
            toks = out["choices"][0]["token_ids"]
        else:
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    break
                ev = json.loads(data)
                if "error" in ev:
                    raise RuntimeError(ev["error"]["message"])
                if first is None:
                    first = time.perf_counter() - t0
                toks += ev["choices"][0]["token_ids"]
    return {"tokens": toks, "latency": time.perf_counter() - t0, "first": first}


def run(url: str, requests: int, concurrency: int, prompt_len: int, max_tokens: int, stream: bool, vocab: int,
        seed: int = 0) -> dict:
    rng = random.Random(seed)
    prompts = [[rng.randrange(vocab) for _ in range(prompt_len)] for _ in range(requests)]
    results: list[dict | None] = [None] * requests
    errors: list[str] = []
    next_i = iter(range(requests))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next(next_i, None)
            if i is None:
                return
            try:
                results[i] = complete(url, prompts[i], max_tokens, stream)
            except Exception as e:  # counted and reported, never retried
                with lock:
                    errors.append(f"request {i}: {type(e).__name__}: {e}")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    done = [r for r in results if r is not None]
    lat = sorted(r["latency"] for r in done)
    pct = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None  # noqa: E731
    out = {
        "requests": requests, "completed": len(done), "errors": errors, "concurrency": concurrency,
        "prompt_len": prompt_len, "max_tokens": max_tokens, "wall_s": wall,
        "requests_per_s": len(done) / wall, "tokens_per_s": sum(len(r["tokens"]) for r in done) / wall,
        "latency_s": {"p50": pct(lat, 0.5), "p90": pct(lat, 0.9), "p99": pct(lat, 0.99), "max": lat[-1] if lat else None,
                      "mean": statistics.fmean(lat) if lat else None},
        "short_answers": sum(len(r["tokens"]) != max_tokens for r in done),
        "answers": [r["tokens"] if r else None for r in results],
    }
    if stream:
        first = sorted(r["first"] for r in done if r["first"] is not None)
        out["first_token_s"] = {"p50": pct(first, 0.5), "p90": pct(first, 0.9), "p99": pct(first, 0.99)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=1024, help="prompt token ids are drawn below this")
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args()
    r = run(a.url, a.requests, a.concurrency, a.prompt_len, a.max_tokens, a.stream, a.vocab, a.seed)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f)
    print(json.dumps({k: v for k, v in r.items() if k != "answers"}, indent=1))


if __name__ == "__main__":
    main()
