"""Where the ~250 µs between a prefill's region and its graph replay go (session 24 call 6; call 5: the staged bind
did not shorten them). For T in the list, REPS prefills of a fresh T-token prompt (CPU ids, a new state each, as
`compare prefill` times them), each split by host clocks and GPU events:
  gpu_prelude: event at the call's start -> event recorded just before graph.replay (the GPU idles: host time);
  gpu_graph:   that event -> the event after the call (launch latency + the graph);
  host: perf_counter of the whole call, of FastPrefill.__call__, of bind(), of graph.replay() (the launch call).
    PYTHONPATH=<tree> python prelude_split.py OUT.json 64,520
(Call 6 ran it at 3197619: 20 repetitions, medians only.)
"""
import json
import statistics
import sys
import time

import torch

from compare import load_tier
from megakernel import prefill as mp
from reference import ModelConfig, perturb_norms, random_weights

HOST = {}
REPS = 40  # (the host's times swing ±50% call to call: each figure is given as median / min)


def timed(name, fn):
    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            HOST.setdefault(name, []).append((time.perf_counter() - t0) * 1e6)
    return wrapper


def main(path, lengths):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)), device="cuda")
    marks = []
    real_replay = torch.cuda.CUDAGraph.replay

    def replay(graph):
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        marks.append(e)
        t0 = time.perf_counter()
        real_replay(graph)
        HOST.setdefault("graph.replay (launch)", []).append((time.perf_counter() - t0) * 1e6)

    torch.cuda.CUDAGraph.replay = replay
    mp.PrefillPlan.bind = timed("bind", mp.PrefillPlan.bind)
    mp.FastPrefill.__call__ = timed("FastPrefill.__call__", mp.FastPrefill.__call__)
    gen, rows = torch.Generator().manual_seed(3), []
    for T in lengths:
        ids = torch.randint(0, config.vocab_size, (1, T), generator=gen)
        for _ in range(3):
            tier.prefill(ids, tier.new_state(max_seq_len=T))
        HOST.clear()
        pre, graph, calls = [], [], []
        for _ in range(REPS):
            state = tier.new_state(max_seq_len=T)
            torch.cuda.synchronize()
            marks.clear()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            t0 = time.perf_counter()
            tier.prefill(ids, state)
            calls.append((time.perf_counter() - t0) * 1e6)
            b.record()
            b.synchronize()
            pre.append(a.elapsed_time(marks[0]) * 1e3)
            graph.append(marks[0].elapsed_time(b) * 1e3)
        both = lambda v: [statistics.median(v), min(v)]  # noqa: E731
        row = {"T": T, "gpu_prelude_us": both(pre), "gpu_graph_us": both(graph), "host_call_us": both(calls),
               **{f"host {k} us": both(v) for k, v in HOST.items()}}
        rows.append(row)
        print(f"pp{T} (median / min of {REPS}): " + ", ".join(f"{k} {v[0]:.0f} / {v[1]:.0f}" for k, v in row.items() if k != "T"))
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [int(x) for x in sys.argv[2].split(",")])
