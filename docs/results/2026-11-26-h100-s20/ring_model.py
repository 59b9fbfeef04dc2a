"""Session 20: session 19's model (below) with the K = D chunk of whole rows of shapes.cuh (CHUNK_PIECES 4
where 4 rows take at most 20 KB, RING_SLOT the larger of 16 KB and such a chunk; warp w's chunk w /
WARPS_PER_CHUNK; a ROW_PIECES gate/up unit j in chunk j / (CHUNK_PIECES / 2), row j mod that). At the
working tree of call 4: see the README. Arguments: sizes (default all).

The review of session 19 (a helper, read-only): a Python model of the decode kernel's ring bookkeeping
(schedule.cuh phase_slice, weight_ring.cuh produce's chunks, every batch-1 consumer of matvec.cuh) checked
for every block of grids 1-132, 264 and 1024 at 0.8B, 2B, 4B, 9B and tiny-megakernel: each warp reads its
rows from the right chunk and byte, no read passes the bytes filled, no item reads a chunk it does not
release, the releases equal the chunks. At 529b67f: 0 errors; with the old parts_per_chunk (the pieces
that fit, not a power of two) it flags tiny-megakernel at 97 blocks, the hang of call 5. It restates the
kernel's formulas (a model, not the source of truth): change both together. Run: python ring_model.py
(minutes; prints errors per size)."""
import itertools, sys
NWARPS=16
RING_SLOT=16384  # set per size in run()
def row_parts(k):
    p=2
    while k//p > 16*256: p*=2
    return p
def parts_per_chunk(k):
    fit = RING_SLOT//(2*(k//row_parts(k)))
    p=1
    while 2*p<=fit and 2*p<=16: p*=2
    return p
def part(n,b,G): return n*b//G
CFG = {
 '0.8b': dict(D=1024, INTER=3584, VOCAB=248320, HK=16, HV=16, HQ=8, HKV=2),
 '2b': dict(D=2048, INTER=6144, VOCAB=248320, HK=16, HV=16, HQ=8, HKV=2),
 '4b': dict(D=2560, INTER=9216, VOCAB=248320, HK=16, HV=32, HQ=16, HKV=4),
 '9b': dict(D=4096, INTER=12288, VOCAB=248320, HK=16, HV=32, HQ=16, HKV=4),
 'tiny': dict(D=1024, INTER=1536, VOCAB=4096, HK=16, HV=32, HQ=16, HKV=4),
}
errors=[]
def err(*a):
    errors.append(' '.join(map(str,a)))
