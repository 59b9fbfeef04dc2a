bad=0
for n_pos in range(0,200):
  for last in (False,True):
    if last and n_pos==0: continue
    ipos=n_pos-1 if last else -1
    nring=n_pos-(1 if ipos>=0 else 0); nch=(nring+15)//16; ntiles=(n_pos+15)//16
    prod=nch  # producer nchunks(rows=nring)
    cons=0; seen=[]
    for c0 in range(0,ntiles,4):
      waited=[]
      for ci in range(0,4):
        if c0+ci>=ntiles: break
        c=c0+ci
        if c<nch: waited.append(ci); seen.append(cons+ci)
        # rows check
        for r in range(16):
          i=16*c+r
          if i<n_pos and not (i==ipos or i<nring): bad+=1
      k=min(4,nch-c0)
      if k>0:
        if any(w>=k for w in waited): bad+=1
        cons+=k
    if cons!=prod or seen!=list(range(prod)): bad+=1; print(n_pos,last,cons,prod)
print("bad",bad)
