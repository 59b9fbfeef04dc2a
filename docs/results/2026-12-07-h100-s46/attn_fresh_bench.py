"""A fresh prompt's attention + output gate by length, each way timed inside a CUDA graph (20 calls a graph,
replays interleaved, µs a call, median): what main runs (torch SDPA, causal, GQA: cuDNN's kernel, then
prefill_attn_gate) against prefill_attn_fresh at several key tiles a block (S: 1000 = a row tile's keys in one
block, session 41's kernel; 2-6: split over ceil(tiles / S) blocks whose partials the last one merges), all query
rows (r0 = 0) and the last row alone (r0 = T - 1), on random bf16 inputs at the 0.8B's shapes; with each way's
largest relative difference from SDPA + gate.
    PYTHONPATH=<tree> python attn_fresh_bench.py OUT_DIR [T,T,...] [S,S,...]
Writes OUT_DIR/attn_fresh_bench.json and prints a Markdown table."""
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


def main(out_dir, lengths, splits):
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
        tile = k.PREFILL_FRESH_TILE
        for r0 in (0, T - 1):
            n = T - r0
            ref = torch.full((T, k.FA_OIN), float("nan"), dtype=torch.bfloat16, device="cuda")

            def main_way():  # (as PrefillPlan.attention on main: [1, heads, n, 256] views, SDPA, then the gate)
                qq = q[r0:].view(1, n, -1, k.FA_HD).transpose(1, 2)
                kk, vv = (x.view(1, T, -1, k.FA_HD).transpose(1, 2) for x in (kv[0], kv[1]))
                o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=n == T, scale=k.FA_HD ** -0.5,
                                                   enable_gqa=True).transpose(1, 2)[0]
                gate(o, proj[r0:], table, ref[r0:])

            ways = {"sdpa+gate": main_way}
            outs = {}
            for S in splits:
                chunks = -(-(-(-T // tile)) // S)
                if chunks > k.PREFILL_FRESH_MAX_CHUNKS:
                    continue
                part = torch.empty(-(-n // tile), k.FA_HQ, chunks, k.PREFILL_FRESH_PART, device="cuda")
                count = torch.zeros(-(-n // tile), k.FA_HQ, dtype=torch.int32, device="cuda")
                outs[S] = torch.full((T, k.FA_OIN), float("nan"), dtype=torch.bfloat16, device="cuda")
                ways[f"S={S}"] = (lambda S=S, part=part, count=count: fresh(q, kv, proj, outs[S], r0, part, count, S))
            graphs = {name: graph_of(fn) for name, fn in ways.items()}
            times = {name: [] for name in ways}
            for _ in range(REPS):
                for name, g in graphs.items():
                    times[name].append(per_call_us(g))
            b = ref[r0:].float()
            row = {"T": T, "r0": r0, "us": {name: statistics.median(t) for name, t in times.items()}, "rel_diff": {}}
            for S, o in outs.items():
                a = o[r0:].float()
                row["rel_diff"][f"S={S}"] = ((a - b).norm() / b.norm()).item() if torch.isfinite(a).all() else float("nan")
            rows.append(row)
            cells = " | ".join(f"{name} {us:.1f}" for name, us in row["us"].items())
            print(f"| {T} | {'last row' if r0 else 'all rows'} | {cells} | "
                  + ", ".join(f"{kk} {v:.1e}" for kk, v in row["rel_diff"].items()) + " |", flush=True)
            del graphs
    json.dump({"device": torch.cuda.get_device_name(), "calls_a_graph": CALLS, "reps": REPS, "rows": rows},
              open(f"{out_dir}/attn_fresh_bench.json", "w"), indent=1)


if __name__ == "__main__":
    print("| T | query rows | µs a call (median) | relative difference from SDPA + gate |")
    print("| ---: | --- | --- | --- |")
    main(sys.argv[1], [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "128,256,520,1024,2048").split(",")],
         [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "1000,2,3,4,6").split(",")])
