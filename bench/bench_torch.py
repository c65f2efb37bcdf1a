"""bench_torch: gpuos from Python beside PyTorch, one process, one run (needs a GPU, torch and the package).

  round trips  a nop: Python submit + wait (the ring); submitted on a torch stream + the stream's sync;
               a torch custom op (gpuos.torch.custom_op) + the stream's sync; against torch's own
               fastest way to the same point: a 1-element in-place add on the stream + its sync.
  matmul       a 4096 x 4096 bf16 matmul on torch's stream (CUDA-event time, median of 50): with nothing
               of gpuos, beside a runtime (sm_budget --sm-budget) serving a continuous load from another
               thread, and beside the same runtime parked. Each also queued: the events and the matmul
               enqueued behind a sleep kernel of about 10 ms, so that the time between the events is the GPU's
               alone; launched in turn, a host thread that waits for the GIL between the start event
               and the matmul's launch adds its wait to the time measured.

    python bench/bench_torch.py [--sm-budget 16] [--iters 2000] [--json bench_torch.json]

Every gpuos task's effect is checked. Exit status 0 when every check passed, 1 otherwise.
"""

import argparse
import json
import statistics
import sys
import threading
import time

import torch

import gpuos
import gpuos.torch


def percentiles(us):
    s = sorted(us)
    return {"p50_us": s[len(s) // 2], "p99_us": s[min(len(s) - 1, int(len(s) * 0.99))]}


def timed(fn, iters, warmup=100):
    out = []
    for i in range(iters + warmup):
        t0 = time.perf_counter_ns()
        fn()
        if i >= warmup:
            out.append((time.perf_counter_ns() - t0) / 1e3)
    return percentiles(out)


def matmul_ms(a, b, reps=50, queued=False):
    """Median CUDA-event time of a @ b on the current stream; `queued`: behind a sleep kernel (see above)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps + 5):
        if queued:
            torch.cuda._sleep(20_000_000)  # cycles: about 10 ms at 2 GHz
        start.record()
        c = a @ b
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    del c
    return statistics.median(times[5:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sm-budget", type=int, default=16)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--json", default="bench_torch.json")
    args = ap.parse_args()
    checks = []
    result = {
        "benchmark": "bench_torch",
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "gpuos": gpuos.build_info(),
        "sm_budget": args.sm_budget,
    }
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    one = torch.zeros(1, device="cuda")
    s = torch.cuda.Stream()
    # Before boot: torch's own numbers.
    result["matmul_ms_no_gpuos"] = matmul_ms(a, b)
    result["matmul_ms_no_gpuos_queued"] = matmul_ms(a, b, queued=True)
    result["python_switch_interval_s"] = sys.getswitchinterval()

    def torch_add():
        with torch.cuda.stream(s):
            one.add_(1.0)
        s.synchronize()

    result["torch_add1_on_stream_sync"] = timed(torch_add, args.iters)
    torch.cuda.synchronize()

    with gpuos.Runtime(sm_budget=args.sm_budget) as rt:
        result["python_nop_submit_wait"] = timed(lambda: rt.wait(rt.submit(gpuos.ops.nop())), args.iters)

        def on_stream():
            rt.submit(gpuos.ops.nop(), stream=s)
            s.synchronize()

        result["python_nop_on_stream_sync"] = timed(on_stream, args.iters)

        flag = torch.zeros(1, device="cuda")

        def fill_(x: torch.Tensor, v: float) -> None:
            return gpuos.ops.fill(x, v)

        gpuos.torch.custom_op(rt, "bench_fill_", fill_, mutates_args=("x",))

        def custom():
            with torch.cuda.stream(s):
                torch.ops.gpuos.bench_fill_(flag, 5.0)
            s.synchronize()

        result["torch_custom_op_sync"] = timed(custom, args.iters)
        checks.append(("the custom op wrote its tensor", flag.item() == 5.0))

        # A matmul beside a runtime serving a continuous load of tiny tasks from another thread.
        x = torch.zeros(1 << 20, device="cuda")
        ones = torch.ones(1 << 20, device="cuda")
        torch.cuda.synchronize()
        stop = False
        served = [0]

        batch = [gpuos.ops.axpy(x[i * 4096 :], 1.0, ones, n=4096) for i in range(64)]  # built once

        def load():
            while not stop:
                t = rt.submit_batch(batch)
                rt.wait(t + 63, timeout=60)
                served[0] += 64

        th = threading.Thread(target=load)
        th.start()
        time.sleep(0.05)
        before = served[0]
        result["matmul_ms_gpuos_serving"] = matmul_ms(a, b)
        result["matmul_ms_gpuos_serving_queued"] = matmul_ms(a, b, queued=True)
        checks.append(("gpuos kept serving during the matmuls", served[0] > before))
        stop = True
        th.join()
        rt.drain()
        checks.append(("every load task ran once", x[: 64 * 4096].eq(float(served[0] // 64)).all().item()))
        time.sleep(0.02)  # idle: the kernel parks
        result["matmul_ms_gpuos_parked"] = matmul_ms(a, b)
        result["matmul_ms_gpuos_parked_queued"] = matmul_ms(a, b, queued=True)
        result["state_after_idle"] = "parked" if 'state="parked"' in rt.metrics() else "running"
    result["checks"] = [{"what": w, "ok": bool(ok)} for w, ok in checks]
    for k, v in result.items():
        if k != "checks":
            print(f"{k}: {v}")
    for w, ok in checks:
        print(f"CHECK  {'OK  ' if ok else 'FAIL'}  {w}")
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
