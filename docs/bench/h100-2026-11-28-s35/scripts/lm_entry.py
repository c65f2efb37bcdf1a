"""Offline: each block's first LM-head call against the end of its item before (the last down projection,
or gate/up's last call for the blocks without a down tile), from a trace_diag --raw file: that end to the
call's entry, and the entry to the await's return. Usage: python lm_entry.py raw.npy"""
import sys
import numpy as np
R = np.load(sys.argv[1]).astype(np.int64)
base = R[:, 2].min()
kind, blk = R[:, 1] >> 56, (R[:, 1] >> 24) & 0xFFFF
lg, lb = R[kind == 5], blk[kind == 5]
others, ob = R[kind != 5], blk[kind != 5]
res = []
for b in np.unique(lb):
    r = lg[lb == b]
    j = np.argmin(r[:, 2])
    entry, start = r[j, 2] - r[j, 4] - base, r[j, 2] - base
    prev = others[ob == b]
    prev = prev[prev[:, 3] - base <= entry]
    if len(prev):
        k = np.argmax(prev[:, 3])
        res.append((int(prev[k, 1] >> 56), (entry - (prev[k, 3] - base)) / 1e3, (start - entry) / 1e3))
res = np.array(res)
for pk, name in ((3, "down"), (4, "gate/up")):
    s = res[res[:, 0] == pk]
    if len(s):
        print(f"item before: {name:7s} blocks {len(s):3d}  its end -> LM head entry p10/50/90 "
              f"{np.percentile(s[:, 1], [10, 50, 90]).round(2)}  entry -> await return {np.percentile(s[:, 2], [10, 50, 90]).round(2)}")
