"""Offline: from trace_n_raw.npy (trace_step --raw), the last down projection's tiles and the LM head's
first, second and following calls block by block, against the down projection's end (us)."""
import numpy as np
OP=("embed","qkv","attn","resid","swiglu","logits")
r=np.load("trace_n_raw.npy"); base=int(r[:,2].min())
kind=(r[:,1]>>56).astype(int); blk=((r[:,1]>>24)&0xFFFF).astype(int); cnt=((r[:,1]>>16)&0xFF).astype(int); tile=(r[:,1]&0xFFFF).astype(int)
s=(r[:,2].astype(np.int64)-base)/1e3; e=(r[:,3].astype(np.int64)-base)/1e3
lm=kind==5
res=kind==3
# last down node key: the resid records with the max end
keys=np.unique(r[res,0]); ends={k:e[(r[:,0]==k)].max() for k in keys}
lastk=max(ends,key=ends.get); dn=(r[:,0]==lastk)
de=e[dn].max(); print("down end",de, "down tile ends pct", np.percentile(e[dn]-de,[0,10,50,90,100]))
print("down starts pct", np.percentile(s[dn]-de,[0,10,50,90,100]))
fs=[];fe=[];fc=[]
for b in np.unique(blk[lm]):
    m=lm&(blk==b); i=np.argmin(s[m]); fs.append(s[m][i]-de); fe.append(e[m][i]-de)
    m2=m.copy(); 
    ss=np.sort(s[m]); 
    fc.append((ss[1]-de) if len(ss)>1 else np.nan)
fs=np.array(fs);fe=np.array(fe);fc=np.array(fc)
print("lm first start pct",np.percentile(fs,[0,10,50,90,100]))
print("lm first end pct",np.percentile(fe,[0,10,50,90,100]))
print("lm second start pct",np.percentile(fc,[0,10,50,90,100]))
# counts of second calls
for b in np.unique(blk[lm])[:5]:
    m=lm&(blk==b); o=np.argsort(s[m]); print(b, [(round(s[m][j]-de,1),round(e[m][j]-de,1),cnt[m][j],tile[m][j]) for j in o[:4]])
print("----")
dblk=set(blk[dn].tolist())
for b in np.unique(blk[lm]):
    m=lm&(blk==b); st=s[m].min()-de
    if b not in dblk or st<8: 
        md=dn&(blk==b)
        print("block",b,"ran down" if b in dblk else "no down", "lm first start %.1f"%st, "down end %.1f"%((e[md].max()-de) if md.any() else np.nan))
# correlation: down end per block vs lm start
xs=[];ys=[]
for b in dblk:
    m=lm&(blk==b); md=dn&(blk==b)
    xs.append(e[md].max()-de); ys.append(s[m].min()-de)
print("corr", np.corrcoef(xs,ys)[0,1])
# swiglu / qkv analogous: first node of each kind after a resid
