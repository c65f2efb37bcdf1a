preds={}
for line in open('dag.txt'):
    a=list(map(int,line.split())); preds[a[0]]=a[1:]
lists=[list(map(int,l.split())) for l in open('lists.txt') if l.strip()]
n=len(preds)
def simulate(T,SL,pre=0.0):
    # event-driven: each warp processes its list in order; item start = max(warp free, max pred end + SL)
    pos=[0]*len(lists); free=[0.0]*len(lists); end={}
    done=0
    while done<n:
        progress=False
        for w,l in enumerate(lists):
            while pos[w]<len(l):
                v=l[pos[w]]
                if any(p not in end for p in preds[v]): break
                s=max([free[w]]+[end[p]+SL for p in preds[v]])
                end[v]=s+T; free[w]=end[v]+pre; pos[w]+=1; done+=1; progress=True
        if not progress: raise Exception("deadlock")
    return max(end.values())
for T,SL in ((0.85,0.03),(0.85,0.45),(0.85,1.0),(0.85,1.7)):
    print(T,SL,"%.3f ms"%(simulate(T,SL)/1000))
