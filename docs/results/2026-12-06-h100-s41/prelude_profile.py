"""Where a pp520 prefill's host time goes before its graph starts (session 29 call 2, run again in session 41 call 2; after s24's prelude_split.py and
s25's bind kernel). REPS prefills of one 520-token prompt, each on a new state, as `compare prefill` times them
(ids on the GPU) and with the ids on the CPU (as a tokenizer gives them). Each call is split by host clocks and
GPU events:
  gpu_prelude: an event at the call's start -> the event recorded just before graph.replay (the GPU idles);
  gpu_graph:   that event -> the event after the call;
  host stamps: every step of the call's path (the interface's checks, the tier's FastPrefill, bind, replay), wrapped.
Then cProfile over REPS calls (GPU ids): the functions by their own time. And what one torch op costs on this host.
    PYTHONPATH=<tree> python prelude_profile.py OUT_DIR [T]
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
from megakernel import prefill as mp
from reference import ModelConfig, perturb_norms, random_weights
from reference import interface as iface

REPS = 40
HOST: dict = {}


def timed(owner, name, label=None):
    fn = getattr(owner, name)

    def wrapper(*a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            HOST.setdefault(label or name, []).append((time.perf_counter() - t0) * 1e6)
    setattr(owner, name, wrapper)


def both(v):
    return [round(statistics.median(v), 1), round(min(v), 1)]


def inference_mode_once():
    with torch.inference_mode():
        pass


def one_op_costs(dev):
    """µs a call (median of 200) of a few torch ops on this host, the GPU idle."""
    x = torch.zeros(520, dtype=torch.int64, device=dev)
    xc = x.cpu()
    ops = {"torch.empty(1, cuda)": lambda: torch.empty(1, device=dev), "x.add_(1) (cuda)": lambda: x.add_(0),
           "torch.aminmax(cuda ids)": lambda: torch.aminmax(x), "stack(aminmax).tolist() (cuda, a sync)":
           lambda: torch.stack(torch.aminmax(x)).tolist(), "torch.aminmax(cpu ids)": lambda: torch.aminmax(xc),
           "cpu ids .to(cuda)": lambda: xc.to(dev), "cuda ids .to(cuda) (no copy)": lambda: x.to(dev),
           "torch.cuda.synchronize()": torch.cuda.synchronize, "with torch.inference_mode(): pass": inference_mode_once}
    out = {}
    for name, fn in ops.items():
        ts = []
        for _ in range(200):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e6)
        out[name] = both(ts)
    return out


def main(out_dir, T):
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
        HOST.setdefault("graph.replay (the launch call)", []).append((time.perf_counter() - t0) * 1e6)

    torch.cuda.CUDAGraph.replay = replay
    cls = type(tier)
    for owner, name, label in [(iface.Tier, "_check_ids", "interface _check_ids"), (iface.Tier, "check", "interface check(state)"),
                               (iface.Tier, "_check_state", "interface _check_state"), (cls, "_prefill", "tier _prefill (all below)"),
                               (mp.FastPrefill, "__call__", "FastPrefill.__call__"), (mp.FastPrefill, "plan", "FastPrefill.plan"),
                               (mp.PrefillPlan, "bind", "PrefillPlan.bind"), (mp, "state_table", "state_table")]:
        timed(owner, name, label)
    gen = torch.Generator().manual_seed(3)
    ids_cpu = torch.randint(0, config.vocab_size, (1, T), generator=gen)
    rows = {}
    for where, ids in (("gpu ids", ids_cpu.cuda()), ("cpu ids", ids_cpu)):
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
        row = {"gpu_prelude_us": both(pre), "gpu_graph_us": both(graph), "host_call_us": both(calls),
               **{f"host {k} us": both(v) for k, v in HOST.items()}}
        rows[where] = row
        print(f"pp{T} {where} (median / min of {REPS} calls):")
        for k, v in row.items():
            print(f"  {k:45s} {v[0]:8.1f} / {v[1]:8.1f}")
    ids = ids_cpu.cuda()
    prof = cProfile.Profile()
    states = [tier.new_state(max_seq_len=T) for _ in range(REPS)]
    torch.cuda.synchronize()
    prof.enable()
    for s in states:
        tier.prefill(ids, s)
        torch.cuda.synchronize()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
    open(f"{out_dir}/prelude_cprofile.txt", "w").write(text.getvalue())
    ops = one_op_costs(torch.device("cuda"))
    print("one torch op on this host (µs, median / min of 200):")
    for k, v in ops.items():
        print(f"  {k:45s} {v[0]:8.1f} / {v[1]:8.1f}")
    json.dump({"device": torch.cuda.get_device_name(), "T": T, "reps": REPS, "rows": rows, "one_op_us": ops},
              open(f"{out_dir}/prelude_profile.json", "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 520)
