"""The LM head's start, per block, from trace_step.py --raw records (python lm_start.py RAW.npy): the
block's own tile of the last down projection ends, its first LM head call's entry, that call's start
(when its await returned), that call's end, tiles and calls, all in us after the last down tile ends;
percentiles over the blocks."""
import numpy as np, sys
r=np.load(sys.argv[1]).astype(np.int64)
kind=(r[:,1]>>56)&0xff; blk=(r[:,1]>>24)&0xffff; cnt=(r[:,1]>>16)&0xff; sm=(r[:,1]>>40)&0xffff
start=r[:,2]; end=r[:,3]; s_e=r[:,4]
L=kind==5
keys=r[:,0]
R=np.where(kind==3)[0]
lastkey=keys[R][np.argmax(end[R])]
D=(keys==lastkey)
dend=end[D].max()
ent=start-s_e
rows=[]
for b in np.unique(blk[L]):
  idx=np.where(L&(blk==b))[0]; o=idx[np.argsort(start[idx])]
  f=o[0]
  dm=D&(blk==b)
  de=end[dm].max() if dm.any() else dend-10**9
  rows.append((b,(de-dend)/1e3,(ent[f]-dend)/1e3,(start[f]-dend)/1e3,(end[f]-dend)/1e3,cnt[f],len(o),(end[o].max()-dend)/1e3, cnt[o].sum()))
a=np.array(rows,dtype=float)
a[a[:,1]<-1e5,1]=np.nan
print('percentiles of: own down end, lm entry, lm start(await ret), first call end, first count, calls, last end, tiles (us rel. last down end)')
for q in (0,10,25,50,75,90,100):
  print(q, np.round(np.nanpercentile(a[:,1:],q,axis=0),2))
print('corr own-down-end vs entry', np.corrcoef(np.nan_to_num(a[:,1]),a[:,2])[0,1])
# sorted by entry
o=np.argsort(a[:,2])
print('earliest entries', np.round(a[o[:5],1:5],2))
print('latest entries', np.round(a[o[-5:],1:5],2))
