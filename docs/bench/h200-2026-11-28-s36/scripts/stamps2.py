"""Diagnostic (the GPUOS_ROLE_STAMPS kernel build): runs the 1B decode step at position POS, then copies the
kernel's per-block item stamps (gpuos_role_stamps [1024][128][8]) and saves them. Run from a copy of
examples/llama. Usage: python stamps.py MODEL_DIR OUT.npy [POS]"""
import struct
import sys
import time

import numpy as np
import torch

import gpuos
sys.path.insert(0, ".")
from llama_engine import Engine

COPY_OP = r"""
#include "gpuos/op.cuh"

struct StampCopyArgs { unsigned long long* out; };
__device__ void stamp_copy_tile(const StampCopyArgs& a, const gpuos::TileCtx& c) {
  for (unsigned i = threadIdx.x; i < 1024u; i += blockDim.x) a.out[c.tile * 1024ull + i] = gpuos_role_stamps[c.tile * 1024ull + i];
}
GPUOS_OPERATOR(stamp_copy, StampCopyArgs, stamp_copy_tile)
"""

model, out = sys.argv[1], sys.argv[2]
pos = int(sys.argv[3]) if len(sys.argv) > 3 else 40
buf = torch.zeros(1024 * 128 * 8, dtype=torch.int64, device="cuda")
with gpuos.Runtime() as rt:
    eng = Engine(rt, model, slots=8, max_pos=1024)
    rt.load_operator_source("stamp_copy", COPY_OP)
    rows = [(1, pos, 0, 0.0, 0)]
    for _ in range(12):
        eng.step(rows)
    steps = []
    for _ in range(3):
        t0 = time.perf_counter()
        eng.step(rows)
        steps.append((time.perf_counter() - t0) * 1e3)
    t = rt.submit(gpuos.Task(rt.op_id("stamp_copy"), 1024, struct.pack("<Q", buf.data_ptr())))
    rt.wait(t)
    torch.cuda.synchronize()
    eng.close()
np.save(out, buf.cpu().numpy().reshape(1024, 128, 8))
print("host step ms", [round(s, 3) for s in steps])
