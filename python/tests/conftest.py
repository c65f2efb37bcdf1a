"""Shared fixtures: whether a usable CUDA device is there (the GPU tests skip, saying so, when not)."""

import pytest

import gpuos


def _probe():
    try:
        gpuos.query_device()
        return None
    except gpuos.Error as e:
        if e.status in ("GPUOS_ERR_NO_DEVICE", "GPUOS_ERR_UNSUPPORTED"):
            return f"{e.status}: {e}"
        raise


NO_GPU = _probe()


@pytest.fixture
def no_gpu():
    """The reason there is no usable device; skips the test when there is one."""
    if NO_GPU is None:
        pytest.skip("a CUDA device is present: this test checks the behaviour without one")
    return NO_GPU


@pytest.fixture
def gpu():
    """Skips the test when no usable CUDA device is there."""
    if NO_GPU is not None:
        pytest.skip(f"GPU test not run: {NO_GPU}")
