"""The megakernel's own decode timing (the official numbers come from `compare bench`):
tg128 = 128 greedy steps after a 16-token prompt, device-side argmax fed back without a
host sync, timed with CUDA events; median / min / max over repetitions."""

from __future__ import annotations

import statistics

import torch

WEIGHT_BYTES = 1_503_789_056  # bytes one decode step must read (shared/benchmarking.md)
COPY_BW = 2.87e12             # measured device-to-device copy bandwidth of the lent H100


def tg(tier, n=128, prompt_len=16, reps=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, tier.config.vocab_size, (1, prompt_len), generator=gen)
    times = []
    for rep in range(reps + 1):  # the first repetition warms up
        state = tier.new_state(max_seq_len=prompt_len + n + 1)
        logits = tier.prefill(prompt, state)
        ids = logits.argmax(-1).to(tier.device)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            ids = tier.decode_argmax(ids, state)
        end.record()
        torch.cuda.synchronize()
        if rep:
            times.append(start.elapsed_time(end) / 1000.0)
    tps = [n / t for t in times]
    med = statistics.median(tps)
    return {"tok_s_median": med, "tok_s_min": min(tps), "tok_s_max": max(tps),
            "ms_per_token": 1000.0 / med, "bw_fraction": med * WEIGHT_BYTES / COPY_BW, "reps": reps}


def layer_times(tier, prompt_len=16, steps=8, seed=0):
    """Mean µs per part over `steps` timed decode steps (after one untimed)."""
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, tier.config.vocab_size, (1, prompt_len), generator=gen)
    state = tier.new_state(max_seq_len=prompt_len + steps + 2)
    ids = tier.prefill(prompt, state).argmax(-1).to(tier.device)
    ids = tier.decode_argmax(ids, state)
    acc, skew, lat = {}, [0.0] * 120, [0.0] * 120
    for _ in range(steps):
        t = tier.decode_layer_times(ids, state)
        for k, v in t.items():
            acc[k] = acc.get(k, 0.0) + v / steps
        for q in range(120):
            skew[q] += tier.last_barrier_stats["skew_us"][q] / steps
            lat[q] += tier.last_barrier_stats["latency_us"][q] / steps
    phases = [(tier.last_phase_stamps[q + 1] - tier.last_phase_stamps[q]) / 1000.0 for q in range(120)]
    tier.last_barrier_means = {"skew_us": skew, "latency_us": lat}
    return acc, phases


def launch_gaps(tier, steps=16, prompt_len=16, seed=0):
    """Back-to-back greedy steps (no host sync between them) with globaltimer stamps: the
    kernel's span (first block's start to the argmax's end) and the gap from one launch's end
    to the next one's start, µs, means over `steps` - 1 pairs."""
    from .tier import NBARRIERS, NPHASES, NTIMES

    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, tier.config.vocab_size, (1, prompt_len), generator=gen)
    state = tier.new_state(max_seq_len=prompt_len + steps + 1)
    ids = tier.prefill(prompt, state).argmax(-1).to(tier.device)
    bufs = [torch.zeros(NTIMES + tier.max_grid * NBARRIERS, dtype=torch.int64, device=tier.device) for _ in range(steps)]
    torch.cuda.synchronize()
    for buf in bufs:
        out = torch.empty(1, dtype=torch.int64, device=tier.device)
        tier._launch(state, ids, out, times=buf)
        state.seq_len += 1
        ids = out
    torch.cuda.synchronize()
    t = [b[:NTIMES].cpu().tolist() for b in bufs]
    spans = [(x[NPHASES] - x[0]) / 1000.0 for x in t]
    gaps = [(t[k + 1][0] - t[k][NPHASES]) / 1000.0 for k in range(steps - 1)]
    return {"span_us": statistics.mean(spans[1:]), "gap_us": statistics.mean(gaps), "gap_min_us": min(gaps)}
