import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import importlib.util

import pytest

import gpuos


def _no_gpu():
    try:
        gpuos.query_device()
    except gpuos.Error as e:
        if e.status in ("GPUOS_ERR_NO_DEVICE", "GPUOS_ERR_UNSUPPORTED"):
            return f"{e.status}: {e}"
        raise
    missing = [m for m in ("torch", "transformers", "safetensors") if importlib.util.find_spec(m) is None]
    return f"missing {', '.join(missing)}" if missing else None


NO_GPU = _no_gpu()


def _model(tmp_path_factory, preset):
    if NO_GPU is not None:
        pytest.skip(f"GPU test not run: {NO_GPU}")
    from make_weights import make

    d = tmp_path_factory.mktemp(preset)
    make(str(d), preset, seed=0)
    return str(d)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """The tiny Llama config's random weights (make_weights.py), made once; skips without a GPU."""
    return _model(tmp_path_factory, "tiny")


@pytest.fixture(scope="session")
def tiny_g8_model(tmp_path_factory):
    """A tiny config with 8 query heads per KV head, made once; skips without a GPU."""
    return _model(tmp_path_factory, "tiny-g8")
