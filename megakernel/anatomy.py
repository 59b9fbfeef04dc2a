"""Where a decode step's time goes, from the kernel's own clock (the timing mode's globaltimer
stamps: csrc/shapes.cuh, `MegakernelTier.decode_step_times`):

    python -m megakernel anatomy [--context 64] [--steps 8] [--batch B] [--grid G] [--schedule ring|register|stream-only]

- `phase_anatomy`: per kind of phase (DeltaNet in-proj, ..., attention down), µs from block 0's
  exit of the previous barrier to the first, median and last block's arrival at the phase's
  barrier, then from the last arrival to block 0's exit (the barrier's exit latency), and the part of
  it the last block's release fence took (its arrival made, less its arrival: the fence waits for the
  SM's in-flight ring copies, NOTES v30), with the mean fence over all blocks, and how long the ring's
  producers waited for a free slot held by the phase's chunks ("stall", mean over blocks: the stream
  stopped because the compute warps had not yet released that phase's weights; what a core or a
  barrier before the phase costs the stream lands on the next phase that has chunks); for both cores
  block 0's first unit step by step (the DeltaNet core's: its inputs convolved and the q, k norms summed,
  its state rows updated, done: a batch's includes the head's gated norm), for the attention core every
  unit block's arrival; and the ring's full time a step.
- `step_time`: µs a step of back-to-back greedy launches, by CUDA events, in any schedule (the
  stream-only one too: what the weight stream alone, K/V rows included, takes at this context).
- `launch_gaps`: back-to-back launches with no host sync between them (any batch): the period,
  the kernel's span, the gap from one launch's argmax to the next one's start, the restart (to
  the next launch's embedding row normed) and its first phase.
The tok/s figures come from `python -m compare bench` and `python -m compare ab`.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

PHASE_NAMES = ("in-proj", "core", "out-proj", "gate/up", "down")
UNIT_STEPS = ("unit0 q,k normed", "unit0 warp0 scored", "unit0 output stored", "unit0 merged")
DN_UNIT_STEPS = ("unit0 convolved", "unit0 rows updated", "unit0 done")


def _prompt(tier, n, seed, rows=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, tier.config.vocab_size, (rows, n), generator=gen)


def phase_anatomy(tier, prompt_len=64, steps=8, seed=0, batch=1) -> dict:
    """→ {"DeltaNet in-proj": {"first", "median", "last", "exit", "fence", "fence_mean", "stall", "unit_last"}, ...,
    "ring_full_us": {min, median, max over blocks; lm_head: the mean block's wait on the lm_head's chunks}}: µs,
    means over the layers of a kind and `steps` steps after a
    `prompt_len`-token prompt in each of `batch` rows ("fence": the last-arriving block's release
    fence, from its arrival to the arrival made; "fence_mean": every block's; "stall": the mean block's
    producer waiting for a slot that a chunk of the phase held, µs a layer; "unit_last": the share
    of steps whose last block was an attention split-K unit). In the stream-only schedule the compute warps stamp
    nothing: the ring's full time alone."""
    from .tier import attention_splits

    k = tier.k
    state = tier.new_state(batch, max_seq_len=prompt_len + steps + 2)
    ids = tier.decode_argmax(tier.prefill(_prompt(tier, prompt_len, seed, rows=batch), state).argmax(-1).to(tier.device), state)
    rows, ring_full, lm_stall = {}, torch.zeros(tier.grid, dtype=torch.float64), 0.0
    stamped = tier.schedule != "stream-only"
    for _ in range(steps):
        units = sum(k.FA_HKV * attention_splits(p, tier.positions_per_split, k.ATT_MAX_SPLIT) for p in state.positions)
        ids, st = tier.decode_step_times(ids, state)
        ring_full += st.ring_full_us / steps
        lm_stall += float(st.ring_full_by_phase[:, k.NPHASES - 1].mean()) / steps
        for q in range(k.NBARRIERS if stamped else 0):
            layer, sub = divmod(q, k.PHASES_PER_LAYER)
            start, exit_ = st.phase_start(q), st.phase_exits[q]
            # (ns as int64 until they are differences: an absolute stamp as a float rounds to 256 ns)
            arr, fence = (st.arrivals[:, q] - start).double(), (st.arrived[:, q] - st.arrivals[:, q]).double() / 1000.0
            kind = ("attention " if k.LAYER_TYPES[layer] == "full_attention" else "DeltaNet ") + PHASE_NAMES[sub]
            r = rows.setdefault(kind, {"first": 0.0, "median": 0.0, "last": 0.0, "exit": 0.0, "fence": 0.0, "fence_mean": 0.0,
                                       "stall": 0.0, "unit_last": 0.0, "n": 0})
            r["first"] += float(arr.min()) / 1000.0
            r["median"] += float(arr.median()) / 1000.0
            r["last"] += float(arr.max()) / 1000.0
            r["exit"] += (exit_ - start - float(arr.max())) / 1000.0
            r["fence"] += float(fence[int(arr.argmax())])
            r["fence_mean"] += float(fence.mean())
            r["stall"] += float(st.ring_full_by_phase[:, q].mean())
            r["unit_last"] += float(int(arr.argmax()) < units)
            r["n"] += 1
            fa = k.LAYER_TYPES[:layer].count("full_attention")  # attention layers before this one
            dn_stamps = st.dn_unit_stamps[layer - fa] if kind == "DeltaNet core" else ()
            if dn_stamps and all(dn_stamps):  # (the ring schedule's launches on Hopper stamp them; others leave 0)
                for name, t in zip(DN_UNIT_STEPS, dn_stamps):
                    r[name] = r.get(name, 0.0) + (t - start) / 1000.0
            if kind == "attention core":
                per_unit = r.setdefault("unit_arrivals", {})  # every unit block's own arrival: [sum, count]
                for blk in range(min(units, len(arr))):
                    acc = per_unit.setdefault(blk, [0.0, 0])
                    acc[0] += float(arr[blk]) / 1000.0
                    acc[1] += 1
                for name, t in zip(UNIT_STEPS, st.unit_stamps[fa]):
                    r[name] = r.get(name, 0.0) + (t - start) / 1000.0
    out = {kind: {f: v / r["n"] for f, v in r.items() if f not in ("n", "unit_arrivals")} for kind, r in rows.items()}
    core = rows.get("attention core")
    if core:  # mean arrival of the block of unit 0, 1, ... (over the steps that had that unit)
        out["attention core"]["unit_arrivals"] = [t / n for _, (t, n) in sorted(core["unit_arrivals"].items())]
    out["ring_full_us"] = {"min": float(ring_full.min()), "median": float(ring_full.median()), "max": float(ring_full.max()),
                           "lm_head": lm_stall}
    return out


