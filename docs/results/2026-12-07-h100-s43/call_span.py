"""A prefill call's whole time, host prelude included, in any tree (session 43: the graph launched with its bind node,
NOTES "Prefill" v21, against main's bind op + graph.replay; s29's prelude_profile.py wraps graph.replay, which the
new tree no longer calls). REPS prefills of one T-token prompt, each into a new state, ids on the GPU (as `compare
prefill` / `bench` give them) and on the CPU (as a tokenizer does):
  span_us: a CUDA event recorded just before the call -> one just after it (the GPU's idle time before the graph
           starts, the host's steps in the call, and the graph);
  wall_us: the host's clock from the call's start to the end of the GPU's work (b.synchronize());
  and split at an event recorded just before the graph's launch call (torch's graph.replay in the trees before
  s43-graph-launch, the extension's launch_prefill_graph in those after: wrapped here):
  prelude_us: a -> that event (the GPU idle while the host prepares the launch), graph_us: that event -> b.
Medians and minima; writes OUT_DIR/call_span.json.
    PYTHONPATH=<tree> python call_span.py OUT_DIR [T] [REPS]
"""
import json
import statistics
import sys
import time

import torch

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights


def main(out_dir, T=520, reps=60):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)),
                     device="cuda")
    ids_cpu = torch.randint(0, config.vocab_size, (1, T), generator=torch.Generator().manual_seed(3))
    marks = []

    def marked(launch):
        def wrapper(*args, **kwargs):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            marks.append(e)
            return launch(*args, **kwargs)
        return wrapper
    if hasattr(tier.ext, "launch_prefill_graph"):  # (s43-graph-launch: the plan looks it up at every call)
        tier.ext.launch_prefill_graph = marked(tier.ext.launch_prefill_graph)
    else:
        torch.cuda.CUDAGraph.replay = marked(torch.cuda.CUDAGraph.replay)
    rows = {}
    for where, ids in (("gpu ids", ids_cpu.cuda()), ("cpu ids", ids_cpu)):
        for _ in range(3):  # eager, captured, launched
            tier.prefill(ids, tier.new_state(max_seq_len=T))
        got = {"span_us": [], "wall_us": [], "prelude_us": [], "graph_us": []}
        for _ in range(reps):
            state = tier.new_state(max_seq_len=T)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            marks.clear()
            a.record()
            t0 = time.perf_counter()
            tier.prefill(ids, state)
            b.record()
            b.synchronize()
            got["wall_us"].append((time.perf_counter() - t0) * 1e6)
            got["span_us"].append(a.elapsed_time(b) * 1e3)
            assert len(marks) == 1, f"{len(marks)} graph launches in one prefill call"
            got["prelude_us"].append(a.elapsed_time(marks[0]) * 1e3)
            got["graph_us"].append(marks[0].elapsed_time(b) * 1e3)
        rows[where] = {k: [statistics.median(v), min(v)] for k, v in got.items()}
        print(f"pp{T} {where} (median / min of {reps}, µs): " +
              ", ".join(f"{k[:-3]} {v[0]:.1f} / {v[1]:.1f}" for k, v in rows[where].items()))
    json.dump({"device": torch.cuda.get_device_name(), "T": T, "reps": reps, "rows": rows},
              open(f"{out_dir}/call_span.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
