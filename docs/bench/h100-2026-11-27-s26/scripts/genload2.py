"""Build time of one generation holding the six Llama operator files, cold cache (GPUOS_INLINE_OPERATORS from the environment)."""
import os, sys, tempfile, time
from pathlib import Path
os.environ["GPUOS_CACHE_DIR"] = tempfile.mkdtemp()
import gpuos
ops = Path(sys.argv[1])
names = ["llama_embed", "llama_qkv", "llama_attn", "llama_resid", "llama_swiglu", "llama_logits"]
with gpuos.Runtime() as rt:
    t0 = time.time()
    g = rt.load_operator_files([str(ops / f"{n}.cu") for n in names])
    print(f"inline={os.environ.get('GPUOS_INLINE_OPERATORS', '0')}: one generation of 6 files: build {g['build_ns']/1e6:.0f} ms, pause {g['pause_ns']/1e3:.0f} us, failed {g['failed']}, wall {time.time()-t0:.1f} s", flush=True)
