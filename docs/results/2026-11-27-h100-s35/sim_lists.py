"""Session 35 (issue 19, CPU): how many rows a batch row lists in a block in lm_head_bounded_batch's pass 1, on the
built-in 0.8B head (seeded random) against hidden states the final norm's size: 132 blocks of ~1,881 rows, items of 128
rows, each item's rows listed when their upper bound reaches the best lower bound so far (that item's included), as the
kernel filters (in fp64 here, without the bf16 rounding of the bounds). Then how many of them reach the block's final
best lower bound (what c23a5b1 keeps for the exact pass). Run: python docs/results/2026-11-27-h100-s35/sim_lists.py"""
import torch, math
from reference import ModelConfig, perturb_norms, random_weights
from megakernel import lm_bound
config = ModelConfig.qwen3_5_0_8b()
weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
w = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])
q, sc = lm_bound.quantize(w)
qf = (q[:-1].float() - 128)
norm = weights["model.norm.weight"].float()
g = torch.Generator().manual_seed(5)
V = w.shape[0]; G = 132
bounds = [round(V * i / G) for i in range(G + 1)]
allc = []
for t in range(8):
    h = torch.randn(config.hidden_size, generator=g)
    x = h * torch.rsqrt(h.pow(2).mean() + 1e-6) * (1 + norm)
    sv = sc[:, 0] * (qf @ x)
    e = sc[:, 1] * x.norm() * (1 + 1/4096)
    low, up = sv - e, sv + e
    counts = []
    for bi in range(G):
        r0, r1 = bounds[bi], bounds[bi + 1]
        lr = -math.inf; c = 0
        for i0 in range(r0, r1, 128):
            i1 = min(r1, i0 + 128)
            lr = max(lr, low[i0:i1].max().item())
            c += (up[i0:i1] >= lr).sum().item()
        counts.append(c)
    counts = torch.tensor(counts)
    allc.append(counts)
    print(t, "per block: median", counts.median().item(), "max", counts.max().item(), ">40:", (counts > 40).sum().item(), ">64:", (counts > 64).sum().item(), "total", counts.sum().item(), "err/logit-std", (e.mean() / sv.std()).item())
print("--- after a final filter against the block's final lower bound")
g = torch.Generator().manual_seed(5)
for t in range(4):
    h = torch.randn(config.hidden_size, generator=g)
    x = h * torch.rsqrt(h.pow(2).mean() + 1e-6) * (1 + norm)
    sv = sc[:, 0] * (qf @ x)
    e = sc[:, 1] * x.norm() * (1 + 1/4096)
    low, up = sv - e, sv + e
    c1=[];c2=[]
    for bi in range(G):
        r0, r1 = bounds[bi], bounds[bi + 1]
        lr = -math.inf; keep = []
        for i0 in range(r0, r1, 128):
            i1 = min(r1, i0 + 128)
            lr = max(lr, low[i0:i1].max().item())
            keep.append(up[i0:i1][up[i0:i1] >= lr])
        keep = torch.cat(keep)
        c1.append(len(keep)); c2.append((keep >= lr).sum().item())
    c1=torch.tensor(c1); c2=torch.tensor(c2)
    print("kept", c1.float().mean().item(), c1.max().item(), "final", c2.float().mean().item(), c2.max().item())
