"""Offline: from a trace_diag --raw file ([n][5]: key|delta<<32, meta, start, end, delta), for each
transition into an awaiting node, per block that ran the node before: prev end -> this call's entry
(start - delta) -> await return (start); medians. Usage: python diag.py raw.npy"""
import sys
import numpy as np
OP = ("embed", "qkv", "attn", "resid", "swiglu", "logits")
R = np.load(sys.argv[1]).astype(np.int64)
key = R[:, 0] & 0xFFFFFFFF
base = R[:, 2].min()
nodes = []
for k in np.unique(key):
    r = R[key == k]
    nodes.append((OP[int(r[0, 1] >> 56)], int(r[:, 3].max()) - base, r))
nodes.sort(key=lambda n: n[1])
def blk(r):
    return (r[:, 1] >> 24) & 0xFFFF
for i in range(1, len(nodes)):
    a, b = nodes[i - 1], nodes[i]
    if not (i < 7 or i > len(nodes) - 7):
        continue
    ab, bb = blk(a[2]), blk(b[2])
    rows = []
    for x in np.unique(bb):
        rb = b[2][bb == x]
        j = int(np.argmin(rb[:, 2]))
        start, delta = int(rb[j, 2]) - base, int(rb[j, 4])
        ran = x in ab
        end_own = int(a[2][ab == x][:, 3].max()) - base if ran else None
        rows.append((ran, start - delta - a[1], start - a[1], (start - delta - end_own) if ran else np.nan))
    rows = np.array(rows, dtype=float)
    for ran in (1, 0):
        s = rows[rows[:, 0] == ran]
        if len(s):
            p = lambda c: np.percentile(s[:, c], [10, 50, 90]) / 1e3
            print(f"{a[0]:7s}->{b[0]:7s} {'ran' if ran else 'idle'} n{len(s):3d}  entry-from-node-end p10/50/90 "
                  f"{p(1).round(1)}  await-return {p(2).round(1)}" + (f"  entry-from-own-end {p(3).round(1)}" if ran else ""))
