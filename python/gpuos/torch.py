"""PyTorch integration: gpuos work in torch's stream order, gpuos operators as torch custom ops, and a
torch.cuda.MemPool whose tensors live in the gpuos heap. Importing this module imports torch; nothing
else in the package does.

    import gpuos, gpuos.torch, torch
    rt = gpuos.Runtime(sm_budget=16)

    # A gpuos operator as torch.ops.gpuos.axpy_, usable in torch code and inside torch.cuda.graph capture.
    def axpy_(y: torch.Tensor, alpha: float, x: torch.Tensor) -> None:
        return gpuos.ops.axpy(y, alpha, x)
    gpuos.torch.custom_op(rt, "axpy_", axpy_, mutates_args=("y",))

    # Tensors allocated from the gpuos heap.
    with torch.cuda.use_mem_pool(gpuos.torch.mem_pool(rt)):
        t = torch.ones(1 << 20, device="cuda")
"""

import atexit
import inspect
import weakref

import torch

from . import _gpuos


def submit(rt, task):
    """Submits `task` on torch's current CUDA stream (Runtime.submit with stream=)."""
    rt.submit(task, stream=torch.cuda.current_stream())


def custom_op(rt, name, make_task, mutates_args):
    """Registers torch.ops.gpuos.<name>: a torch custom op that runs the gpuos task make_task(*args)
    returns, on torch's current stream (so in order with torch's kernels, and recorded by
    torch.cuda.graph capture: each replay runs the task again).

    `make_task` is annotated as torch custom ops are (Tensor, float, int, ... -> None) and returns a
    gpuos.Task; `mutates_args` names the tensors the task writes. The op returns nothing. Returns the
    registered op (torch.library.custom_op's object). The op refers to `rt` weakly: called once the
    runtime is gone, it raises."""
    sig = inspect.signature(make_task)
    runtime = weakref.ref(rt)  # the op is registered for the process; it does not keep the runtime alive

    def run(*args, **kwargs):
        r = runtime()
        if r is None:
            raise RuntimeError(f"gpuos::{name}: its runtime no longer exists")
        submit(r, make_task(*args, **kwargs))

    run.__signature__ = sig.replace(return_annotation=None)
    run.__annotations__ = {**make_task.__annotations__, "return": None}
    run.__name__ = name
    op = torch.library.custom_op(f"gpuos::{name}", run, mutates_args=mutates_args, device_types="cuda")

    @op.register_fake
    def _(*args, **kwargs):  # shapes do not change: the op writes into its arguments
        return None

    return op


def mem_pool(rt):
    """A torch.cuda.MemPool backed by `rt`'s heap (torch.cuda.CUDAPluggableAllocator over gpuos_alloc /
    gpuos_free): tensors allocated under torch.cuda.use_mem_pool(pool) live in the one heap gpuos governs.
    One runtime serves the process's pluggable allocator at a time (the newest pool's); the allocator
    keeps it alive, so its heap outlives the tensors in it. Each allocation is a heap request through the
    ring (~10 us); torch's caching allocator asks rarely. A request the heap cannot serve makes torch raise
    its out-of-memory error."""
    _gpuos._set_allocator_runtime(rt)
    # Released at interpreter exit while CUDA is still up (the runtime's destruction needs the driver).
    atexit.register(_gpuos._set_allocator_runtime, None)
    allocator = torch.cuda.memory.CUDAPluggableAllocator(_gpuos.__file__, "gpuos_torch_alloc", "gpuos_torch_free")
    return torch.cuda.MemPool(allocator.allocator())
