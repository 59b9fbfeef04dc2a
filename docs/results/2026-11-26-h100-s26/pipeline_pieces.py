"""Would a prompt cut into row pieces, the pieces a layer apart on their own streams, fill the GPU
better than one 520-row pass? (Session 26, issue 21: an emulation before any kernel changes.)

Each piece of a split runs the fast prefill's own launch sequence (PrefillPlan's ops, a plan of
its rows, a state of its own) as a generator yielding after each layer; piece j's layer l waits on
piece j-1's layer l (an event): the dependency a real split would have (piece j's conv history,
its delta rule's initial state and its keys come from piece j-1's layer l). All pieces are
captured in one CUDA graph over one stream each. What is left out (so the times are an estimate):
the later pieces' attention over the earlier pieces' keys (each attends its own, SDPA causal;
attention is ~4% of pp520), and the hand-over of the conv rows and state (a few small copies).
Pieces before the last run their last layer (attention) only up to its K/V; the last piece
computes the last row's logits, as a fresh plan does.

    PYTHONPATH=<tree> python pipeline_pieces.py OUT.json 520 256,264 192,192,136 ...

Every split is also captured sequentially (one stream: what the concurrency buys); all graphs
are timed interleaved, ROUNDS rounds of REPS replays each, medians.
"""
import json
import statistics
import sys

import torch

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights
from reference.config import LINEAR
from megakernel import prefill as mp

ROUNDS, REPS = 5, 20


def steps(p, last_piece: bool):
    """PrefillPlan.run's launch sequence (a fresh plan, no trace), yielding after each layer."""
    t, op, T, eps, k = p.tier, p.op, p.T, p.eps, p.k
    W = t.prefill_weights
    embed = t.weights["model.embed_tokens.weight"]
    op["prefill_dn_state_in"](p.table, p.h0)
    op["prefill_add_rms_norm"](None, p.ids, embed, p.res, W[0]["in_norm"], p.h, eps)
    n = len(W)
    for i, kind in enumerate(t.config.layer_types):
        w, slot = W[i], t.config.layer_slot(i)
        last = i == n - 1
        r = slice(T - 1, T) if last else slice(0, T)
        if i > 0:
            op["prefill_add_rms_norm"](p.out_rows(slice(0, T)), None, embed, p.res, w["in_norm"], p.h, eps)
        if last and not last_piece:  # only this piece's keys and values are wanted of the last layer
            assert kind != LINEAR
            proj = p.proj_buf[:T * k.FA_QKV].view(T, k.FA_QKV)
            torch.mm(p.h, w["win"].t(), out=proj)
            op["prefill_attn_prep"](proj, w["q_norm"], w["k_norm"], p.table, slot, p.max_seq, p.qbuf, p.kv, eps)
            yield i
            return
        if kind == LINEAR:
            p.deltanet(w, slot, r)
        else:
            p.attention(w, slot, r)
        op["prefill_add_rms_norm"](p.out_rows(r), None, embed, p.res[r], w["post_norm"], p.h[r], eps)
        torch.mm(p.h[r], w["gate_up"].t(), out=p.gu[r])
        op["prefill_silu_mul"](p.gu[r], p.act[r])
        p.project(p.act[r], w["down"], r)
        if last:
            rows = slice(T - 1, T)
            op["prefill_add_rms_norm"](p.out_rows(rows), None, embed, p.res[rows], t.weights["model.norm.weight"],
                                       p.h[rows], eps)
            op["prefill_lm_head"](p.h, p.table, t.lm_head_weight, p.logits)
        yield i


def issue(plans, concurrent: bool, streams):
    """Every piece's launches: a wavefront over (layer, piece) on one stream per piece, or all on the current stream."""
    L = len(plans[0].tier.config.layer_types)
    gens = [steps(p, j == len(plans) - 1) for j, p in enumerate(plans)]
    if not concurrent:
        for g in gens:
            for _ in g:
                pass
        return
    main = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(main)
    done = [[None] * L for _ in plans]
    for step in range(L + len(plans) - 1):
        for j in range(len(plans)):
            l = step - j
            if 0 <= l < L:
                with torch.cuda.stream(streams[j]):
                    if j > 0:
                        streams[j].wait_event(done[j - 1][l])
                    next(gens[j])
                    e = torch.cuda.Event()
                    e.record(streams[j])
                    done[j][l] = e
    for s in streams:
        main.wait_stream(s)


def main(path, splits):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)), device="cuda")
    rule = tier.fast_prefill.delta_rule
    gen = torch.Generator().manual_seed(3)
    variants = {}
    for split in splits:
        plans = []
        for T in split:
            p = mp.PrefillPlan(tier, T, T, True, None, rule)
            p.bind(torch.randint(0, config.vocab_size, (1, T), generator=gen), tier.new_state(max_seq_len=T))
            plans.append(p)
        streams = [torch.cuda.Stream() for _ in plans]
        for concurrent in ([False, True] if len(split) > 1 else [False]):
            issue(plans, concurrent, streams)  # eager: compiles and tunes
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                issue(plans, concurrent, streams)
            name = "+".join(map(str, split)) + (" concurrent" if concurrent else (" sequential" if len(split) > 1 else ""))
            variants[name] = (g, plans)
            print("captured", name, flush=True)
    times = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, (g, _) in variants.items():
            for _ in range(3):
                g.replay()
            for _ in range(REPS):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                g.replay()
                b.record()
                b.synchronize()
                times[name].append(a.elapsed_time(b) * 1e3)
    rows = []
    for name, v in times.items():
        rows.append({"variant": name, "us_median": statistics.median(v), "us_min": min(v), "us_max": max(v), "n": len(v)})
        print(f"{name:32s} median {statistics.median(v):8.1f} µs  min {min(v):8.1f}  max {max(v):8.1f}", flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "delta_rule": rule, "rows": rows}, open(path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [[int(x) for x in s.split(",")] for s in sys.argv[2:]])
