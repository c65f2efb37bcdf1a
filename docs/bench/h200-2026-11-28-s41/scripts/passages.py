"""Per node kind, from trace_step.py --raw records (python passages.py RAW.npy): for each block that ran
the node before, the time from its own last tile of that node to its first call of this one (the
passage through run_role), and the median block's await return after the node before ended; medians
over the layers."""
import numpy as np, sys
r=np.load(sys.argv[1]).astype(np.int64)
kind=(r[:,1]>>56)&0xff; blk=(r[:,1]>>24)&0xffff
start=r[:,2]; end=r[:,3]; ent=start-r[:,4]; keys=r[:,0]
names=['embed','qkv','attn','resid','swiglu','logits']
nodes=[]
for k in np.unique(keys):
  m=keys==k; nodes.append((end[m].max(),k,names[kind[m][0]]))
nodes.sort()
res={}
for i in range(1,len(nodes)):
  pe,pk,pn=nodes[i-1]; e,k,n=nodes[i]
  if n=='resid': n='o' if pn=='attn' else 'down'
  P=keys==pk; N=keys==k
  pas=[];wt=[]
  for b in np.unique(blk[N]):
    pm=P&(blk==b)
    if not pm.any(): continue
    nm=np.where(N&(blk==b))[0]; f=nm[np.argmin(start[nm])]
    pas.append((ent[f]-end[pm].max())/1e3); wt.append((start[f]-pe)/1e3)
  if pas: res.setdefault(n,[]).append((np.median(pas),np.percentile(pas,90),np.median(wt)))
for n,v in res.items():
  v=np.array(v); print(n, 'own prev tile end -> entry p50 %.2f p90 %.2f; await return after prev node end p50 %.2f'%tuple(np.median(v,axis=0)), len(v))
