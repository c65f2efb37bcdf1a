"""The hand-over between chained nodes from trace_roles.py's records (its --json writes one .npz a step):
per node kind, medians over the layers of (us): seen = the wait's poll saw the count, after the previous
node's last tile ended; pre = from the barrier after the wait to the operator's call; call = from the
call to the tile's first instruction."""
import sys
import numpy as np

d = np.load(sys.argv[1])
recs, roles = d["recs"], d["roles"]  # recs: key, kind|sm|block|tile, start, end; roles: block, node, t0..t3
blk = (recs[:, 1] >> 24) & 0xFFFF
kind_of = lambda i: "embed" if i == 0 else ("logits" if i == 81 else ["qkv", "attn", "o", "swiglu", "down"][(i - 1) % 5])
by_b = {int(b): recs[blk == b][np.argsort(recs[blk == b][:, 2])] for b in np.unique(blk)}
rows = []
for b in np.unique(roles[:, 0]):
    rr = roles[roles[:, 0] == b]
    rr = rr[np.argsort(rr[:, 4])]
    ops = by_b.get(int(b))
    if ops is None:
        continue
    for j, (_, i, t0, t1, t2, t3) in enumerate(rr):
        nxt = rr[j + 1][2] if j + 1 < len(rr) else 1 << 62
        m = (ops[:, 2] >= t2) & (ops[:, 2] < nxt)
        if m.any():
            rows.append((i, b, t0, t1, t2, t3, ops[m, 2].min(), ops[m, 3].max()))
rows = np.array(rows, dtype=np.int64)
ends = {i: rows[rows[:, 0] == i][:, 7].max() for i in np.unique(rows[:, 0])}
out = {}
for i in range(1, 82):
    r = rows[rows[:, 0] == i]
    if len(r) == 0 or (i - 1) not in ends:
        continue
    w = r[:, 3] != 0
    seen, pre, call = (r[w, 3] - ends[i - 1]) / 1e3, (r[:, 5] - r[:, 4]) / 1e3, (r[:, 6] - r[:, 5]) / 1e3
    out.setdefault(kind_of(i), []).append([np.median(seen), np.percentile(pre, 10), np.median(pre), np.percentile(pre, 90),
                                           np.percentile(call, 10), np.median(call), np.percentile(call, 90), len(r)])
print("kind      seen_p50  pre_p10 pre_p50 pre_p90  call_p10 call_p50 call_p90   blocks")
for k, v in out.items():
    print("%-8s" % k, " ".join("%8.2f" % x for x in np.median(np.array(v), axis=0)))
