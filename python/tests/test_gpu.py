"""The package on a GPU, with CUDA arrays from PyTorch (skipped without a GPU or without torch)."""

import pytest

import gpuos

torch = pytest.importorskip("torch")


def test_builtins_on_torch_tensors(gpu):
    n = 1 << 20
    a = torch.rand(n, device="cuda")
    b = torch.rand(n, device="cuda")
    out = torch.empty(n, device="cuda")
    torch.cuda.synchronize()  # before the resident kernel runs: nothing of torch's may be in flight
    with gpuos.Runtime(sm_budget=16) as rt:
        assert rt.wait(rt.submit(gpuos.ops.add(out, a, b)), timeout=10)
        first = rt.submit(gpuos.ops.mul(out, out, b))
        assert rt.wait(first, timeout=10)
        s = rt.stats()
        assert s["completed"] >= first + 1 and s["failed"] == 0
        text = rt.metrics()
        assert 'gpuos_kernel_state{state="running"} 1' in text or 'gpuos_kernel_state{state="parked"} 1' in text
        assert 'gpuos_operator_tasks_completed_total{operator="add"} 1' in text
        assert "gpuos_heap_pool_bytes 268435456" in text
    torch.testing.assert_close(out, (a + b) * b)


def test_an_operator_loaded_from_source_and_errors(gpu):
    src = """
#include "gpuos/op.cuh"
struct TwiceArgs { float* x; unsigned long long n; };
__device__ void twice_tile(const TwiceArgs& a, const gpuos::TileCtx& c) {
  for (unsigned long long i = c.first(4096) + threadIdx.x; i < c.last(4096, a.n); i += blockDim.x) a.x[i] *= 2.0f;
}
GPUOS_OPERATOR(twice, TwiceArgs, twice_tile)
"""
    import struct

    x = torch.ones(10000, device="cuda")
    torch.cuda.synchronize()
    with gpuos.Runtime(sm_budget=16) as rt:
        g = rt.load_operator_source("twice.cu", src)
        assert g["number"] == 1
        op = rt.op_id("twice")
        t = gpuos.Task(op, tiles=3, args=struct.pack("<QQ", x.data_ptr(), x.numel()))
        assert rt.wait(rt.submit(t), timeout=10)
        with pytest.raises(gpuos.Error) as e:
            rt.load_operator_source("broken.cu", src.replace("a.n)", "a.n"))
        assert e.value.status == "GPUOS_ERR_INVALID_ARG"
        assert rt.wait(rt.submit(t), timeout=10)  # the old version keeps serving
    assert torch.all(x == 4.0)


def test_operator_files_in_one_generation(gpu, tmp_path):
    good = """
#include "gpuos/op.cuh"
struct NegArgs { float* x; unsigned long long n; };
__device__ void neg_tile(const NegArgs& a, const gpuos::TileCtx& c) {
  for (unsigned long long i = c.first(4096) + threadIdx.x; i < c.last(4096, a.n); i += blockDim.x) a.x[i] = -a.x[i];
}
GPUOS_OPERATOR(neg, NegArgs, neg_tile)
"""
    import struct

    (tmp_path / "neg.cu").write_text(good)
    (tmp_path / "half.cu").write_text(good.replace("neg", "half").replace("= -a.x[i]", "= 0.5f * a.x[i]"))
    (tmp_path / "broken.cu").write_text(good.replace("neg", "broken").replace("a.n)", "a.n"))
    x = torch.full((5000,), 4.0, device="cuda")
    torch.cuda.synchronize()
    with gpuos.Runtime(sm_budget=16) as rt:
        g = rt.load_operator_files([str(tmp_path / f) for f in ("neg.cu", "half.cu", "broken.cu")])
        assert g["number"] == 1 and g["failed"] == 1  # one generation; the broken file left out
        failed = [o for o in rt.list_ops() if o["kind"] == "failed"]
        assert len(failed) == 1 and "broken.cu" in failed[0]["source"] and failed[0]["error"]
        args = struct.pack("<QQ", x.data_ptr(), x.numel())
        assert rt.wait(rt.submit(gpuos.Task(rt.op_id("neg"), tiles=2, args=args)), timeout=10)
        assert rt.wait(rt.submit(gpuos.Task(rt.op_id("half"), tiles=2, args=args)), timeout=10)
    assert torch.all(x == -2.0)


def test_dependencies_lanes_and_graphs(gpu):
    n = 4096
    x = torch.zeros(n, device="cuda")
    ones = torch.ones(n, device="cuda")
    y = torch.empty(n, device="cuda")
    # Before the runtime boots: a device synchronize waits for every kernel, the resident one included.
    torch.cuda.synchronize()
    with gpuos.Runtime(sm_budget=16) as rt:
        # A chain of 100 dependent increments, resolved on the GPU.
        t = rt.submit(gpuos.ops.axpy(x, 1.0, ones))
        for _ in range(99):
            t = rt.submit_after(gpuos.ops.axpy(x, 1.0, ones), after=[t])
        lane = gpuos.Lane(rt)
        for _ in range(50):
            rt.submit_after(gpuos.ops.axpy(x, 1.0, ones), lane=lane)
        # A graph: fill y with v, then x += y; 10 launches with v = 1..10.
        g = gpuos.Graph()
        f = g.add(gpuos.ops.fill(y, 0.0))
        g.add(gpuos.ops.axpy(x, 1.0, y), after=[f])
        with gpuos.GraphExec(rt, g) as ge:
            for v in range(1, 11):
                ge.set_args(f, gpuos.ops.fill(y, float(v)).args)
                last = ge.launch(after=[t])
            assert rt.wait(last, timeout=10)
        assert rt.drain(timeout=10)
    assert torch.all(x == 150.0 + 55.0)


