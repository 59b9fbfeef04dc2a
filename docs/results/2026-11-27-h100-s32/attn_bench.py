"""The fresh prefill's causal attention at the 0.8B's shapes (8 q heads over 2 kv heads, head dim 256), each way
timed alone in a CUDA graph of 20 calls (median of 7 replays, µs a call), against an fp32 reference:
  sdpa     F.scaled_dot_product_attention as PrefillPlan.attention calls it (torch picks cuDNN's kernel)
  fa2      torch's FA2, variable-length form (prefill.flash, what a prompt after earlier tokens runs)
  sdpa-fl  SDPA with only the flash backend allowed;  sdpa-ef  only the memory-efficient one
and the last layer's one query row against the T keys (a fresh prompt's last layer): sdpa (is_causal False) and fa2.
Usage: python attn_bench.py OUT.json  (from the repository root)"""
import json
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from megakernel.prefill import flash

HQ, HKV, HD = 8, 2, 256
dev = torch.device("cuda")
torch.manual_seed(0)


def timed(fn, calls=20, replays=7):
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn()
        with torch.cuda.graph(g, stream=s):
            for _ in range(calls):
                fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / calls)
    return sorted(times)[len(times) // 2]


def reference(q, k, v, causal_lower_right):
    """q [n, HQ, HD], k/v [T, HKV, HD] -> fp32 [n, HQ, HD] (query i sees keys <= T - n + i)"""
    n, T = q.shape[0], k.shape[0]
    kk = k.float().repeat_interleave(HQ // HKV, dim=1)
    vv = v.float().repeat_interleave(HQ // HKV, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.float(), kk) * HD ** -0.5
    mask = torch.arange(T, device=dev)[None, :] > (T - n + torch.arange(n, device=dev))[:, None]
    s = s.masked_fill(mask[None], float("-inf"))
    return torch.einsum("hqk,khd->qhd", s.softmax(-1), vv)


rows = []
for T in [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "128,256,520,1024,2048,4096").split(",")]:
    qbuf = torch.randn(T, HQ, HD, dtype=torch.bfloat16, device=dev)
    kv = torch.randn(2, T, HKV, HD, dtype=torch.bfloat16, device=dev)
    cu = torch.tensor([0, T], dtype=torch.int32, device=dev)
    cu1 = torch.tensor([0, 1], dtype=torch.int32, device=dev)
    q4 = qbuf.view(1, T, HQ, HD).transpose(1, 2)
    k4, v4 = (x.view(1, T, HKV, HD).transpose(1, 2) for x in (kv[0], kv[1]))
    ref = reference(qbuf, kv[0], kv[1], True) if T <= 4096 else None
    out = {}

    def sdpa():
        return F.scaled_dot_product_attention(q4, k4, v4, is_causal=True, scale=HD ** -0.5, enable_gqa=True).transpose(1, 2)[0]

    def fa2():
        return flash(qbuf, kv, cu, cu, T, T, True)[0]

    ways = {"sdpa": sdpa, "fa2": fa2}
    for name, backend in (("sdpa-fl", SDPBackend.FLASH_ATTENTION), ("sdpa-ef", SDPBackend.EFFICIENT_ATTENTION)):
        def f(backend=backend):
            with sdpa_kernel([backend]):
                return sdpa()
        ways[name] = f
    q1 = qbuf[T - 1:]
    q14 = q1.view(1, 1, HQ, HD).transpose(1, 2)

    def last_sdpa():
        return F.scaled_dot_product_attention(q14, k4, v4, is_causal=False, scale=HD ** -0.5, enable_gqa=True).transpose(1, 2)[0]

    def last_fa2():
        return flash(q1, kv, cu1, cu, 1, T, True)[0]

    ways["last-sdpa"], ways["last-fa2"] = last_sdpa, last_fa2
    for name, fn in ways.items():
        try:
            o = fn().float()
            r = ref[T - 1:] if name.startswith("last") else ref
            err = None if r is None else ((o - r).norm() / r.norm()).item()
            us = timed(fn)
            out[name] = {"us": round(us, 2), "rel_err": err}
        except Exception as e:  # a backend that refuses the shape
            out[name] = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
        print(T, name, out[name], flush=True)
    rows.append({"T": T, **out})
json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, open(sys.argv[1], "w"), indent=1)
