"""Session 18: fla 0.6.0's chunk_gated_delta_rule at one layer's shapes (16 heads, 128 x 128, bf16, a carried
state, state_v_first as the fast prefill called it): each kernel's GPU time under torch.profiler (the sum of
10 calls / 10), and the call's time in a CUDA graph. Run: python fla_profile.py T"""
import sys

import torch
from fla.ops.gated_delta_rule import chunk_gated_delta_rule
from torch.profiler import ProfilerActivity, profile

from reference.ops import l2norm

T, H, D = int(sys.argv[1]), 16, 128
q = l2norm(x=torch.randn(1, T, H, D, device="cuda")).bfloat16()
k = l2norm(x=torch.randn(1, T, H, D, device="cuda")).bfloat16()
v = torch.randn(1, T, H, D, device="cuda").bfloat16()
g = torch.nn.functional.logsigmoid(torch.randn(1, T, H, device="cuda") + 3)
beta = torch.rand(1, T, H, device="cuda")
h0 = torch.randn(1, H, D, D, device="cuda") * 0.5
call = lambda: chunk_gated_delta_rule(q, k, v, g, beta, scale=D ** -0.5, initial_state=h0, output_final_state=True,  # noqa: E731
                                      state_v_first=True)
for _ in range(3):
    call()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(10):
        call()
    torch.cuda.synchronize()
rows = {}
for e in prof.events():
    if e.device_type.name == "CUDA":
        rows.setdefault(e.name[:70], [0.0, 0])
        rows[e.name[:70]][0] += e.device_time / 10
        rows[e.name[:70]][1] += 1
for name, (us, n) in sorted(rows.items(), key=lambda kv: -kv[1][0]):
    print(f"FLA T={T} {us:8.1f} us  x{n // 10}  {name}")
print(f"FLA T={T} total kernel time {sum(r[0] for r in rows.values()):.1f} us")
