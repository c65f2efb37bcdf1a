"""gpuos: a persistent-kernel runtime for NVIDIA GPUs.

One cooperative CUDA kernel stays resident on the GPU and runs a device-side scheduler; tasks reach it
through a ring in mapped host memory, with no kernel launch per task::

    import gpuos, torch
    x = torch.ones(1 << 20, device="cuda")
    with gpuos.Runtime(sm_budget=16) as rt:
        rt.wait(rt.submit(gpuos.ops.axpy(x, 2.0, x)))   # x = 2 x + x

Device buffers are CUDA arrays (any DLPack producer: torch.Tensor, cupy.ndarray) or int device
pointers. Calls that can block release the GIL. Failures raise gpuos.Error, whose `status` is the
status name (e.g. 'GPUOS_ERR_NO_DEVICE') and `code` its number.
"""

from ._gpuos import (
    MAX_ARG_BYTES,
    Error,
    Graph,
    GraphExec,
    Lane,
    OpsDir,
    Runtime,
    Task,
    build_info,
    ops,
    query_device,
    status_name,
)

__all__ = [
    "MAX_ARG_BYTES",
    "Error",
    "Graph",
    "GraphExec",
    "Lane",
    "OpsDir",
    "Runtime",
    "Task",
    "build_info",
    "ops",
    "query_device",
    "status_name",
]
