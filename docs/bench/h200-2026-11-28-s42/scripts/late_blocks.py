"""Per node kind, from trace_step.py --raw records (python late_blocks.py RAW.npy): which blocks end a node.
For the 8 blocks of each node that end last and for all its blocks: when they entered the node and when
their await returned (us after the node before ended), how long their calls took, whether they ran the
node before and when their own last tile of it ended; medians over the layers."""
import sys

import numpy as np

r = np.load(sys.argv[1]).astype(np.int64)
kind = (r[:, 1] >> 56) & 0xff
blk = (r[:, 1] >> 24) & 0xffff
start, end = r[:, 2], r[:, 3]
ent = start - r[:, 4]
keys = r[:, 0]
names = ['embed', 'qkv', 'attn', 'resid', 'swiglu', 'logits']
nodes = sorted((end[keys == k].max(), k, names[kind[keys == k][0]]) for k in np.unique(keys))
rows = {}
for i in range(1, len(nodes)):
    pe, pk, pn = nodes[i - 1]
    e, k, n = nodes[i]
    if n == 'resid':
        n = 'o' if pn == 'attn' else 'down'
    per = []  # block: entry, await return, its end, call time, ran prev, own prev end (all vs pe)
    for b in np.unique(blk[keys == k]):
        m = (keys == k) & (blk == b)
        pm = (keys == pk) & (blk == b)
        per.append(((ent[m].min() - pe) / 1e3, (start[m].min() - pe) / 1e3, (end[m].max() - pe) / 1e3,
                    (end[m] - start[m]).sum() / 1e3, float(pm.any()),
                    (end[pm].max() - pe) / 1e3 if pm.any() else np.nan))
    per = np.array(per)
    last = per[np.argsort(per[:, 2])[-8:]]
    rows.setdefault(n, []).append((np.median(last, axis=0), np.nanmedian(per, axis=0),
                                   (e - pe) / 1e3, np.median(per[:, 2])))
print("us after the node before ended, medians over the layers: entry, await return, end, call time, "
      "ran the node before (fraction), own tile of it ended")
for n, v in rows.items():
    L = np.median(np.array([x[0] for x in v]), axis=0)
    A = np.median(np.array([x[1] for x in v]), axis=0)
    print(f"{n:7s} last 8: entry {L[0]:5.2f} await {L[1]:5.2f} end {L[2]:5.2f} calls {L[3]:5.2f} ran prev {L[4]:.2f} "
          f"prev end {L[5]:6.2f} | all: entry {A[0]:5.2f} await {A[1]:5.2f} end {A[2]:5.2f} calls {A[3]:5.2f} "
          f"ran prev {A[4]:.2f} prev end {A[5]:6.2f} | node end {np.median([x[2] for x in v]):5.2f}")
