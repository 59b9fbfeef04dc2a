"""The fast prefill's own timing and where its time goes (the official pp figures come from
`compare bench`): ppN on a fresh state per repetition, graph replay, CUDA events, median /
min / max; then one replay under torch.profiler with the kernels grouped into GEMM
(cuBLAS), delta rule (fla), attention (SDPA), ours (csrc/prefill.cu) and other. Against the
floors: matrix FLOPs / the measured bf16 dense rate, weight bytes / the copy bandwidth.

    python -m megakernel.bench_prefill [--pp 520,4096,32768] [--reference-pp 520] [--out DIR]
    python -m megakernel.bench_prefill --rerender DIR/prefill_bench.json   (derived columns only, no GPU)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import torch

from reference import ModelConfig, perturb_norms, random_weights

DENSE_BF16 = 739e12  # measured dense bf16 rate of the lent H100 (shared/benchmarking.md)
COPY_BW = 2.87e12
CATEGORIES = (("attention (SDPA)", ("sdpa", "flash", "fmha", "attention")),  # before GEMM: cuDNN's names hold "sm90_"
              ("GEMM (cuBLAS)", ("gemm", "nvjet", "xmma", "cutlass", "sm90_", "gemv")),
              ("ours (prefill.cu)", ("mkp", "mk_decode", "add_rms_norm", "dn_prep", "dn_out_norm", "dn_state", "silu_mul",
                                     "attn_prep", "kv_prefix", "attn_gate", "lm_head_kernel")),
              ("delta rule (fla)", ("chunk", "solve_tril", "recompute", "kkt", "cumsum", "fwd_h", "fwd_o", "merge")))


def matrix_flops(config, T: int) -> float:
    """2·T·(every projection matrix) + the lm_head for one position + causal attention."""
    from reference.weights import expected_shapes

    total = 0.0
    for name, shape in expected_shapes(config).items():
        if len(shape) == 2 and name != "model.embed_tokens.weight":
            total += 2.0 * T * shape[0] * shape[1]
    total += 2.0 * config.vocab_size * config.hidden_size
    attn = 2 * 2 * (T * (T + 1) / 2) * config.head_dim * config.num_attention_heads  # QK^T and PV, causal half
    return total + attn * len(config.full_layers)


def time_pp(tier, T: int, reps: int, seed: int = 0):
    ids = torch.randint(0, tier.config.vocab_size, (1, T), generator=torch.Generator().manual_seed(seed))
    times = []
    for rep in range(reps + 1):  # the first repetition captures the graph
        state = tier.new_state(max_seq_len=T)
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        tier.prefill(ids, state)
        b.record()
        torch.cuda.synchronize()
        if rep:
            times.append(a.elapsed_time(b) / 1000.0)
    tps = [T / t for t in times]
    return {"T": T, "tok_s_median": statistics.median(tps), "tok_s_min": min(tps), "tok_s_max": max(tps),
            "ms_median": 1000.0 * statistics.median(times), "reps": reps}


def breakdown(tier, T: int, seed: int = 0):
    """GPU time per kernel category in one graph replay (µs), and the number of kernels."""
    from torch.profiler import ProfilerActivity, profile

    ids = torch.randint(0, tier.config.vocab_size, (1, T), generator=torch.Generator().manual_seed(seed))
    tier.prefill(ids, tier.new_state(max_seq_len=T))  # make sure the graph exists
    state = tier.new_state(max_seq_len=T)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        tier.prefill(ids, state)
        torch.cuda.synchronize()
    sums, counts, names = {}, {}, {}
    for evt in prof.events():
        if evt.device_type != torch.autograd.DeviceType.CUDA or "memcpy" in evt.name.lower() or "memset" in evt.name.lower():
            continue
        name = evt.name.lower()
        cat = next((c for c, keys in CATEGORIES if any(k in name for k in keys)), "other")
        us = evt.time_range.elapsed_us()
        sums[cat] = sums.get(cat, 0.0) + us
        counts[cat] = counts.get(cat, 0) + 1
        names.setdefault(cat, {})
        names[cat][evt.name[:90]] = names[cat].get(evt.name[:90], 0.0) + us
    top = {c: sorted(n.items(), key=lambda kv: -kv[1])[:4] for c, n in names.items()}
    return {c: {"us": sums[c], "kernels": counts[c], "top": top[c]} for c in sums}


def derive(row: dict, config) -> dict:
    """Add the figures computed from a measured row: achieved TFLOP/s and the FLOP floor."""
    flops = matrix_flops(config, row["T"])
    row.update(tflops=flops / (row["ms_median"] / 1000.0) / 1e12, flop_floor_ms=1000.0 * flops / DENSE_BF16)
    return row


def render(rows) -> str:
    lines = ["| prompt | tok/s (median) | min–max | ms | TFLOP/s | matrix floor ms | GEMM µs | fla µs | attention µs | ours µs | other µs | kernels |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        b = r["breakdown"]
        us = lambda c: f"{b.get(c, {}).get('us', 0.0):,.0f}"  # noqa: E731
        n = sum(v["kernels"] for v in b.values())
        lines.append(f"| pp{r['T']} | {r['tok_s_median']:,.0f} | {r['tok_s_min']:,.0f}–{r['tok_s_max']:,.0f} | "
                     f"{r['ms_median']:.3f} | {r['tflops']:.0f} | {r['flop_floor_ms']:.3f} | {us('GEMM (cuBLAS)')} | "
                     f"{us('delta rule (fla)')} | {us('attention (SDPA)')} | {us('ours (prefill.cu)')} | {us('other')} | {n} |")
    return "\n".join(lines) + "\n"


def rerender(path: str) -> None:
    """Recompute the derived columns of a prefill_bench.json (and its .md beside it) from its measured times."""
    config = ModelConfig.qwen3_5_0_8b()
    with open(path) as f:
        doc = json.load(f)
    doc["fast"] = [derive(r, config) for r in doc["fast"]]
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(os.path.dirname(path), "prefill_bench.md"), "w") as f:
        f.write(render(doc["fast"]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m megakernel.bench_prefill")
    p.add_argument("--pp", default="1,63,520,4096,32768")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--reference-pp", default="520", help="lengths also timed with prefill='reference' (0: none)")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--rerender", metavar="JSON", help="only recompute the derived columns of a written prefill_bench.json")
    args = p.parse_args(argv)

    def lengths(text, what, allow_zero=False):
        try:
            values = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            p.error(f"{what} {text!r}: expected comma-separated whole numbers, e.g. 520,4096")
        if any(v < (0 if allow_zero else 1) for v in values):
            p.error(f"{what} {text!r}: lengths must be {'0 or more' if allow_zero else 'at least 1'}")
        return [v for v in values if v > 0]

    pp, reference_pp = lengths(args.pp, "--pp"), lengths(args.reference_pp, "--reference-pp", allow_zero=True)
    if args.rerender:
        rerender(args.rerender)
        return 0
    from .tier import MegakernelTier

    config = ModelConfig.qwen3_5_0_8b()
    weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
    tier = MegakernelTier(config, weights, device="cuda")
    if tier.fast_prefill is None:
        print(f"no fast prefill: {tier.prefill_note}", file=sys.stderr)
        return 1
    rows = []
    for T in pp:
        r = time_pp(tier, T, args.reps if T <= 4096 else 3)
        r["breakdown"] = breakdown(tier, T)
        rows.append(derive(r, config))
        print(f"pp{T}: {r['tok_s_median']:,.0f} tok/s ({r['ms_median']:.3f} ms; {r['tflops']:.0f} TFLOP/s; "
              f"floor {r['flop_floor_ms']:.3f} ms) " + ", ".join(f"{c} {v['us']:.0f} µs/{v['kernels']}"
                                                            for c, v in r["breakdown"].items()), flush=True)
    ref_rows = []
    slow = MegakernelTier(config, weights, device="cuda", prefill="reference")
    for T in reference_pp:
        r = time_pp(slow, T, 2)
        ref_rows.append(r)
        print(f"pp{T} (prefill='reference'): {r['tok_s_median']:,.0f} tok/s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "prefill_bench.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "fast": rows, "reference": ref_rows}, f, indent=1)
    table = render(rows)
    with open(os.path.join(args.out, "prefill_bench.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
