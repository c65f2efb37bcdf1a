"""Offline: per node transition, each block's gap from its item before's end to its next call's start (the
await's return for an awaiting operator), from a trace_step --raw file. Usage: python gaps.py raw.npy"""
import sys, numpy as np
OP=("embed","qkv","attn","resid","swiglu","logits")
recs=np.load(sys.argv[1]); base=int(recs[:,2].min())
nodes=[]
for k in np.unique(recs[:,0]):
    r=recs[recs[:,0]==k]; nodes.append([OP[int(r[0,1]>>56)], int(r[:,3].max())-base, r])
nodes.sort(key=lambda n:n[1])
names=[n[0] for n in nodes]
print(" ".join(names[:12]), "...", len(nodes))
def per_block(r, f):
    b=(r[:,1]>>24)&0xFFFF
    return {int(x): f(r[b==x]) for x in np.unique(b)}
# transitions: node i -> node i+1; for blocks present in both, gap = next first start - prev last end
for i in range(len(nodes)-1):
    a,b=nodes[i],nodes[i+1]
    ends=per_block(a[2], lambda r:int(r[:,3].max())-base)
    starts=per_block(b[2], lambda r:int(r[:,2].min())-base)
    aend=a[1]
    both=[starts[k]-ends[k] for k in ends if k in starts]
    notin=[starts[k]-aend for k in starts if k not in ends]
    after=[starts[k]-aend for k in starts if k in ends]
    if i<8 or i>len(nodes)-10:
        f=lambda v: "n%3d p10 %5.1f p50 %5.1f p90 %5.1f"%(len(v),*np.percentile(v,[10,50,90])/1e3) if len(v) else "-"
        print(f"{a[0]:7s}->{b[0]:7s} own-end->start {f(both)} | from node end, blocks that ran it {f(after)} | others {f(notin)}")
