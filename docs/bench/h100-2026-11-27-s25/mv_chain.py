"""The chain of chain.cu (16 layers of qkv, o, gate/up, down projections, batch 1, no norm, no attention)
as one gpuos graph of 64 nodes, each tile llama::project16 as in chain.cu's mode 3; device time between
two stamp nodes."""
import os, shutil, struct, statistics, sys, tempfile, time
from pathlib import Path
import torch, gpuos

MV = r'''
#include "llama.cuh"
struct MvArgs { const llama::bf16* w; const llama::bf16* x; llama::bf16* y; unsigned long long* stats; unsigned K; unsigned node; };
__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
__device__ void mv16_tile(const MvArgs& a, const gpuos::TileCtx& c) {
  const unsigned long long t0 = gt();
  const long long k0 = clock64();
  const unsigned g = (threadIdx.x & 31u) >> 2;
  const llama::bf16* w = a.w + (unsigned long long)(c.tile * 16u + g) * a.K;
  const llama::Input in{a.x, nullptr, nullptr, a.K, 1u, 0.f, 0u};
  const float* out = llama::project16(w, w + 8ull * a.K, in, static_cast<float*>(c.smem));
  if (threadIdx.x < 16) a.y[c.tile * 16u + threadIdx.x] = llama::f2bf(out[threadIdx.x * llama::kMaxRows]);
  if (a.stats && threadIdx.x == 0) {
    const unsigned long long t1 = gt();
    unsigned long long* s = a.stats + 4ull * a.node;
    atomicMin(s, t0); atomicMax(s + 1, t1); atomicAdd(s + 2, t1 - t0); atomicAdd(s + 3, 1ull);
    atomicAdd(a.stats + 4ull * 4096, (unsigned long long)(clock64() - k0)); atomicAdd(a.stats + 4ull * 4096 + 1, t1 - t0);
  }
}
GPUOS_OPERATOR(mv16, MvArgs, mv16_tile)
'''
STAMP = r'''
#include "gpuos/op.cuh"
struct StampArgs { unsigned long long* out; };
__device__ void stamp_tile(const StampArgs& a, const gpuos::TileCtx&) {
  if (threadIdx.x == 0) { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); *a.out = t; }
}
GPUOS_OPERATOR(stamp, StampArgs, stamp_tile)
'''
L = int(sys.argv[1]) if len(sys.argv) > 1 else 16
NOSTATS = "--nostats" in sys.argv
BUILTIN = "--builtin" in sys.argv  # the kernel's built-in mv16 (an experimental build), inlined into the role loop
H, I, QKV = 2048, 8192, 3072
shapes = [s for _ in range(L) for s in ((QKV, H), (H, H), (2 * I, H), (H, I))]
with tempfile.TemporaryDirectory() as tmp, gpuos.Runtime() as rt:
    ops = Path(tmp) / "ops"
    shutil.copytree(Path(__file__).resolve().parent / "ops", ops)
    (ops / "mv16.cu").write_text(MV)
    (ops / "stamp.cu").write_text(STAMP)
    if not BUILTIN:
        rt.load_operator_file(str(ops / "mv16.cu"))
    rt.load_operator_file(str(ops / "stamp.cu"))
    mv, st = rt.op_id("mv16"), rt.op_id("stamp")
    W = [torch.randn(r * k, dtype=torch.bfloat16, device="cuda") * 0.02 for r, k in shapes]
    act = torch.zeros(len(shapes) + 1, 2 * I, dtype=torch.bfloat16, device="cuda")
    act[0, :H] = 0.01
    stamps = torch.zeros(2, dtype=torch.int64, device="cuda")
    stats = torch.zeros(4097, 4, dtype=torch.int64, device="cuda")
    g = gpuos.Graph()
    prev = g.add(gpuos.Task(st, 1, struct.pack("<Q", stamps.data_ptr())), [])
    for n, (r, k) in enumerate(shapes):
        prev = g.add(gpuos.Task(mv, r // 16, struct.pack("<4QII", W[n].data_ptr(), act[n].data_ptr(), act[n + 1].data_ptr(), 0 if NOSTATS else stats.data_ptr(), k, n)), [prev])
    g.add(gpuos.Task(st, 1, struct.pack("<Q", stamps.data_ptr() + 8)), [prev])
    ge = gpuos.GraphExec(rt, g)
    torch.cuda.synchronize()
    dev, host = [], []
    for i in range(25):
        stats[:, 0] = 2**62
        stats[:, 1:] = 0
        stats[4096] = 0
        torch.cuda.synchronize()
        t = time.perf_counter()
        if not rt.wait(ge.launch(), 10.0):
            raise TimeoutError
        host.append(time.perf_counter() - t)
        s = stamps.cpu()
        dev.append((int(s[1]) - int(s[0])) / 1e3)
    d = statistics.median(dev[5:])
    wbytes = sum(r * k * 2 for r, k in shapes)
    print(f"gpuos graph of {len(shapes)} projections: device {d:.1f} us ({d / L:.1f} us a layer, {wbytes / d / 1e3:.0f} GB/s), "
          f"host round trip {statistics.median(host[5:]) * 1e6:.1f} us; placed={os.environ.get('GPUOS_GRAPH_PLACED', '1')}"
          f"{' (built-in mv16)' if BUILTIN else ''}")
    if NOSTATS:
        ge.close()
        sys.exit(0)
    S = stats.cpu().tolist()
    print(f"SM clock while the tiles ran: {S[4096][0] / S[4096][1] * 1e3:.0f} MHz")
    names = ("qkv", "o", "gate/up", "down")
    acc = {k: [0.0, 0.0, 0.0, 0] for k in names}
    for n in range(4, len(shapes)):
        k = names[n % 4]
        acc[k][0] += (S[n][1] - S[n][0]) / 1e3
        acc[k][1] += (S[n][0] - S[n - 1][1]) / 1e3
        acc[k][2] += S[n][2] / S[n][3] / 1e3
        acc[k][3] += 1
    print("per node (means over layers 1..): " + " | ".join(
        f"{k} span {v[0] / v[3]:.1f} gap {v[1] / v[3]:.1f} tile {v[2] / v[3]:.1f}" for k, v in acc.items()))
    ge.close()
