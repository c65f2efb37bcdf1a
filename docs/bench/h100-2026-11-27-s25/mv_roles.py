"""mv_chain's graph on a kernel with time stamps in run_role (role trace): where a hand-over goes."""
import shutil, struct, statistics, sys, tempfile
from pathlib import Path
import numpy as np, torch, gpuos
sys.argv = [sys.argv[0], "16", "--nostats"]
src = (Path(__file__).resolve().parent / "mv_chain.py").read_text()
DUMP = r'''
#include "gpuos/op.cuh"
extern "C" __device__ unsigned long long gpuos_role_trace[];
extern "C" __device__ unsigned gpuos_role_trace_n[];
struct RoleDumpArgs { unsigned long long* dst; };
__device__ void role_dump_tile(const RoleDumpArgs& a, const gpuos::TileCtx& c) {
  const unsigned b = c.tile;
  if (threadIdx.x == 0) a.dst[b] = gpuos_role_trace_n[b];
  for (unsigned i = threadIdx.x; i < 1024u; i += blockDim.x) a.dst[1024u + b * 1024u + i] = gpuos_role_trace[b * 1024u + i];
  __syncthreads();
  if (threadIdx.x == 0) gpuos_role_trace_n[b] = 0u;
}
GPUOS_OPERATOR(role_dump, RoleDumpArgs, role_dump_tile)
'''
# Run mv_chain's body, then dump the role records of one more launch.
src = src.replace("    if NOSTATS:\n        ge.close()\n        sys.exit(0)", '''    rt.load_operator_source("role_dump", DUMP)
    dump = torch.zeros(1024 + 1024 * 1024, dtype=torch.int64, device="cuda")
    dt = gpuos.Task(rt.op_id("role_dump"), 1024, struct.pack("<Q", dump.data_ptr()))
    rt.wait(rt.submit(dt))
    rt.wait(ge.launch())
    rt.wait(rt.submit(dt))
    torch.cuda.synchronize()
    raw = dump.cpu().numpy().view(np.uint64)
    counts = raw[:1024].astype(np.int64)
    recs = raw[1024:].reshape(1024, 128, 8)
    R = []
    for b in range(1024):
        for j in range(min(int(counts[b]), 128)):
            r = recs[b, j]
            R.append([b, int(r[0] >> 32)] + [int(x) for x in r[1:7]])
    R = np.array(R, dtype=np.int64)
    np.save("/tmp/roles.npy", R)  # block, node, tr0 loop top, tr1 seen, tr3 call, tr4 return, tr5 barrier, tr6 red
    names = ("qkv", "o", "gate/up", "down")
    acc = {k: {} for k in names}
    for node in range(6, 65):
        prev, cur = R[R[:, 1] == node - 1], R[R[:, 1] == node]
        if len(prev) == 0 or len(cur) == 0:
            continue
        last = prev[np.argmax(prev[:, 5])]  # the producer whose tiles returned last
        m = {"ret->barrier": (last[6] - last[5]) / 1e3, "barrier->red": (last[7] - last[6]) / 1e3 if last[7] else float("nan"),
             "red->seen min": (cur[:, 3].min() - last[7]) / 1e3, "red->seen p50": (np.median(cur[:, 3]) - last[7]) / 1e3,
             "seen->call p50": float(np.median(cur[:, 4] - cur[:, 3])) / 1e3,
             "ret->next call p50": (np.median(cur[:, 4]) - last[5]) / 1e3,
             "ret->next call min": (cur[:, 4].min() - last[5]) / 1e3,
             "span call->ret": (cur[:, 5].max() - cur[:, 4].min()) / 1e3,
             "tile p50": float(np.median(cur[:, 5] - cur[:, 4])) / 1e3,
             "tile max": float(np.max(cur[:, 5] - cur[:, 4])) / 1e3,
             "ret spread (max-p50)": (cur[:, 5].max() - np.median(cur[:, 5])) / 1e3,
             "call spread (p50-min)": (np.median(cur[:, 4]) - cur[:, 4].min()) / 1e3,
             "blocks": len(cur)}
        d = acc[names[(node - 1) % 4]]
        for k, v in m.items():
            d.setdefault(k, []).append(v)
    for k, d in acc.items():
        print(k, {m: round(float(np.nanmedian(v)), 2) for m, v in d.items()})
    ge.close()
    sys.exit(0)''')
exec(compile(src, "mv_chain.py", "exec"))