def run(name, c, G):
    global RING_SLOT
    D=c['D']; INTER=c['INTER']
    ROW = not (D%1024==0 and 4%(D//1024)==0)
    PIECE = D if ROW else 1024; DP=D//PIECE; PS=PIECE//256; WP=1 if ROW else 4
    CP = 2*WP if not ROW else (4 if 8*D <= 20480 else 2)
    WPC = CP//WP; UPC = CP//2
    RING_SLOT = max(16384, 2*CP*PIECE)
    DN_KEY=c['HK']*128; DN_VAL=c['HV']*128; DN_CONV=2*DN_KEY+DN_VAL; DN_WIN=DN_CONV+DN_VAL+2*c['HV']
    FA_QKV=2*c['HQ']*256+2*c['HKV']*256
    for b in range(G):
        # phases: list of (label, slice, consumer)
        phases=[]
        for R,lab in ((DN_WIN,'dn_in'),(FA_QKV,'fa_in'),(c['VOCAB'],'lm')):
            i0=part(R,b,G); n=part(R,b+1,G)-i0
            phases.append((lab, dict(base=i0*D, base2=None, rows=n*DP, rpc=CP, k=PIECE), ('rows', n)))
        r0=part(D,b,G); r1=part(D,b+1,G)
        for K,lab in ((DN_VAL,'out'),(INTER,'down')):
            P=row_parts(K)
            phases.append((lab, dict(base=r0*K, base2=None, rows=(r1-r0)*P, rpc=parts_per_chunk(K), k=K//P), ('parts', K, r0, r1)))
        u0=part(INTER,b,G); n=part(INTER,b+1,G)-u0
        phases.append(('gu', dict(base=u0*D, base2=(INTER+u0)*D, rows=n*DP, rpc=CP//2, k=PIECE), ('gu', n)))
        for lab, sl, cons in phases:
            # producer chunks: list of dict slot_off -> (global elem offset, which matrix) per 16B granule
            nch = (sl['rows']+sl['rpc']-1)//sl['rpc']
            chunks=[]
            for i in range(nch):
                r=i*sl['rpc']; nb=min(sl['rpc'], sl['rows']-r)*sl['k']*2
                assert nb <= (RING_SLOT//2 if sl['base2'] is not None else RING_SLOT), (name,lab,nb)
                m={}
                m=(r, nb)
                chunks.append(m)
            released=0
            def read(item_start, crel, off, expect, nbytes, who):
                if crel>=8: err(name,G,b,lab,who,'chunk rel',crel,'>=8')
                ci=item_start+crel
                if ci>=nch: err(name,G,b,lab,who,'reads chunk',ci,'beyond',nch); return
                r,nb=chunks[ci]
                o=off
                which='w'
                if sl['base2'] is not None and o>=RING_SLOT//2: o-=RING_SLOT//2; which='w2'
                if o+nbytes>nb: err(name,G,b,lab,who,'chunk',ci,'reads past filled bytes',o,nbytes,nb); return
                got=(which, (sl['base'] if which=='w' else sl['base2'])+r*sl['k']+o//2)
                if got!=expect: err(name,G,b,lab,who,'chunk',ci,'off',off,'got',got,'exp',expect)
            kind=cons[0]
            if kind=='rows':
                n=cons[1]; N=n*DP
                for i0 in range(0,N,NWARPS*WP):
                    rel=(min(NWARPS*WP,N-i0)+CP-1)//CP
                    for w in range(NWARPS):
                        i=i0+w*WP
                        if i<N:
                            for r in range(WP):
                                if i+r<N:
                                    off=(w%WPC)*WP*PIECE*2 + r*PIECE*2
                                    read(released, w//WPC, off, ('w', sl['base']+(i+r)*PIECE), PIECE*2, ('w',w,'r',r))
                                    # also check it's within released chunks
                                    if (w//WPC)>=rel: err(name,G,b,lab,'reads unreleased', w, rel)
                    released+=rel
            elif kind=='parts':
                K,r0_,r1_=cons[1:]
                P=row_parts(K); KP=K//P; PPC=parts_per_chunk(K); ROWS=NWARPS//P
                for base in range(r0_,r1_,ROWS):
                    rel=(min(ROWS,r1_-base)*P+PPC-1)//PPC
                    for w in range(NWARPS):
                        j=w//P; pt=w%P
                        if base+j<r1_:
                            pidx=(base-r0_)*P+w
                            # expected: row base+j, part pt
                            exp=('w', (base+j)*K + pt*KP)
                            assert sl['base']+pidx*KP == exp[1]
                            if w//PPC>=rel: err(name,G,b,lab,'unreleased',w,rel)
                            read(released, w//PPC, (w%PPC)*KP*2, exp, KP*2, ('w',w))
                    released+=rel
            elif kind=='gu':
                n=cons[1]
                if ROW:
                    for i0 in range(0,n,NWARPS//2):
                        rel=(min(NWARPS//2, n-i0)+UPC-1)//UPC
                        for w in range(NWARPS):
                            u=i0+(w>>1); j=w>>1
                            if u<n:
                                which='w2' if w&1 else 'w'
                                base=(sl['base2'] if w&1 else sl['base'])+u*PIECE
                                if j//UPC>=rel: err(name,G,b,lab,'gu reads unreleased',w,rel)
                                read(released, j//UPC, (w&1)*(RING_SLOT//2)+(j%UPC)*PIECE*2, (which, base), PIECE*2, ('w',w))
                        released+=rel
                elif DP==1 or DP==2:
                    N=n*DP
                    for i0 in range(0,N,NWARPS*2):
                        rel=(min(NWARPS*2,N-i0)+3)//4
                        for w in range(NWARPS):
                            i=i0+2*w
                            if i<N:
                                p=(w&1)*2*PIECE*2
                                for r,(so,which,pi) in enumerate(((0,'w',i),(RING_SLOT//2,'w2',i),(PIECE*2,'w',i+1),(RING_SLOT//2+PIECE*2,'w2',i+1))):
                                    if pi<N:
                                        base=(sl['base'] if which=='w' else sl['base2'])+pi*PIECE
                                        read(released, w>>1, p+so, (which, base), PIECE*2, ('w',w,r))
                        released+=rel
                else:
                    N=n*4
                    for i0 in range(0,N,NWARPS*2):
                        rel=(min(NWARPS*2,N-i0)+3)//4
                        for w in range(NWARPS):
                            i=i0+2*w
                            if i<N:
                                p=(w&1)*2*PIECE*2
                                for r,(so,which,pi) in enumerate(((0,'w',i),(RING_SLOT//2,'w2',i),(PIECE*2,'w',i+1),(RING_SLOT//2+PIECE*2,'w2',i+1))):
                                    base=(sl['base'] if which=='w' else sl['base2'])+pi*PIECE
                                    read(released, w>>1, p+so, (which, base), PIECE*2, ('w',w,r))
                        released+=rel
            if released!=nch: err(name,G,b,lab,'released',released,'produced',nch)
for name,c in CFG.items():
    if len(sys.argv) > 1 and name not in sys.argv[1:]: continue
    for G in list(range(1,133))+[264,1024]:
        run(name,c,G)
    print(name,'done',len(errors)); sys.stdout.flush()
for e in errors[:40]: print(e)
