"""Runs a Llama example script with gpuos.Runtime's stage_bytes defaulting to $STAGE (experiments only)."""
import os, runpy, sys
import gpuos
_R = gpuos.Runtime
def _runtime(*a, **k):
    k.setdefault("stage_bytes", int(os.environ.get("STAGE", "0")))
    return _R(*a, **k)
gpuos.Runtime = _runtime
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
