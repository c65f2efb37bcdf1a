"""From trace_step's raw records (--raw): per node kind, how its tiles spread over the SMs and blocks, and
tile time by how many tiles of the node its SM ran."""
import sys, collections, numpy as np
from llama_engine import OP_NAMES
r = np.load(sys.argv[1])
kinds = (r[:, 1] >> 56).astype(int)
sm = ((r[:, 1] >> 40) & 0xFFFF).astype(int)
blk = ((r[:, 1] >> 24) & 0xFFFF).astype(int)
dur = (r[:, 3] - r[:, 2]) / 1e3
keys = r[:, 0]
out = collections.defaultdict(list)
order = []
for key in np.unique(keys):
    m = keys == key
    k = OP_NAMES[kinds[m][0]]
    per_sm = collections.Counter(sm[m])
    per_blk = collections.Counter(blk[m])
    sm_hist = collections.Counter(per_sm.values())
    blk_hist = collections.Counter(per_blk.values())
    by_load = collections.defaultdict(list)
    for s, d in zip(sm[m], dur[m]):
        by_load[per_sm[s]].append(d)
    out[k].append((m.sum(), len(per_sm), dict(sorted(sm_hist.items())), dict(sorted(blk_hist.items())),
                   {l: round(float(np.median(v)), 2) for l, v in sorted(by_load.items())}))
for k, v in out.items():
    n = len(v)
    print(f"{k}: {n} nodes; e.g. node 3: tiles {v[min(3, n-1)][0]}, SMs used {v[min(3, n-1)][1]}, SMs by tiles run {v[min(3, n-1)][2]}, "
          f"blocks by tiles run {v[min(3, n-1)][3]}, median tile us by the SM's tiles {v[min(3, n-1)][4]}")
# blocks -> SM map
pairs = sorted(set(zip(blk.tolist(), sm.tolist())))
print("block->SM (first 20):", pairs[:20])
print("blocks per SM:", collections.Counter(collections.Counter(s for _, s in pairs).values()))
