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


def stream_only(tier, reps=3):
    """The ring's weight stream alone (MKF_STREAM_ONLY: the compute warps only take and release
    the chunks), with one and with two producer warps: the ceiling the schedule's stream puts on
    tg128. → {"1 producer": {...tg...}, "2 producers": {...}} (empty without the ring)."""
    from .tier import MKF_STREAM_ONLY, MKF_TWO_PRODUCERS

    if not tier.max_ring_slots:
        return {}
    saved, out = tier.flags, {}
    try:
        for name, extra in (("1 producer", 0), ("2 producers", MKF_TWO_PRODUCERS)):
            tier.flags = saved | MKF_STREAM_ONLY | extra
            out[name] = tg(tier, reps=reps)
    finally:
        tier.flags = saved
    return out


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
    """Back-to-back greedy steps (no host sync between them) with globaltimer stamps, µs, means
    over `steps` - 1 pairs: the kernel's span (block 0's start to the argmax's end), the gap
    from one launch's argmax to the next one's start, the restart (the argmax to the next
    launch's embedding row normed in block 0) and the first phase (that to the first barrier's
    exit). None for a stream-only launch."""
    from .tier import MKF_STREAM_ONLY, NPHASES, NTIMES

    if tier.flags & MKF_STREAM_ONLY:
        return None  # (a stream-only launch stamps no phases)
    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, tier.config.vocab_size, (1, prompt_len), generator=gen)
    state = tier.new_state(max_seq_len=prompt_len + steps + 1)
    ids = tier.prefill(prompt, state).argmax(-1).to(tier.device)
    bufs = [tier.times_buffer() for _ in range(steps)]
    torch.cuda.synchronize()
    for buf in bufs:
        out = torch.empty(1, dtype=torch.int64, device=tier.device)
        tier._launch(state, ids, out, times=buf)
        state.seq_len += 1
        ids = out
    torch.cuda.synchronize()
    t = [b[:NTIMES].cpu().tolist() for b in bufs]
    spans = [(x[NPHASES] - x[0]) / 1000.0 for x in t]
    pairs = range(steps - 1)
    gaps = [(t[k + 1][0] - t[k][NPHASES]) / 1000.0 for k in pairs]
    restarts = [(t[k + 1][NPHASES + 2] - t[k][NPHASES]) / 1000.0 for k in pairs]
    first = [(t[k + 1][1] - t[k + 1][NPHASES + 2]) / 1000.0 for k in pairs]
    return {"span_us": statistics.mean(spans[1:]), "gap_us": statistics.mean(gaps), "gap_min_us": min(gaps),
            "restart_us": statistics.mean(restarts), "first_phase_us": statistics.mean(first)}


PHASE_NAMES = ("in-proj", "core", "out-proj", "gate/up", "down")
UNIT_STEPS = ("unit0 q,k normed", "unit0 warp0 scored", "unit0 output stored", "unit0 merged")