def test_tasks_on_torch_streams_and_in_a_captured_torch_graph(gpu):
    n = 1 << 16
    x = torch.zeros(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    snaps = torch.zeros(100, n, device="cuda")
    torch.cuda.synchronize()
    with gpuos.Runtime(sm_budget=16) as rt:
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for k in range(1, 101):
                x.fill_(float(k))  # torch, on s
                assert rt.submit(gpuos.ops.axpy(y, 1.0, x), stream=s) is None  # gpuos, after it on s
                snaps[k - 1].copy_(y)  # torch, after the task
        s.synchronize()
        expect = torch.tensor([k * (k + 1) / 2 for k in range(1, 101)], device="cuda")
        assert torch.all(snaps == expect[:, None])
        # Captured with torch ops around it (global capture mode, torch's default); every replay runs it.
        static_x = torch.ones(n, device="cuda")
        out = torch.zeros(n, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            tmp = static_x * 2
            rt.submit(gpuos.ops.axpy(out, 1.0, tmp), stream=torch.cuda.current_stream())
            res = out + 0
        assert torch.all(out == 0)  # captured, not run
        for _ in range(5):
            g.replay()
        torch.cuda.current_stream().synchronize()
        assert torch.all(out == 10.0)
        assert torch.all(res == 10.0)
        with pytest.raises(TypeError, match="stream takes an int or a CUDA stream object"):
            rt.submit(gpuos.ops.axpy(out, 1.0, tmp), stream="nope")
        # A gpuos graph launched on the stream: v += 1, then w += v; between torch ops, no host wait.
        v = torch.zeros(n, device="cuda")
        w = torch.zeros(n, device="cuda")
        one = torch.ones(n, device="cuda")
        torch.cuda.synchronize()
        gg = gpuos.Graph()
        first = gg.add(gpuos.ops.axpy(v, 1.0, one))
        gg.add(gpuos.ops.axpy(w, 1.0, v), after=[first])
        with gpuos.GraphExec(rt, gg) as ge:
            with torch.cuda.stream(s):
                for _ in range(10):
                    assert ge.launch(stream=s) is None
                w2 = w * 2  # torch, after the last launch
            s.synchronize()
        assert torch.all(v == 10.0) and torch.all(w == 55.0) and torch.all(w2 == 110.0)
        # A batch and a task after a ticket on the stream: torch's next op waits for all of them.
        ys = torch.zeros(20, n, device="cuda")
        z = torch.zeros(n, device="cuda")
        torch.cuda.synchronize()
        t0 = rt.submit(gpuos.ops.fill(z, 3.0))
        with torch.cuda.stream(s):
            for k in range(1, 11):
                x.fill_(float(k))
                assert rt.submit_batch([gpuos.ops.axpy(ys[i], 1.0, x) for i in range(20)], stream=s) is None
                assert rt.submit_after(gpuos.ops.axpy(z, 1.0, x), after=[t0], stream=s) is None
            total = ys.sum(dim=1)  # torch, after the last batch
        s.synchronize()
        assert torch.all(total == 55.0 * n) and torch.all(z == 58.0)


def test_a_gpuos_operator_as_a_torch_custom_op_eager_and_in_a_captured_graph(gpu):
    import gpuos.torch

    n = 1 << 16
    x = torch.full((n,), 2.0, device="cuda")
    y = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    with gpuos.Runtime(sm_budget=16) as rt:

        def axpy_(y: torch.Tensor, alpha: float, x: torch.Tensor) -> None:
            return gpuos.ops.axpy(y, alpha, x)

        gpuos.torch.custom_op(rt, "test_axpy_", axpy_, mutates_args=("y",))
        torch.ops.gpuos.test_axpy_(y, 3.0, x)  # eager: y = 3 x + y = 6
        z = y * 2  # torch, after the op on the same stream
        torch.cuda.current_stream().synchronize()
        assert torch.all(y == 6.0) and torch.all(z == 12.0)
        # Inside torch.cuda.graph capture, between torch ops; every replay runs it.
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            t = x + 1  # 3
            torch.ops.gpuos.test_axpy_(y, 1.0, t)  # y += 3
            out = y * 1
        for _ in range(4):
            g.replay()
        torch.cuda.current_stream().synchronize()
        assert torch.all(y == 6.0 + 4 * 3.0)
        assert torch.all(out == 18.0)


def test_torch_tensors_in_the_gpuos_heap(gpu):
    import gpuos.torch

    torch.cuda.synchronize()
    with gpuos.Runtime(sm_budget=16, heap_bytes=512 << 20) as rt:
        before = rt.heap_stats()
        pool = gpuos.torch.mem_pool(rt)
        with torch.cuda.use_mem_pool(pool):
            a = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
            b = a * 2
        after = rt.heap_stats()
        assert after["allocs"] > before["allocs"]
        assert after["used_bytes"] >= before["used_bytes"] + 8 * (1 << 20)
        # The tensors are ordinary CUDA memory: torch and gpuos both use them.
        assert rt.wait(rt.submit(gpuos.ops.add(b, b, a)), timeout=10)  # b = 3 a
        assert b[12345].item() == 3 * 12345.0
        assert float(b.sum().item()) == 3 * float(a.double().sum().item())
        del a, b
    import gc

    gc.collect()
    gpuos._gpuos._set_allocator_runtime(None)
