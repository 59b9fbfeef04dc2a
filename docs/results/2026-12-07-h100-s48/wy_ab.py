"""Session 48 (issue 21): the whole prefill with dn_prep's WY blocks writing FlashQLA's chunk matrices A against the same
tree's prefill with them off (each plan's dn_a set to None: the rule's own kkt_solve launch, as before), in one process:
two FastPrefill of one tier (random weights, seed 0), each shape's graph captured, then prefills of fresh states timed
alternately in blocks of 5 (an event before the call to one after it: host prelude, graph, logits' copy), medians and
minima in µs and tok/s; the two ways' logits compared.
    PYTHONPATH=<tree> python wy_ab.py OUT_DIR [T,T,...] [CALLS]
"""
import json
import statistics
import sys

import torch

from megakernel.prefill import FastPrefill
from megakernel.tier import MegakernelTier
from reference import ModelConfig
from reference.weights import random_weights


def main(out_dir, lengths=(520, 4096), calls=40):
    config = ModelConfig.qwen3_5_0_8b()
    tier = MegakernelTier(config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
    ways = {"wy": FastPrefill(tier), "kkt_solve": FastPrefill(tier)}
    old_plan = ways["kkt_solve"].plan

    def plan_without_a(*args):
        p = old_plan(*args)
        p.dn_a = None  # (before its first run: the rule makes its own A)
        return p
    ways["kkt_solve"].plan = plan_without_a
    rows = []
    for T in lengths:
        ids = torch.randint(0, config.vocab_size, (1, T), generator=torch.Generator().manual_seed(T))
        logits = {}
        for name, fp in ways.items():
            for _ in range(3):  # (eager: compiles and tunes; then the capture; then a replay)
                logits[name] = fp(ids, tier.new_state(max_seq_len=T)).clone()
        n = calls if T <= 1024 else max(calls // 4, 5)
        states = {name: [tier.new_state(max_seq_len=T) for _ in range(n)] for name in ways}
        us = {name: [] for name in ways}
        torch.cuda.synchronize()
        for block in range(0, n, 5):
            for name, fp in ways.items():
                for s in states[name][block:block + 5]:
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    torch.cuda.synchronize()
                    a.record()
                    fp(ids, s)
                    b.record()
                    b.synchronize()
                    us[name].append(a.elapsed_time(b) * 1e3)
        diff = float((logits["wy"] - logits["kkt_solve"]).abs().max() / logits["kkt_solve"].abs().max())
        row = {"T": T, "calls": n, "logits_max_rel_diff": diff,
               "argmax_equal": bool(torch.equal(logits["wy"].argmax(-1), logits["kkt_solve"].argmax(-1)))}
        for name in ways:
            med = statistics.median(us[name])
            row[name] = {"median_us": med, "min_us": min(us[name]), "tok_s_median": T / med * 1e6, "us": us[name]}
        row["gain_median"] = row["kkt_solve"]["median_us"] / row["wy"]["median_us"] - 1
        rows.append(row)
        print(json.dumps({k: v if not isinstance(v, dict) else {kk: vv for kk, vv in v.items() if kk != "us"}
                          for k, v in row.items()}), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(f"{out_dir}/wy_ab.json", "w"), indent=1)
    with open(f"{out_dir}/wy_ab.md", "w") as f:
        f.write("| T | calls a way | kkt_solve: median µs (min) | WY blocks: median µs (min) | tok/s kkt_solve → WY | gain | "
                "logits max rel. diff |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
        for r in rows:
            o, w = r["kkt_solve"], r["wy"]
            f.write(f"| {r['T']} | {r['calls']} | {o['median_us']:.1f} ({o['min_us']:.1f}) | {w['median_us']:.1f} ({w['min_us']:.1f}) | "
                    f"{o['tok_s_median']:,.0f} → {w['tok_s_median']:,.0f} | {100 * r['gain_median']:+.2f}% | "
                    f"{r['logits_max_rel_diff']:.1e} |\n")


if __name__ == "__main__":
    main(sys.argv[1], *([tuple(int(t) for t in sys.argv[2].split(","))] if len(sys.argv) > 2 else []),
         *([int(sys.argv[3])] if len(sys.argv) > 3 else []))
