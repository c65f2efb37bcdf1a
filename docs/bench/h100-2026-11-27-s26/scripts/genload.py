"""Per-generation build times of loading the Llama operator files one by one, cold cache."""
import os, sys, tempfile, time
from pathlib import Path
os.environ["GPUOS_CACHE_DIR"] = tempfile.mkdtemp()
import gpuos
ops = Path(sys.argv[1])
names = ["llama_embed", "llama_qkv", "llama_attn", "llama_resid", "llama_swiglu", "llama_logits"]
with gpuos.Runtime() as rt:
    t0 = time.time()
    for n in names:
        g = rt.load_operator_file(str(ops / f"{n}.cu"))
        print(f"{n}: build {g['build_ns']/1e6:.0f} ms pause {g['pause_ns']/1e3:.0f} us", flush=True)
    print(f"total {time.time()-t0:.1f} s")