def phase_anatomy(tier, prompt_len=128, steps=8, seed=0):
    """Where each layer phase's time goes, from the timing mode's stamps: from block 0's exit of
    the previous barrier to the first, median and last block's arrival at the phase's barrier
    (the blocks' own work: the fastest, typical and critical block), then the last arrival to
    block 0's exit (the barrier's exit latency). µs, means over the layers of a kind and
    `steps` steps after a `prompt_len`-token prompt. → {"DeltaNet in-proj": {...}, ...,
    "ring_full_us": {min, median, max over blocks}}; for the
    attention core also the share of steps whose critical block is a split-K unit ("unit_last")
    and the times at which block 0's own unit passed its steps (UNIT_STEPS). In the stream-only
    mode (MKF_STREAM_ONLY) the compute warps stamp nothing: the ring's full time alone."""
    from .tier import MKF_STREAM_ONLY, NBARRIERS, NPHASES, UNIT_STAMPS, attention_splits

    gen = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, tier.config.vocab_size, (1, prompt_len), generator=gen)
    state = tier.new_state(max_seq_len=prompt_len + steps + 2)
    ids = tier.decode_argmax(tier.prefill(prompt, state).argmax(-1).to(tier.device), state)
    rows, ring_full = {}, torch.zeros(tier.grid, dtype=torch.float64)
    for _ in range(steps):
        units = 2 * attention_splits(state.seq_len, tier.positions_per_split)  # the step's attention split-K units
        tier.decode_layer_times(ids, state)
        ring_full += tier.last_ring_full_us / steps
        t = tier.last_phase_stamps
        for q in range(0 if tier.flags & MKF_STREAM_ONLY else NBARRIERS):
            layer, sub = divmod(q, 5)
            arr = tier.last_barrier_arrivals[:, q]
            start, exit_ = t[q], t[q + 1]  # (t[0]: block 0's start)
            kind = ("attention " if layer % 4 == 3 else "DeltaNet ") + PHASE_NAMES[sub]
            r = rows.setdefault(kind, {"first": 0.0, "median": 0.0, "last": 0.0, "exit": 0.0, "unit_last": 0.0, "n": 0})
            r["first"] += (float(arr.min()) - start) / 1000.0
            r["median"] += (float(arr.median()) - start) / 1000.0
            r["last"] += (float(arr.max()) - start) / 1000.0
            r["exit"] += (exit_ - float(arr.max())) / 1000.0
            r["unit_last"] += float(int(arr.argmax()) < units)
            r["n"] += 1
            if kind == "attention core":  # block 0's own unit, step by step (kernel: UNIT_STAMPS)
                per_unit = r.setdefault("unit_arrivals", {})  # every unit block's own arrival: [sum, count]
                for blk in range(min(units, len(arr))):
                    acc = per_unit.setdefault(blk, [0.0, 0])
                    acc[0] += (float(arr[blk]) - start) / 1000.0
                    acc[1] += 1
                base = NPHASES + 3 + UNIT_STAMPS * (layer // 4)
                for k, name in enumerate(UNIT_STEPS):
                    r[name] = r.get(name, 0.0) + (t[base + k] - start) / 1000.0
    out = {k: {f: v / r["n"] for f, v in r.items() if f not in ("n", "unit_arrivals")} for k, r in rows.items()}
    core = rows.get("attention core")
    if core:  # mean arrival of the block of unit 0, 1, ... (over the steps that had that unit)
        out["attention core"]["unit_arrivals"] = [t / n for _, (t, n) in sorted(core["unit_arrivals"].items())]
    # µs per token the blocks' producers waited for a free ring slot in the layers (the stream was
    # ahead of the phases); near zero: the phases wait for the stream instead
    out["ring_full_us"] = {"min": float(ring_full.min()), "median": float(ring_full.median()), "max": float(ring_full.max())}
    return out


def anatomy_lines(an) -> list[str]:
    """phase_anatomy's result as a table: one line per phase kind (µs: first / median / last
    arrival, exit; the share of steps whose last block was an attention unit), block 0's
    attention unit step by step, every unit block's arrival, and the ring's full time."""
    if len(an) == 1:  # the ring's full time only
        lines = ["  no phase stamps (MKF_STREAM_ONLY: the compute warps only take and release the chunks)"]
    else:
        lines = [f"  {'phase':22s} {'first':>6s} {'median':>6s} {'last':>6s} {'exit':>6s}  last block is an attention unit"]
    for kind, r in an.items():
        if kind == "ring_full_us":
            continue
        lines.append(f"  {kind:22s} {r['first']:6.2f} {r['median']:6.2f} {r['last']:6.2f} {r['exit']:6.2f}  {r['unit_last']:.0%}")
    core = an.get("attention core")
    if core:
        lines.append("  attention core, block 0's unit: " + ", ".join(f"{k} {v:.2f}" for k, v in core.items() if k.startswith("unit0")))
        lines.append("  attention core, every unit block's arrival: " + " ".join(f"{v:.2f}" for v in core.get("unit_arrivals", [])))
    full = an["ring_full_us"]
    lines.append(f"  ring full (a producer waited for a free slot; layers, us per token): min {full['min']:.1f}, "
                 f"median {full['median']:.1f}, max {full['max']:.1f} over blocks")
    return lines
