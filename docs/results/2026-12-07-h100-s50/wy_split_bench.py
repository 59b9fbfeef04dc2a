"""Session 50 (issue 21): dn_prep given A (FlashQLA's chunk matrices) at T rows in the tree on PYTHONPATH, as one kernel
(main since 02af82f: the WY blocks first in dn_prep_kernel's grid) or two (branch s50-wy-split: dn_wy_kernel on a forked
stream beside the token blocks). One DeltaNet layer of a fresh plan (random weights, seed 0; the in-projection's output
random): µs a call from a CUDA graph of 20 calls (compare.timing.graph_us, medians of 7 replays, 3 times), then 20 eager
calls under torch.profiler, each synchronized: every kernel's own µs a call and a call's span (its first kernel's start
to its last kernel's end), medians — which kernel is the long pole.
    PYTHONPATH=<tree> python wy_split_bench.py OUT_DIR TAG [T,T,...]
"""
import json
import re
import statistics
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from compare.timing import graph_us
from megakernel.prefill import FastPrefill
from megakernel.tier import MegakernelTier
from reference import ModelConfig
from reference.weights import random_weights


def main(out_dir, tag, lengths=(520, 4096)):
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

        def prep():
            plan.op["prefill_dn_prep"](proj, plan.table, 0, w["conv_w"], w["a_log"], w["dt_bias"], plan.dn_q, plan.dn_k,
                                       plan.dn_v, plan.g, plan.beta, plan.h0, plan.delta_rule.g_chunk, plan.dn_a)
        us = [graph_us(prep, 20, 7)[0] for _ in range(3)]
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                prep()
                torch.cuda.synchronize()
        kernels = sorted((e for e in prof.events() if e.device_type.name == "CUDA" and "dn_" in e.name),
                         key=lambda e: e.time_range.start)
        # (the kernel's own name: the demangled name starts "mkp::(anonymous namespace)::", so no split on "(" — s51 call 1
        # ran it so, every kernel under "" and the span one kernel's: only us_graph of that call's rows holds)
        names = sorted({re.search(r"(dn_\w+_kernel)", e.name).group(1) for e in kernels})
        per = len(names)  # (kernels a call)
        own = {n: statistics.median(e.time_range.elapsed_us() for e in kernels if re.search(rf"\b{n}\b", e.name)) for n in names}
        spans = [max(e.time_range.end for e in kernels[i:i + per]) - min(e.time_range.start for e in kernels[i:i + per])
                 for i in range(0, len(kernels) - per + 1, per)]
        row = {"tag": tag, "T": T, "R": plan.dn_q.shape[1], "us_graph": us, "kernel_us": own,
               "span_us": statistics.median(spans), "calls_profiled": len(spans)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(f"{out_dir}/wy_split_bench_{tag}.json", "w"),
              indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *([tuple(int(t) for t in sys.argv[3].split(","))] if len(sys.argv) > 3 else []))
