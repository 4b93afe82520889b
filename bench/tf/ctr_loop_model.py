"""Both CTR training loops of bench/tf/ctr_compare.py re-implemented in NumPy, single process, to
attribute AUC differences between tj-train and the TF program (docs/decisions.md, "Session 12: CTR
model parity with TensorFlow"). The generator is tj-train's synthetic-ctr (trainer/data/
synthetic_ctr.cc); the model an FM with a bias head (scale=False) or Keras' Dense(1) head
(scale=True, a ~ U(+-sqrt 3) drawn from seed + 100); Adagrad with Keras' per-occurrence
accumulator (acc="occ") or tj-train's per-id one ("dedup"); TF's random windows (sampling="tf")
or tj-train's shuffled epochs ("tj"); held-out set after the training examples (heldout="tf") or
every fifth example ("tj"); `stale` steps of gradient delay. Prints the AUC every 100 steps, the
final a, and the generator's own AUC (the ceiling). Not a benchmark: nothing is timed.

    python3 bench/tf/ctr_loop_model.py '{"scale": false, "init": "normal", "acc": "dedup"}'
"""
import json
import sys

import numpy as np


def mix(x):
    x=(x+np.uint64(0x9E3779B97F4A7C15))
    x=x^(x>>np.uint64(30)); x=x*np.uint64(0xBF58476D1CE4E5B9)
    x=x^(x>>np.uint64(27)); x=x*np.uint64(0x94D049BB133111EB)
    return x^(x>>np.uint64(31))
def h(seed,salt,a,b):
    return mix(mix(mix(np.uint64(seed)^mix(np.uint64(salt)))^a)^b)
def uni(x): return (x>>np.uint64(11)).astype(np.float64)*2.0**-53
F=8
def gen(idx, seed=1, vocab=1000, space=1<<22):
    i=np.asarray(idx,dtype=np.uint64)[:,None]; f=np.arange(F,dtype=np.uint64)[None,:]
    with np.errstate(over='ignore'):
        u=uni(h(seed,1,i,f)); cat=np.floor(vocab*u*u).astype(np.uint64)
        ids=(h(seed,2,f,cat)%np.uint64(space)).astype(np.int64)
        w=3**.5*(2*uni(h(seed,3,f,cat))-1); logit=-1+w.sum(1)
        lu=uni(h(seed,4,i[:,0],np.uint64(0)))
    return ids,(lu<1/(1+np.exp(-logit))).astype(np.float32), 1/(1+np.exp(-logit))
def auc(s,y):
    o=np.argsort(s,kind='mergesort'); r=np.empty(len(s)); r[o]=np.arange(1,len(s)+1)
    p=y.sum(); n=len(y)-p; return (r[y==1].sum()-p*(p+1)/2)/(p*n)
def run(scale=True, init='uniform', acc='occ', sampling='tf', steps=600, B=256, lr=0.1, N=100000, dim=8, seed=0, stale=0, heldout='tf', scale_init=None, acc0=0.1):
    rng=np.random.default_rng(seed)
    # remap ids to dense
    if heldout=='tf':
        train_idx=np.arange(N); test_idx=np.arange(N,N+20000)
    else:
        a=np.arange(N); train_idx=a[a%5!=4]; test_idx=a[a%5==4]
    tid,ty,_=gen(train_idx); eid,ey,ep=gen(test_idx)
    allids=np.unique(np.concatenate([tid.ravel(),eid.ravel()])); tid=np.searchsorted(allids,tid); eid=np.searchsorted(allids,eid)
    V=len(allids)
    if init=='uniform': W=rng.uniform(-.05,.05,(V,1+dim)).astype(np.float32)
    else: W=(rng.standard_normal((V,1+dim))*0.01).astype(np.float32)
    A=np.full_like(W,acc0)
    s=np.float32(np.random.default_rng(seed+100).uniform(-3**.5,3**.5) if scale_init is None else scale_init) if scale else np.float32(1); sa=acc0
    b=np.float32(0); ba=acc0
    def fwd(ids,W,s,b):
        R=W[ids]; lin=R[:,:,0].sum(1); V_=R[:,:,1:]; S=V_.sum(1); pair=.5*((S*S).sum(1)-(V_*V_).sum((1,2)))
        return lin+pair, S, V_
    nt=len(train_idx); order=None; hist=[]
    queue=[]
    for t in range(steps):
        if sampling=='tf':
            st=rng.integers(0,nt-B+1); rows=np.arange(st,st+B)
        else:
            bpe=(nt+B-1)//B; e,k=divmod(t,bpe)
            if k==0: order=np.random.default_rng(1000+e).permutation(bpe)
            st=order[k]*B; rows=np.arange(st,min(st+B,nt))
        ids=tid[rows]; y=ty[rows]; n=len(rows)
        q,S,V_=fwd(ids,W,s,b); z=s*q+b; p=1/(1+np.exp(-z)); dz=(p-y)/n
        gl=(s*dz)[:,None].repeat(F,1); gv=(s*dz)[:,None,None]*(S[:,None,:]-V_)
        G=np.concatenate([gl[:,:,None],gv],2).reshape(-1,1+dim); fi=ids.ravel()
        gs=float((dz*q).sum()); gb=float(dz.sum())
        upd=(fi,G,gs,gb)
        queue.append(upd)
        if len(queue)<=stale: continue
        fi,G,gs,gb=queue.pop(0)
        if acc=='occ':
            np.add.at(A,fi,G*G); delta=np.zeros_like(W); np.add.at(delta,fi,G)
            u=np.unique(fi); W[u]-=lr*delta[u]/np.sqrt(A[u]+1e-7)
        else:
            u,inv=np.unique(fi,return_inverse=True); Gs=np.zeros((len(u),1+dim),np.float32); np.add.at(Gs,inv,G)
            A[u]+=Gs*Gs; W[u]-=lr*Gs/(np.sqrt(A[u])+1e-7)
        if scale: sa+=gs*gs; s-=lr*gs/np.sqrt(sa+1e-7)
        ba+=gb*gb; b-=lr*gb/np.sqrt(ba+1e-7)
        if (t+1)%100==0:
            q,_,_=fwd(eid,W,s,b); hist.append(round(auc(s*q+b,ey),4))
    return hist, float(s), auc(ep,ey)
if __name__=='__main__':

    kw=json.loads(sys.argv[1]) if len(sys.argv)>1 else {}
    print(kw, run(**kw))
