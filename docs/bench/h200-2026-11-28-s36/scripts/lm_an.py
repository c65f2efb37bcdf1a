"""Offline: the LM head's calls per block from trace_step.py's --raw file: each block's calls (count,
duration, per-tile time), the gaps between its calls, its first start and last end against the node
before's end. us."""
import sys
import numpy as np
R = np.load(sys.argv[1])
kind = (R[:, 1] >> np.uint64(56)).astype(int)
lm = kind.max()  # llama_logits is the last of OP_NAMES
prev_end = int(R[kind != lm, 3].max())
L = R[kind == lm]
blk = ((L[:, 1] >> np.uint64(24)) & np.uint64(0xFFFF)).astype(int)
cnt = ((L[:, 1] >> np.uint64(16)) & np.uint64(0xFF)).astype(int)
st, en, ent = L[:, 2].astype(np.int64), L[:, 3].astype(np.int64), L[:, 4].astype(np.int64)
firsts, lasts, gaps, ncalls, tiles, busy, first_dur, other_tile = [], [], [], [], [], [], [], []
for b in np.unique(blk):
    i = np.where(blk == b)[0]
    i = i[np.argsort(st[i])]
    firsts.append((st[i[0]] - prev_end) / 1e3); lasts.append((en[i[-1]] - prev_end) / 1e3)
    gaps += list((st[i[1:]] - en[i[:-1]]) / 1e3)
    ncalls.append(len(i)); tiles.append(cnt[i].sum()); busy.append((en[i] - st[i]).sum() / 1e3)
    first_dur.append((en[i[0]] - st[i[0]]) / 1e3 / max(cnt[i[0]], 1))
    other_tile += list(((en[i[1:]] - st[i[1:]]) / np.maximum(cnt[i[1:]], 1)) / 1e3)
def q(x):
    x = np.asarray(x, float)
    return f"p10 {np.percentile(x, 10):7.2f} p50 {np.median(x):7.2f} p90 {np.percentile(x, 90):7.2f} max {x.max():7.2f} mean {x.mean():7.2f} n {len(x)}"
print("LM head: node span", (en.max() - st.min()) / 1e3, "us; from the node before's end", (en.max() - prev_end) / 1e3)
print("entry->start (await)", q(ent / 1e3))
for name, v in (("first start", firsts), ("last end", lasts), ("calls a block", ncalls), ("tiles a block", tiles),
                ("busy a block", busy), ("gap between calls", gaps), ("first call per tile", first_dur),
                ("later calls per tile", other_tile)):
    print(f"{name:22s} {q(v)}")
cs = np.bincount(cnt)
print("call sizes:", {i: int(c) for i, c in enumerate(cs) if c})
