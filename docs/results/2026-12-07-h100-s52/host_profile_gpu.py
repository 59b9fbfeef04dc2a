"""Session 52: a pp520 prefill call's host time on the GPU machine's CPU, split at the extension's launch call
(megakernel tier, the graph's path, ids on the GPU as `compare bench` gives them): before the launch call (the
Python the host runs while the GPU idles), inside it (the bind launch and cudaGraphLaunch), after it (the range's
poll, the logits' clone); host clocks only, each call synchronized after. Then cProfile of CALLS calls (tottime).
    PYTHONPATH=<tree> python host_profile_gpu.py OUT_JSON TAG [CALLS]
"""
import cProfile
import io
import json
import pstats
import statistics
import sys
import time

import torch

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights


def main(out_json, tag, calls=300):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)),
                     device="cuda")
    T = 520
    ids = torch.randint(0, config.vocab_size, (1, T), generator=torch.Generator().manual_seed(3)).cuda()
    launch, marks = tier.ext.launch_prefill_graph, []

    def marked(*args):
        t0 = time.perf_counter()
        got = launch(*args)
        marks.append((t0, time.perf_counter()))
        return got
    tier.ext.launch_prefill_graph = marked
    for _ in range(3):  # eager, captured, launched
        tier.prefill(ids, tier.new_state(max_seq_len=T))
    torch.cuda.synchronize()
    got = {"before_us": [], "launch_us": [], "after_us": []}
    for _ in range(calls):
        state = tier.new_state(max_seq_len=T)
        torch.cuda.synchronize()
        marks.clear()
        t0 = time.perf_counter()
        tier.prefill(ids, state)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        (a, b), = marks
        got["before_us"].append((a - t0) * 1e6)
        got["launch_us"].append((b - a) * 1e6)
        got["after_us"].append((t1 - b) * 1e6)
    row = {k: [statistics.median(v), min(v)] for k, v in got.items()}
    print(f"{tag} pp{T} host (median / min of {calls}, µs): " + ", ".join(f"{k[:-3]} {v[0]:.1f} / {v[1]:.1f}" for k, v in row.items()))
    states = [tier.new_state(max_seq_len=T) for _ in range(calls)]
    torch.cuda.synchronize()
    pr = cProfile.Profile()
    for s in states:
        pr.enable()
        tier.prefill(ids, s)
        pr.disable()
        torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(pr, stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue())
    json.dump({"tag": tag, "device": torch.cuda.get_device_name(), "T": T, "calls": calls, "host_us": row,
               "profile": text.getvalue()}, open(out_json, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:]))
