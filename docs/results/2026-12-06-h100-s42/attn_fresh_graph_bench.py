"""A fresh prompt's attention and output gate, two ways, by length, each timed inside a CUDA graph (session 42; s41's
attn_fresh_bench.py timed single launches between two events, which at short lengths measures the host's launch path
— SDPA's ~100 µs of backend selection, our op's ~35 — not the GPU: s42 call 3). Our prefill_attn_fresh (one launch)
against what main runs (torch SDPA, causal, GQA — cuDNN's kernel where torch picks it — then prefill_attn_gate), every
query row (r0 = 0) and the last row alone (r0 = T - 1, as a fresh prompt's last layer), on random bf16 inputs at the
0.8B's shapes. Each way: CALLS calls captured in one graph, the graph replayed REPS times between events, µs a call
(median); the two ways' graphs interleaved; and the largest relative difference of their outputs.
    PYTHONPATH=<tree with prefill_attn_fresh> python attn_fresh_graph_bench.py OUT_DIR [T,T,...]
Writes OUT_DIR/attn_fresh_graph_bench.json and prints a Markdown table (µs a layer; the prefill runs 6 such layers).
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F

from compare import load_tier
from megakernel import ops
from reference import ModelConfig, random_weights

CALLS, REPS = 20, 15


def graph_of(fn):
    """fn() CALLS times in one CUDA graph (after two eager calls: compiles, cuDNN's plan)."""
    fn(), fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(CALLS):
            fn()
    return g


def per_call_us(g):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3 / CALLS


def main(out_dir, lengths):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
    k = tier.k
    fresh, gate = (ops.op(n, tier.ops_namespace) for n in ("prefill_attn_fresh", "prefill_attn_gate"))
    rows = []
    for T in lengths:
        gen = torch.Generator(device="cuda").manual_seed(T)
        q = torch.randn(T, k.FA_HQ, k.FA_HD, device="cuda", generator=gen).bfloat16()
        kv = torch.randn(2, T, k.FA_HKV, k.FA_HD, device="cuda", generator=gen).bfloat16()
        proj = torch.randn(T, k.FA_QKV, device="cuda", generator=gen).bfloat16()
        table = torch.zeros(k.PREFILL_STATE_SLOTS, dtype=torch.int64, device="cuda")
        table[k.PREFILL_STATE_VALID] = T
        out_a, out_b = (torch.full((T, k.FA_OIN), float("nan"), dtype=torch.bfloat16, device="cuda") for _ in range(2))
        for r0 in (0, T - 1):
            n = T - r0

            def ours():
                fresh(q, kv, proj, out_a, r0)

            def main_way():  # (as PrefillPlan.attention on main: [1, heads, n, 256] views, SDPA, then the gate)
                qq = q[r0:].view(1, n, -1, k.FA_HD).transpose(1, 2)
                kk, vv = (x.view(1, T, -1, k.FA_HD).transpose(1, 2) for x in (kv[0], kv[1]))
                o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=n == T, scale=k.FA_HD ** -0.5,
                                                   enable_gqa=True).transpose(1, 2)[0]
                gate(o, proj[r0:], table, out_b[r0:])

            ga, gb = graph_of(ours), graph_of(main_way)
            ta, tb = [], []
            for _ in range(REPS):
                ta.append(per_call_us(ga))
                tb.append(per_call_us(gb))
            a, b = out_a[r0:].float(), out_b[r0:].float()
            diff = ((a - b).norm() / b.norm()).item() if torch.isfinite(a).all() else float("nan")
            row = {"T": T, "r0": r0, "attn_fresh_us": statistics.median(ta), "sdpa_gate_us": statistics.median(tb),
                   "rel_diff": diff}
            rows.append(row)
            print(f"| {T} | {'last row' if r0 else 'all rows'} | {row['attn_fresh_us']:.1f} | {row['sdpa_gate_us']:.1f} | "
                  f"{row['sdpa_gate_us'] / row['attn_fresh_us']:.2f}x | {diff:.2e} |", flush=True)
            del ga, gb
    json.dump({"device": torch.cuda.get_device_name(), "calls_a_graph": CALLS, "reps": REPS, "rows": rows},
              open(f"{out_dir}/attn_fresh_graph_bench.json", "w"), indent=1)


if __name__ == "__main__":
    print("| T | query rows | attn_fresh µs | SDPA + attn_gate µs | ratio (SDPA / ours) | rel. difference |")
    print("| ---: | --- | ---: | ---: | ---: | ---: |")
    main(sys.argv[1], [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "128,256,520,1024,2048,4096").split(",")])