def anatomy_lines(an: dict) -> list[str]:
    """phase_anatomy's result as a table a person reads at a glance."""
    if len(an) == 1:  # the ring's full time only
        lines = ["  no phase stamps (stream-only: the compute warps only take and release the chunks)"]
    else:
        lines = [f"  {'phase':22s} {'first':>6s} {'median':>6s} {'last':>6s} {'exit':>6s} {'fence':>6s} {'(mean)':>6s} "
                 f"{'stall':>6s}  last block is an attention unit"]
    for kind, r in an.items():
        if kind == "ring_full_us":
            continue
        lines.append(f"  {kind:22s} {r['first']:6.2f} {r['median']:6.2f} {r['last']:6.2f} {r['exit']:6.2f} {r['fence']:6.2f} "
                     f"{r['fence_mean']:6.2f} {r['stall']:6.2f}  {r['unit_last']:.0%}")
    dn = an.get("DeltaNet core")
    if dn and any(k.startswith("unit0") for k in dn):
        lines.append("  DeltaNet core, block 0's unit: " + ", ".join(f"{k} {v:.2f}" for k, v in dn.items() if k.startswith("unit0")))
    core = an.get("attention core")
    if core:
        lines.append("  attention core, block 0's unit: " + ", ".join(f"{k} {v:.2f}" for k, v in core.items() if k.startswith("unit0")))
        lines.append("  attention core, every unit block's arrival: " + " ".join(f"{v:.2f}" for v in core.get("unit_arrivals", [])))
    full = an["ring_full_us"]
    lines.append(f"  ring full (a producer waited for a free slot; layers, us per token): min {full['min']:.1f}, "
                 f"median {full['median']:.1f}, max {full['max']:.1f} over blocks; the lm_head's chunks "
                 f"{full.get('lm_head', 0.0):.1f} (mean block)")
    return lines


STEP_LAUNCHES = 32  # back-to-back launches step_time averages over (main's line)


