"""Where the attention tile's time goes: a copy of the operators whose llama_attn stamps the global timer
at each barrier (thread 0), for the tiles that run a chunk; medians over the layers of a few batch-1
steps at position 40 (one chunk) and 150 (three chunks, combined)."""
import re, shutil, sys, tempfile, statistics
from pathlib import Path
import numpy as np
import torch
import gpuos
from llama_engine import Engine, OPS_DIR

N = 1 << 16
buf = torch.zeros(N * 8, dtype=torch.int64, device="cuda")
PRE = r"""
#define ATTN_BUF {addr}ull
__device__ __forceinline__ unsigned long long attn_now() {{ unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }}
#define STAMP(I) do {{ if (threadIdx.x == 0) stamps[I] = attn_now(); }} while (0)
""".format(addr=buf.data_ptr())
def patched(dst: Path) -> Path:
    shutil.copytree(Path(sys.argv[2]) if len(sys.argv) > 2 else OPS_DIR, dst, dirs_exist_ok=True)
    f = dst / "llama_attn.cu"
    s = f.read_text()
    s = s.replace('#include "llama.cuh"\n', '#include "llama.cuh"\n' + PRE, 1)
    s = s.replace("  if (split >= (used > 1u ? used : 1u)) return;  // past the row's positions (chunk 0 runs for an unused row)\n",
                  "  if (split >= (used > 1u ? used : 1u)) return;\n  unsigned long long stamps[8] = {};\n  STAMP(0);\n", 1)
    parts = s.split("  __syncthreads();\n")
    out = parts[0]
    for i, p in enumerate(parts[1:]):
        out += "  __syncthreads();\n" + (f"  STAMP({i + 1});\n" if i < 4 else "") + p
    s = out
    flush = ("    if (threadIdx.x == 0) { stamps[7] = attn_now(); unsigned long long* b = reinterpret_cast<unsigned long long*>(ATTN_BUF);"
             " const unsigned long long k = atomicAdd(b, 1ull) + 1; if (k < " + str(N) + ") for (int i = 0; i < 8; ++i) b[k * 8 + i] = stamps[i]; }\n")
    s = s.replace("      out[j] = f2bf(n > 0 && l > 0.0f ? os[j] / l : 0.0f);\n    }\n    return;",
                  "      out[j] = f2bf(n > 0 && l > 0.0f ? os[j] / l : 0.0f);\n    }\n" + flush + "    return;", 1)
    f.write_text(s)
    return dst

def main():
    model = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp, gpuos.Runtime() as rt:
        eng = Engine(rt, model, slots=2, max_pos=256, ops_dir=patched(Path(tmp)))
        for pos in (8, 40, 62):
            for _ in range(5):
                eng.step([(1, pos, 0, 0.0, 0)])
            buf.zero_(); torch.cuda.synchronize()
            for _ in range(5):
                eng.step([(1, pos, 0, 0.0, 0)])
            raw = buf.cpu().numpy().reshape(N, 8)
            n = int(raw[0, 0]); recs = raw[1:n + 1].astype(np.int64)
            d = np.diff(recs[:, [0, 1, 2, 3, 4, 7]], axis=1) / 1e3
            names = ["start->bar1 (rows, q, loads issued)", "bar1->bar2 (keys, scores)", "bar2->bar3 (softmax)",
                     "bar3->bar4 (values, output)", "bar4->end (store)"]
            print(f"position {pos}: {n} single-chunk tiles recorded; us, median / p90")
            for i, nm in enumerate(names):
                print(f"  {nm:40s} {np.median(d[:, i]):6.2f} {np.percentile(d[:, i], 90):6.2f}")
            print(f"  {'total':40s} {np.median(d.sum(1)):6.2f}")
        eng.close()

main()
