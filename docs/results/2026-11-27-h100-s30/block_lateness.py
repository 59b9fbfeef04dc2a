"""Session 30 (issue 20): which blocks arrive last at a decode step's grid barriers, and whether the same ones do
every time. From the kernel's own clock (`decode_steps_timed`: every block's arrival at every barrier), batch 1,
random weights, a 16-token prompt, STEPS steps back to back:
  - per kind of phase: the mean of (last arrival − median), (2nd last − median) and (last − 2nd last), µs: what the
    step would gain, at most, if its last block arrived with the second;
  - per block: its mean lateness (arrival − the phase's median) over all phases and by kind, how often it is the last;
    the 12 latest blocks, and blocks 0-3 and the last 4 (the attention units' and the blocks without a DeltaNet unit).
    PYTHONPATH=<tree> python block_lateness.py OUT.json [STEPS] [CONTEXT]
"""
import json
import sys

import torch

from compare import load_tier
from reference import ModelConfig, perturb_norms, random_weights

PHASE_NAMES = ("in-proj", "core", "out-proj", "gate/up", "down")


def main(out, steps=32, context=16):
    config = ModelConfig.qwen3_5_0_8b()
    tier = load_tier("megakernel", config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)), device="cuda")
    k, G = tier.k, tier.grid
    state = tier.new_state(1, max_seq_len=context + steps + 4)
    gen = torch.Generator().manual_seed(0)
    ids = tier.prefill(torch.randint(0, config.vocab_size, (1, context), generator=gen), state).argmax(-1).to(tier.device)
    ids = tier.decode_argmax(ids, state)
    _, times = tier.decode_steps_timed(ids, state, steps)
    kinds = [("attention " if k.LAYER_TYPES[q // k.PHASES_PER_LAYER] == "full_attention" else "DeltaNet ")
             + PHASE_NAMES[q % k.PHASES_PER_LAYER] for q in range(k.NBARRIERS)]
    late = torch.zeros(G, dtype=torch.float64)
    late_kind = {kd: torch.zeros(G, dtype=torch.float64) for kd in dict.fromkeys(kinds)}
    n_kind = {kd: 0 for kd in late_kind}
    last_count = torch.zeros(G, dtype=torch.float64)
    gaps = {kd: [0.0, 0.0, 0.0] for kd in late_kind}
    for st in times:
        for q in range(k.NBARRIERS):
            arr = st.arrivals[:, q].double() / 1000.0  # (int64 ns since session 36; as it ran: float64)
            med = float(arr.median())
            srt = torch.sort(arr).values
            d = arr - med
            late += d
            late_kind[kinds[q]] += d
            n_kind[kinds[q]] += 1
            last_count[int(arr.argmax())] += 1
            g = gaps[kinds[q]]
            g[0] += float(srt[-1]) - med
            g[1] += float(srt[-2]) - med
            g[2] += float(srt[-1] - srt[-2])
    nph = steps * k.NBARRIERS
    late /= nph
    last_count /= nph
    for kd in late_kind:
        late_kind[kd] /= n_kind[kd]
        gaps[kd] = [v / n_kind[kd] for v in gaps[kd]]
    per_step_gain = sum(gaps[kinds[q]][2] for q in range(k.NBARRIERS))
    lines = [f"{torch.cuda.get_device_name()} | batch 1 | {context}-token context | {steps} steps | grid {G}",
             f"{'phase':22s} {'last-med':>8s} {'2nd-med':>8s} {'last-2nd':>8s}  (µs, means)"]
    for kd, g in gaps.items():
        lines.append(f"{kd:22s} {g[0]:8.2f} {g[1]:8.2f} {g[2]:8.2f}")
    lines.append(f"a step's sum of (last - 2nd last) over its {k.NBARRIERS} barriers: {per_step_gain:.1f} µs; of (last - median): "
                 f"{sum(gaps[kinds[q]][0] for q in range(k.NBARRIERS)):.1f} µs")
    order = torch.argsort(late, descending=True).tolist()
    show = order[:12] + [b for b in (0, 1, 2, 3, G - 4, G - 3, G - 2, G - 1) if b not in order[:12]]
    head = " ".join(f"{kd.split()[0][:3]}.{kd.split()[1][:6]:>6s}" for kd in late_kind)
    lines.append(f"block  mean-late  last%  | by kind: {head}")
    for b in show:
        lines.append(f"{b:5d} {float(late[b]):10.3f} {100 * float(last_count[b]):6.1f}  | "
                     + " ".join(f"{float(late_kind[kd][b]):10.3f}" for kd in late_kind))
    lines.append(f"mean lateness over blocks: min {float(late.min()):.3f}, median {float(late.median()):.3f}, max {float(late.max()):.3f} µs")
    print("\n".join(lines))
    json.dump({"device": torch.cuda.get_device_name(), "steps": steps, "context": context, "grid": G, "gaps": gaps,
               "late": late.tolist(), "last_share": last_count.tolist(),
               "late_by_kind": {kd: v.tolist() for kd, v in late_kind.items()}}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
