"""PyTorch beside a runtime that serves load (docs/design.md, "Sharing the GPU").

With the default slice and park, a framework call that waits for an idle device (a device
synchronize, the caching allocator's frees, a kernel torch loads lazily) waits about a slice or two,
never for ever. Each call below runs under a watchdog (60 s: liveness, not speed; bench_sharing
measures the times) with its result checked, while gpuos tasks keep completing.
"""

import contextlib
import threading
import time

import pytest

import gpuos

torch = pytest.importorskip("torch")

WATCHDOG_S = 60.0


# The allocation context the calls run in (torch.cuda.use_mem_pool applies to the thread that enters it).
allocation_context = contextlib.nullcontext


def within_watchdog(what, fn):
    """Runs fn on a thread, in allocation_context(); fails the test if it has not returned within
    WATCHDOG_S. Returns its value."""
    out = {}

    def run():
        try:
            with allocation_context():
                out["value"] = fn()
        except BaseException as e:  # re-raised on the test's thread
            out["error"] = e

    th = threading.Thread(target=run, daemon=True)
    t0 = time.perf_counter()
    th.start()
    th.join(WATCHDOG_S)
    if th.is_alive():
        pytest.fail(f"{what} did not return within {WATCHDOG_S} s beside a serving runtime")
    if "error" in out:
        raise out["error"]
    print(f"{what}: {1e3 * (time.perf_counter() - t0):.2f} ms")
    return out.get("value")


class Load:
    """A thread that keeps the runtime busy: batches of 64 increments, each waited for."""

    def __init__(self, rt, n=1 << 22):
        self.rt = rt
        self.x = torch.zeros(n, device="cuda")
        self.ones = torch.ones(n, device="cuda")
        self.next = 0
        self.stop = False
        self.error = None
        torch.cuda.synchronize()
        self.th = threading.Thread(target=self.run, daemon=True)

    def run(self):
        try:
            while not self.stop and self.next + 64 <= self.x.numel():
                tasks = [
                    gpuos.ops.axpy(self.x[self.next + i :], 1.0, self.ones[self.next + i :], n=1) for i in range(64)
                ]
                first = self.rt.submit_batch(tasks)
                if not self.rt.wait(first + 63, timeout=60):
                    raise RuntimeError("a load task did not complete within 60 s")
                self.next += 64
        except BaseException as e:
            self.error = e

    def __enter__(self):
        self.th.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.th.join(WATCHDOG_S)
        assert not self.th.is_alive()
        if self.error:
            raise self.error

    def check(self):
        """Every counter handed out was incremented exactly once, the others never."""
        h = self.x.cpu()
        assert torch.all(h[: self.next] == 1.0)
        assert torch.all(h[self.next :] == 0.0)


@pytest.mark.parametrize("pool", [False, True], ids=["torch allocator", "gpuos heap MemPool"])
def test_torch_calls_that_need_an_idle_device_return_while_gpuos_serves(gpu, pool):
    global allocation_context
    a = torch.rand(1024, 1024, device="cuda")
    b = torch.rand(1024, 1024, device="cuda")
    ref = (a.double() @ b.double()).float().cpu()
    torch.cuda.synchronize()
    # A heap whose large arena (a quarter of it) holds the 1 GiB allocation below.
    with gpuos.Runtime(sm_budget=16, heap_bytes=6 << 30) as rt, Load(rt) as load:
        if pool:
            from gpuos.torch import mem_pool

            mem = mem_pool(rt)
            allocs_before = rt.heap_stats()["allocs"]
            # What torch allocates in the calls below comes from the gpuos heap.
            allocation_context = lambda: torch.cuda.use_mem_pool(mem)  # noqa: E731
        progress = [load.next]

        def still_serving():
            assert load.next > progress[-1], "gpuos stopped completing tasks"
            progress.append(load.next)

        side = torch.cuda.Stream()

        def side_matmul():
            with torch.cuda.stream(side):
                c = a @ b
            side.synchronize()
            return c.cpu()

        torch.testing.assert_close(within_watchdog("matmul on a side stream", side_matmul), ref, rtol=1e-3, atol=1e-2)
        v = within_watchdog("matmul on the default stream + .item()", lambda: (a @ b)[3, 5].item())
        assert abs(v - ref[3, 5].item()) < 1e-2
        # A kernel this process has not used: torch loads its module lazily, on first launch.
        y = within_watchdog("a torch kernel never used before", lambda: torch.special.erfcx(a[:4, :4]).cpu())
        torch.testing.assert_close(y, torch.special.erfcx(a[:4, :4].cpu()))
        big = within_watchdog("a 1 GiB allocation", lambda: torch.full((1 << 28,), 2.0, device="cuda"))
        assert within_watchdog("a reduction over it", lambda: big.sum().item()) == 2.0 * (1 << 28)
        del big
        within_watchdog("torch.cuda.synchronize()", torch.cuda.synchronize)
        within_watchdog("torch.cuda.empty_cache()", torch.cuda.empty_cache)

        from gpuos.torch import custom_op

        def scaled_add_(y: torch.Tensor, alpha: float, x: torch.Tensor) -> None:
            return gpuos.ops.axpy(y, alpha, x)

        op_name = "sharing_axpy_pool" if pool else "sharing_axpy"
        custom_op(rt, op_name, scaled_add_, mutates_args=("y",))
        gpuos_op = getattr(torch.ops.gpuos, op_name)

        def capture_and_replay():
            # torch ops and a gpuos custom op in one captured graph, replayed under gpuos load.
            static_in = torch.ones(4096, device="cuda")
            acc = torch.zeros(4096, device="cuda")
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                static_out = static_in * 3 + 1  # warm-up on a side stream, as torch asks
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g):
                t = static_in * 3 + 1
                gpuos_op(acc, 2.0, t)  # acc += 2 t, by gpuos
                static_out = acc + t
            static_in.fill_(2.0)  # t = 7
            for _ in range(3):
                g.replay()
            torch.cuda.current_stream().synchronize()
            return acc.cpu(), static_out.cpu()

        acc, out = within_watchdog("capture and replay of a torch.cuda.graph with a gpuos custom op", capture_and_replay)
        assert torch.all(acc == 42.0)  # 3 replays x 2 x 7
        assert torch.all(out == 49.0)
        still_serving()
        allocation_context = contextlib.nullcontext
        if pool:
            assert rt.heap_stats()["allocs"] > allocs_before  # torch's blocks came from the heap
    load.check()
    if pool:
        gpuos._gpuos._set_allocator_runtime(None)
