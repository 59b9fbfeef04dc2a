import numpy as np
rng=np.random.default_rng(0)
HD=256
def bf(x):
    x=np.asarray(x,dtype=np.float32); u=x.view(np.uint32).astype(np.uint64)
    r=((u+0x7fff+((u>>16)&1))>>16)<<16
    return r.astype(np.uint32).view(np.float32)
# shared memory as dict of byte address -> bf16 value (float)
class Smem:
    def __init__(s): s.m={}
    def wr_row(s,addr,vals):  # 16 bytes = 8 elems
        for i,v in enumerate(vals): s.m[addr+2*i]=v
    def rd(s,addr): return s.m[addr]
def ldsm(sm,addrs,nmat,trans):
    # addrs[lane]; matrix i rows from lanes 8i..8i+7
    out=[[None]*nmat for _ in range(32)]
    for i in range(nmat):
        M=np.array([[sm.rd(addrs[8*i+r]+2*c) for c in range(8)] for r in range(8)])
        if trans: M=M.T
        for l in range(32):
            out[l][i]=(M[l//4,2*(l%4)],M[l//4,2*(l%4)+1])
    return out
def movtrans(frag):
    M=np.zeros((8,8))
    for l in range(32): M[l//4,2*(l%4)],M[l//4,2*(l%4)+1]=frag[l]
    M=M.T
    return [(M[l//4,2*(l%4)],M[l//4,2*(l%4)+1]) for l in range(32)]
def mma(c,a,b):
    A=np.zeros((16,16));B=np.zeros((16,8))
    for l in range(32):
        g,t=l//4,l%4
        for r in range(4):
            row=g+8*(r%2); col=2*t+8*(r//2)
            A[row,col],A[row,col+1]=a[l][r]
        for r in range(2):
            k=2*t+8*r; B[k,g],B[k+1,g]=b[l][r]
    C=A.astype(np.float64)@B
    for l in range(32):
        g,t=l//4,l%4
        c[l][0]+=C[g,2*t];c[l][1]+=C[g,2*t+1];c[l][2]+=C[g+8,2*t];c[l][3]+=C[g+8,2*t+1]
def run_unit(K,V,q,nring_from_ring,ipos,ring_k,ring_v,plain):
    # K,V: n_pos x 256 (bf16 values); q: 4x256
    n_pos=K.shape[0]
    sm=Smem()
    QS=264*2; QB=0
    for h in range(5):
        row = q[h] if h<4 else np.zeros(HD)
        for u in range(33): sm.wr_row(QB+h*QS+16*u, list(row[8*u:8*u+8]) if u<32 else [0]*8)
    KB=4096; VB=KB+512
    if ipos>=0:
        for u in range(32): sm.wr_row(KB+16*u,K[ipos,8*u:8*u+8]); sm.wr_row(VB+16*u,V[ipos,8*u:8*u+8])
    zrow=QB+4*QS
    qrow=[QB+((l&7) if (l&7)<4 else 4)*QS for l in range(32)]
    SLOT=16384; RB=100000
    nring=n_pos-(1 if ipos>=0 else 0); nch=(nring+15)//16
    # producer: chunk c in slot RB+c*SLOT, swizzled
    for c in range(nch):
        rows=min(16,nring-16*c)
        for r in range(rows):
            for lane in range(32):
                for half,M in ((0,K),(SLOT//2,V)):
                    sm.wr_row(RB+c*SLOT+half+r*512+((lane^(r&7))<<4), M[16*c+r,16*lane//2:16*lane//2+8])
    m=[[-np.inf]*2 for _ in range(32)]; L=[[0.]*2 for _ in range(32)]
    O={dq:[[0.]*4 for _ in range(32)] for dq in range(16)}
    ntiles=(n_pos+15)//16
    for c in range(ntiles):
        ch=RB+c*SLOT if c<nch else 0
        def rowf(r,half,own):
            i=16*c+r
            if i==ipos: return own,0
            if i>=nring: return zrow,0
            return ch+half+r*512, r&7
        cs=[[0.]*4 for _ in range(32)]
        for ks in range(16):
            bq=ldsm(sm,[qrow[l]+(16*ks+8*((l>>3)&1))*2 for l in range(32)],2,False)
            if not plain:
                addrs=[]
                for l in range(32):
                    rk=(l&7)+8*((l>>3)&1); a,x=rowf(rk,0,KB); u=2*ks+(l>>4); addrs.append(a+((u^x)<<4))
                af=ldsm(sm,addrs,4,False)
            else:
                af=[]
                for l in range(32):
                    g,t=l>>2,l&3; d=16*ks+2*t
                    rr=lambda r: min(16*c+r,n_pos-1)
                    k0=K[rr(g)];k1=K[rr(g+8)]
                    af.append([(k0[d],k0[d+1]),(k1[d],k1[d+1]),(k0[d+8],k0[d+9]),(k1[d+8],k1[d+9])])
            mma(cs,af,bq)
        valid=n_pos-16*c
        # softmax
        p=[[[0,0],[0,0]] for _ in range(32)]
        for j in range(2):
            s=[[None,None] for _ in range(32)]
            for l in range(32):
                g=l>>2
                s[l][0]=np.float32(cs[l][j]/16) if g<valid else -np.inf
                s[l][1]=np.float32(cs[l][2+j]/16) if g+8<valid else -np.inf
            for l in range(32):
                t=l&3
                mx=max(max(s[l2]) for l2 in range(32) if (l2&3)==t)
                mn=max(m[l][j],mx); corr=np.exp(m[l][j]-mn)
                p[l][0][j]=np.exp(s[l][0]-mn); p[l][1][j]=np.exp(s[l][1]-mn)
                L[l][j]=L[l][j]*corr+p[l][0][j]+p[l][1][j]
                for dq in range(16):
                    O[dq][l][j]*=corr; O[dq][l][2+j]*=corr
                m[l][j]=mn
        b0=movtrans([(bf(p[l][0][0]),bf(p[l][0][1])) for l in range(32)])
        b1=movtrans([(bf(p[l][1][0]),bf(p[l][1][1])) for l in range(32)])
        bb=[[b0[l],b1[l]] for l in range(32)]
        for dq in range(16):
            d0=16*dq
            if not plain:
                addrs=[]
                for l in range(32):
                    rv=(l&7)+8*(l>>4); a,x=rowf(rv,SLOT//2,VB); u=d0//8+((l>>3)&1); addrs.append(a+((u^x)<<4))
                af=ldsm(sm,addrs,4,True)
            else:
                af=[]
                for l in range(32):
                    g,t=l>>2,l&3
                    rr=lambda r: min(16*c+r,n_pos-1)
                    pair=lambda r0,d:(V[rr(r0),d],V[rr(r0+1),d])
                    af.append([pair(2*t,d0+g),pair(2*t,d0+g+8),pair(2*t+8,d0+g),pair(2*t+8,d0+g+8)])
            mma(O[dq],af,bb)
    # l reduce
    out=np.zeros((4,HD)); Ls=np.zeros(4); Ms=np.zeros(4)
    for l in range(32):
        g,t=l>>2,l&3
        if t<2:
            for j in range(2):
                e=2*t+j
                Ls[e]=sum(L[l2][j] for l2 in range(32) if (l2&3)==t)
                Ms[e]=m[l][j]
                for dq in range(16):
                    out[e,16*dq+g]=O[dq][l][j]; out[e,16*dq+g+8]=O[dq][l][2+j]
    return out/Ls[:,None]
for n_pos,ipos in [(1,0),(5,-1),(16,-1),(17,16),(33,32),(20,19),(16,15),(40,-1)]:
    K=bf(rng.standard_normal((n_pos,HD))*2);V=bf(rng.standard_normal((n_pos,HD)));q=bf(rng.standard_normal((4,HD)))
    S=q.astype(np.float64)@K.T.astype(np.float64)/16
    P=np.exp(S-S.max(1,keepdims=True)); ref=(P@V)/P.sum(1,keepdims=True)
    for plain in (False,True):
        o=run_unit(K,V,q,None,ipos,None,None,plain)
        print(n_pos,ipos,plain,np.abs(o-ref).max())
