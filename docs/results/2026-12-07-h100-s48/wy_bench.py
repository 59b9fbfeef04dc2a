"""Session 48 (issue 21): a DeltaNet layer's dn_prep + FlashQLA rule as the prefill runs them, with FlashQLA's kkt_solve
(its own launch: the rule given no A) against dn_prep's WY blocks writing A (the rule given it, kkt_solve gone). One
layer of a fresh plan at T rows (random weights, seed 0; the in-projection's output random), µs a call from a CUDA graph of
20 calls (compare.timing.graph_us), medians of 7 replays, each way twice, alternating; dn_prep alone both ways; the
rule's o and final state of the two ways against each other (A's rounding differs: FlashQLA's tf32 products against our
fp32 ones).
    PYTHONPATH=<tree> python wy_bench.py OUT_DIR [T,T,...]
"""
import json
import sys

import torch

from compare.delta_rule import relative_error
from compare.timing import graph_us
from megakernel.prefill import FastPrefill
from megakernel.tier import MegakernelTier
from reference import ModelConfig
from reference.weights import random_weights


def main(out_dir, lengths=(520, 4096)):
    config = ModelConfig.qwen3_5_0_8b()
    tier = MegakernelTier(config, random_weights(config, seed=0, dtype=torch.bfloat16), device="cuda")
    fast, rows = FastPrefill(tier), []
    for T in lengths:
        plan, state = fast.plan(T, T, True), tier.new_state(max_seq_len=T)
        assert plan.dn_a is not None, "the plan's rule takes no A (FlashQLA not installed?)"
        plan.bind(torch.randint(0, config.vocab_size, (1, T)), state)
        k = tier.k
        proj = torch.randn(T, k.DN_WIN, device="cuda", generator=torch.Generator(device="cuda").manual_seed(T)).bfloat16()
        w = tier.prefill_weights[config.layer_types.index("linear_attention")]
        rule, scale = plan.delta_rule, k.DN_DK ** -0.5

        def prep(A):
            plan.op["prefill_dn_prep"](proj, plan.table, 0, w["conv_w"], w["a_log"], w["dt_bias"], plan.dn_q, plan.dn_k,
                                       plan.dn_v, plan.g, plan.beta, plan.h0, rule.g_chunk, A)

        def layer(A):
            prep(A)
            return rule(plan.dn_q, plan.dn_k, plan.dn_v, plan.g, plan.beta, scale, plan.h0, A)

        got = {}
        for name, A in (("kkt_solve", None), ("wy", plan.dn_a)):
            o, final = layer(A)
            got[name] = (o[:, :T].clone(), final.clone())
        us = {n: [] for n in ("kkt_solve", "wy", "prep", "prep_wy")}
        for _ in range(2):
            us["kkt_solve"].append(graph_us(lambda: layer(None), 20, 7)[0])
            us["wy"].append(graph_us(lambda: layer(plan.dn_a), 20, 7)[0])
            us["prep"].append(graph_us(lambda: prep(None), 20, 7)[0])
            us["prep_wy"].append(graph_us(lambda: prep(plan.dn_a), 20, 7)[0])
        row = {"T": T, "R": plan.dn_q.shape[1], **{f"us_{n}": v for n, v in us.items()},
               "o_rel": relative_error(got["wy"][0], got["kkt_solve"][0]),
               "state_rel": relative_error(got["wy"][1], got["kkt_solve"][1])}
        rows.append(row)
        print(json.dumps(row), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(f"{out_dir}/wy_bench.json", "w"), indent=1)
    with open(f"{out_dir}/wy_bench.md", "w") as f:
        f.write("| T | dn_prep + kkt_solve + rule (µs) | dn_prep with A + rule | dn_prep alone | dn_prep with A alone | "
                "o rel. diff | state rel. diff |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
        j = lambda v: " / ".join(f"{x:.1f}" for x in v)  # noqa: E731
        for r in rows:
            f.write(f"| {r['T']} | {j(r['us_kkt_solve'])} | {j(r['us_wy'])} | {j(r['us_prep'])} | {j(r['us_prep_wy'])} | "
                    f"{r['o_rel']:.2e} | {r['state_rel']:.2e} |\n")


if __name__ == "__main__":
    main(sys.argv[1], *([tuple(int(t) for t in sys.argv[2].split(","))] if len(sys.argv) > 2 else []))
