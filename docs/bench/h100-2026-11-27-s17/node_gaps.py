"""Per node of a decode step, from trace_step.py --raw records: the nodes in completion order, how many
of a node's blocks started it before its predecessor ended (operators that await their inputs are
called early), the median block's first start and the node's end, both after the predecessor's end.
usage: python3 node_gaps.py RAW.npy [NODES]"""
import sys
import numpy as np

OP = ["embed", "qkv", "attn", "resid", "swiglu", "logits"]
r = np.load(sys.argv[1])
count = int(sys.argv[2]) if len(sys.argv) > 2 else 13
kind = (r[:, 1] >> 56).astype(int)
blk = ((r[:, 1] >> 24) & 0xFFFF).astype(int)
t0 = r[:, 2].min()
s, e = (r[:, 2] - t0) / 1e3, (r[:, 3] - t0) / 1e3
nodes = []
for k in np.unique(r[:, 0]):
    m = r[:, 0] == k
    nodes.append(dict(kind=OP[kind[m][0]], s=s[m], e=e[m], b=blk[m]))
nodes.sort(key=lambda n: n["e"].max())
for i in range(1, min(count, len(nodes))):
    n, pe = nodes[i], nodes[i - 1]["e"].max()
    fb = np.array([n["s"][n["b"] == b].min() for b in np.unique(n["b"])])
    print(f"{n['kind']:7s} tiles {len(n['s']):5d}  blocks early {(fb < pe).sum():3d}/{len(fb):3d}  "
          f"median first start {np.median(fb) - pe:7.1f} us  end {n['e'].max() - pe:6.1f} us after the predecessor's end")