def step_time(tier, steps=STEP_LAUNCHES, prompt_len=16, seed=0, batch=1) -> float:
    """µs a step: `steps` greedy launches back to back (each fed the last one's ids on the device,
    as the tg loop runs them) after a `prompt_len`-token prompt and one warm-up launch, timed by CUDA
    events. Any schedule: in the stream-only one a launch streams every weight and K/V row of its
    step and computes nothing, so the two schedules' difference is what the compute costs above the
    stream."""
    state = tier.new_state(batch, max_seq_len=prompt_len + steps + 2)
    ids = tier.prefill(_prompt(tier, prompt_len, seed, rows=batch), state).argmax(-1).to(tier.device)
    ids = tier.decode_argmax(ids, state)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        ids = tier.decode_argmax(ids, state)
    end.record()
    end.synchronize()
    tier.check(state)
    return start.elapsed_time(end) * 1000.0 / steps


def launch_gaps(tier, steps=16, prompt_len=16, seed=0, batch=1) -> dict | None:
    """Back-to-back greedy launches of a batch of `batch` rows (no host sync between them:
    `MegakernelTier.decode_steps_timed`), µs, means over `steps` - 1 pairs: period (start → next
    start), span (start → argmax), gap (argmax → next start), restart (argmax → next embedding row
    normed), first phase. None in the stream-only schedule (it stamps no phases)."""
    if tier.schedule == "stream-only":
        return None
    state = tier.new_state(batch, max_seq_len=prompt_len + steps + 1)
    ids = tier.prefill(_prompt(tier, prompt_len, seed, rows=batch), state).argmax(-1).to(tier.device)
    _, t = tier.decode_steps_timed(ids, state, steps)
    pairs = range(steps - 1)
    return {"batch": batch,
            "period_us": statistics.mean((t[i + 1].start - t[i].start) / 1000.0 for i in pairs),
            "span_us": statistics.mean((x.argmax_done - x.start) / 1000.0 for x in t[1:]),
            "gap_us": statistics.mean((t[i + 1].start - t[i].argmax_done) / 1000.0 for i in pairs),
            "gap_min_us": min((t[i + 1].start - t[i].argmax_done) / 1000.0 for i in pairs),
            "restart_us": statistics.mean((t[i + 1].embed_done - t[i].argmax_done) / 1000.0 for i in pairs),
            "first_phase_us": statistics.mean((t[i + 1].phase_exits[0] - t[i + 1].embed_done) / 1000.0 for i in pairs)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m megakernel anatomy", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--context", type=int, default=64, help="prompt tokens before the timed steps (default 64)")
    ap.add_argument("--steps", type=int, default=8, help="timed steps the means take (default 8)")
    ap.add_argument("--batch", type=int, default=1, help="sequences per launch, each with its own --context prompt (default 1)")
    ap.add_argument("--grid", type=int, default=None, help="blocks per launch (default: one per SM)")
    ap.add_argument("--schedule", default=None, help="ring, register or stream-only (default: the tier's)")
    ap.add_argument("--config", default=None, help="a built-in config the megakernel builds (default: the 0.8B)")
    args = ap.parse_args(argv)
    from reference import TierInputError, TierUnavailable

    from .sanitize import tool_model
    from .tier import MegakernelTier

    try:
        tier = MegakernelTier(*tool_model(args.config), device="cuda")
        if args.grid is not None:
            tier.grid = args.grid
        if args.schedule is not None:
            tier.schedule = args.schedule
        an = phase_anatomy(tier, prompt_len=args.context, steps=args.steps, batch=args.batch)
        step_us = step_time(tier, prompt_len=args.context, batch=args.batch)
        gaps = launch_gaps(tier, batch=args.batch)
    except (TierInputError, TierUnavailable) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{torch.cuda.get_device_name()} | schedule {tier.schedule} | grid {tier.grid} | ring {tier.ring_slots_for(args.batch)} "
          f"slots | batch {args.batch} | {args.context}-token context, means over {args.steps} steps; us from block 0's barrier exit")
    print("\n".join(anatomy_lines(an)))
    print(f"  a step, {STEP_LAUNCHES} back-to-back launches at this context (CUDA events): {step_us:.1f} us ({1e6 / step_us:,.1f} steps/s)")
    if gaps:
        print(f"  back-to-back launches: period {gaps['period_us']:.1f} us, span {gaps['span_us']:.1f} us, gap {gaps['gap_us']:+.2f} us (min "
              f"{gaps['gap_min_us']:+.2f}), restart {gaps['restart_us']:.2f} us, first phase {gaps['first_phase_us']:.2f} us")
    return 0
