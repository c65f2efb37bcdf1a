import random
preds={}
for line in open('dag.txt'):
    a=list(map(int,line.split())); preds[a[0]]=a[1:]
lists=[list(map(int,l.split())) for l in open('lists.txt') if l.strip()]
n=len(preds)
def simulate(Tf,SL):
    pos=[0]*len(lists); free=[0.0]*len(lists); end={}
    done=0
    while done<n:
        progress=False
        for w,l in enumerate(lists):
            while pos[w]<len(l):
                v=l[pos[w]]
                if any(p not in end for p in preds[v]): break
                s=max([free[w]]+[end[p]+SL for p in preds[v]])
                end[v]=s+Tf(); free[w]=end[v]; pos[w]+=1; done+=1; progress=True
        if not progress: raise Exception("deadlock")
    return max(end.values())
random.seed(1)
print("const", simulate(lambda:0.85,0.03))
print("exp", simulate(lambda:random.expovariate(1/0.85),0.03))
print("uniform 0.4-1.3", simulate(lambda:random.uniform(0.4,1.3),0.03))
print("bimodal 10% 3us", simulate(lambda:3.0 if random.random()<0.1 else 0.6,0.03))
