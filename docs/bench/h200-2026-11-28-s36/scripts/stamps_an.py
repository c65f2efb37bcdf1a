"""Offline: the dispatcher's time per item from stamps.py's file ([1024 blocks][128 items][8]: 0 loop top,
1 claim result, 2 before the call, 3 after, 4 tiles' barrier, 5 tail's release done, 6 its count done,
7 node). Medians (us) per node kind; node 0 embed, then 5 a layer, the last the LM head."""
import sys
import numpy as np
S = np.load(sys.argv[1]).astype(np.int64)
KINDS = ["qkv", "attn", "o", "swiglu", "down"]
nodes = int(S[:, :, 7].max()) + 1
def kind(v):
    return "embed" if v == 0 else ("logits" if v == nodes - 1 else KINDS[(v - 1) % 5])
rows = []
for b in range(S.shape[0]):
    items = [j for j in range(127) if S[b, j, 0] != 0]  # item 127: the claiming path's stamps (c8)
    for n, j in enumerate(items):
        s = S[b, j]
        nxt = S[b, items[n + 1]] if n + 1 < len(items) else None
        rows.append(dict(k=kind(int(s[7])), node=int(s[7]), b=b,
                         claim=(s[1] - s[0]) if s[1] else np.nan, pre=s[2] - s[0], op=s[3] - s[2], post=s[4] - s[3],
                         fence=(s[5] - s[4]) if s[5] else np.nan, count=(s[6] - s[5]) if s[6] and s[5] else np.nan,
                         to_next_top=(nxt[0] - s[4]) if nxt is not None else np.nan,
                         gap=(nxt[2] - s[3]) if nxt is not None else np.nan,
                         nk=kind(int(nxt[7])) if nxt is not None else "-"))
cols = ["claim", "pre", "op", "post", "fence", "count", "to_next_top", "gap"]
print("per item, by its kind: medians (p90) in us; gap = this call's return to the next item's call")
print(f"{'kind':7s} {'n':>5s} " + " ".join(f"{c:>13s}" for c in cols))
for k in ["embed", "qkv", "attn", "o", "swiglu", "down", "logits"]:
    r = [x for x in rows if x["k"] == k]
    if not r:
        continue
    def f(c):
        v = np.array([x[c] for x in r], dtype=float) / 1e3
        v = v[~np.isnan(v)]
        return f"{np.median(v):6.2f} ({np.percentile(v, 90):5.2f})" if len(v) else "      -      "
    print(f"{k:7s} {len(r):5d} " + " ".join(f"{f(c):>13s}" for c in cols))
print("transitions (this kind -> next item's kind): gap medians (p10, p90) us")
pairs = {}
for x in rows:
    if x["nk"] != "-":
        pairs.setdefault((x["k"], x["nk"]), []).append(x["gap"] / 1e3)
for (a, b), v in sorted(pairs.items(), key=lambda kv: -len(kv[1])):
    v = np.array(v)
    print(f"{a:7s}->{b:7s} n{len(v):5d}  {np.median(v):6.2f} ({np.percentile(v, 10):5.2f}, {np.percentile(v, 90):5.2f})")
