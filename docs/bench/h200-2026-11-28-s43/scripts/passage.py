"""A block's passage from one call to the next, from the diagnostic kernel's stamps (trace_step.py --raw
of the stamped build: columns key, kind|sm|block|count|tile, start, end, start - entry, then the stamps
s0 end barrier passed, s1 tail fence done, s2 item barrier passed, s3 first poll, s4 await done, s5 polls).
Per node kind, medians over its calls (all, and the 8 blocks that end it last) in us: own end of the call
before -> s0 -> s1 (the fence) ; s0 -> s2 (the item barrier) ; s2 -> entry ; entry -> s3 (first poll) ;
s3 -> s4 (the wait) ; polls; with variants/role_stamps_asked_prepared.diff's records (a 12th column, when
thread 0 had asked for its first rounds, right before its await) also entry -> asked, and with a 13th
(when the call before returned to run_role) own end -> that return, and that return -> s0."""
import sys

import numpy as np

r = np.load(sys.argv[1]).astype(np.int64)
kind = (r[:, 1] >> 56) & 0xff
blk = (r[:, 1] >> 24) & 0xffff
start, end = r[:, 2], r[:, 3]
ent = start - r[:, 4]
s = r[:, 5:11]
asked = r[:, 11] if r.shape[1] > 11 else np.zeros(len(r), dtype=np.int64)
ret = r[:, 12] if r.shape[1] > 12 else np.zeros(len(r), dtype=np.int64)
keys = r[:, 0]
names = ['embed', 'qkv', 'attn', 'resid', 'swiglu', 'logits']
nodes = sorted((end[keys == k].max(), k, names[kind[keys == k][0]]) for k in np.unique(keys))
label = {}
for i, (e, k, n) in enumerate(nodes):
    if n == 'resid':
        n = 'o' if nodes[i - 1][2] == 'attn' else 'down'
    label[k] = n
# each block's calls in time order: the one before each call
prev_end = np.full(len(r), -1, dtype=np.int64)
for b in np.unique(blk):
    idx = np.where(blk == b)[0]
    idx = idx[np.argsort(ent[idx])]
    prev_end[idx[1:]] = end[idx[:-1]]
cols = ["end>s0", "fence", "s0>s2", "s2>entry", "entry>poll", "wait", "polls", "end>entry", "entry>asked",
        "end>ret", "ret>s0"]
rows = {}
for k in np.unique(keys):
    m = np.where(keys == k)[0]
    lastb = m[np.argsort(end[m])[-8:]]
    for sel, tag in ((m, "all"), (lastb, "last8")):
        v = []
        for j in sel:
            s0, s1, s2, s3, s4, s5 = s[j]
            ok = prev_end[j] > 0 and prev_end[j] <= s0 <= s2 <= ent[j]
            if not ok:
                continue
            fence = (s1 - s0) / 1e3 if s0 <= s1 <= s2 else np.nan
            polled = s3 >= ent[j] and s4 >= s3
            v.append(((s0 - prev_end[j]) / 1e3, fence, (s2 - s0) / 1e3, (ent[j] - s2) / 1e3,
                      (s3 - ent[j]) / 1e3 if polled else np.nan, (s4 - s3) / 1e3 if polled else np.nan,
                      float(s5) if polled else np.nan, (ent[j] - prev_end[j]) / 1e3,
                      (asked[j] - ent[j]) / 1e3 if ent[j] <= asked[j] <= end[j] else np.nan,
                      (ret[j] - prev_end[j]) / 1e3 if prev_end[j] <= ret[j] <= s0 else np.nan,
                      (s0 - ret[j]) / 1e3 if prev_end[j] <= ret[j] <= s0 else np.nan))
        if v:
            rows.setdefault((label[k], tag), []).append(np.nanmedian(np.array(v), axis=0))
print("us, medians over a node's calls then over the layers; " + ", ".join(cols))
for (n, tag), v in rows.items():
    a = np.nanmedian(np.array(v), axis=0)
    print(f"{n:7s} {tag:5s} " + " ".join(f"{c} {x:6.2f}" for c, x in zip(cols, a)))
