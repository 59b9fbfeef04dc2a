"""Session 18: the chunked delta rule alone, one layer at the 0.8B shapes (16 heads, 128 x 128), bf16
inputs as the fast prefill makes them: fla 0.6.0's chunk_gated_delta_rule (what the prefill ran
before, its state copied in and out around it as the prefill did: dn_state_in's share of one layer
is not counted) against megakernel/delta_rule_chunked.py at several (BV, warps): call 1 BV and both
kernels' warps (BV = 16 only was correct then), call 4 BV = 16 and _chunk_intra's warps, call 5
(the restructured _chunk_intra, and 4cfd724's in the same call) 4 and 8 warps. Each variant's time
per call from a CUDA graph of 20 calls (median of 7 replays), and its error against the fp32 chunked
rule. Run from a tree's root: python delta_rule_bench.py OUT_JSON [VARIANTS]
VARIANTS (call 6): comma-separated KB:intra-warps of the tree's kernel, or "default" (its constants)."""
import json
import statistics
import sys

import torch
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

import megakernel.delta_rule_chunked as drc
from reference.delta_rule import gated_delta_rule_chunked
from reference.ops import l2norm

H, D, SCALE = 16, 128, 128 ** -0.5


def graph_us(fn, calls=20, replays=7):
    fn()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1000 / calls)
    return statistics.median(times)


def rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm())


rows = []
for T in (520, 4096, 32768):
    gen = torch.Generator(device="cuda").manual_seed(T)
    q = l2norm(x=torch.randn(T, H, D, device="cuda", generator=gen)).bfloat16()
    k = l2norm(x=torch.randn(T, H, D, device="cuda", generator=gen)).bfloat16()
    v = torch.randn(T, H, D, device="cuda", generator=gen).bfloat16()
    g = torch.nn.functional.logsigmoid(torch.randn(T, H, device="cuda", generator=gen) + 3)
    beta = torch.rand(T, H, device="cuda", generator=gen)
    state = torch.randn(2, H, D, D, device="cuda", generator=gen) * 0.5
    s0 = state[1].clone()
    o_ref, s_ref = gated_delta_rule_chunked(q=q.float()[None] * SCALE, k=k.float()[None], v=v.float()[None], g=g[None],
                                            beta=beta[None], initial_state=s0.transpose(-1, -2)[None])
    s_ref = s_ref[0].transpose(-1, -2)
    h0 = state[1:2].clone()

    def fla_call():
        o, final = chunk_gated_delta_rule(q[None], k[None], v[None], g[None], beta[None], scale=SCALE, initial_state=h0,
                                          output_final_state=True, state_v_first=True)
        state[1].copy_(final[0])  # (the prefill's dn_state_out)
        return o

    state[1].copy_(s0)
    o = fla_call()
    err = (rel(o[0], o_ref[0]), rel(state[1], s_ref))
    us = graph_us(fla_call)
    rows.append(dict(T=T, variant="fla 0.6.0 (+ state copy)", us=us, err_o=err[0], err_s=err[1]))
    print(rows[-1], flush=True)
    table = torch.zeros(7, dtype=torch.int64, device="cuda")
    table[0] = state.data_ptr()
    variants = sys.argv[2] if len(sys.argv) > 2 else "default"
    for spec in variants.split(","):
        if spec != "default":
            drc.KB, drc.INTRA_WARPS = (int(x) for x in spec.split(":"))
        bv, warps = drc.BV, drc.INTRA_WARPS
        rule = drc.ChunkedDeltaRule(T, H, D, D, "cuda", 0)
        out = torch.empty(T, H, D, dtype=torch.bfloat16, device="cuda")
        state[1].copy_(s0)
        rule(q, k, v, g, beta, table, 1, out, SCALE)
        torch.cuda.synchronize()
        err = (rel(out, o_ref[0]), rel(state[1], s_ref))
        us = graph_us(lambda: rule(q, k, v, g, beta, table, 1, out, SCALE))
        rows.append(dict(T=T, variant=f"ours BV={bv} intra warps={warps} KB={getattr(drc, 'KB', '-')}", us=us, err_o=err[0], err_s=err[1]))
        print(rows[-1], flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), open(sys.argv[1], "w"), indent=1)
print("\n| T | variant | µs per layer | output error | state error |\n| ---: | --- | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['T']} | {r['variant']} | {r['us']:.1f} | {r['err_o']:.2e} | {r['err_s']:.2e} |")
