"""Issue 19 on the GPU, in one process: the megakernel's batch B = 1..8 against each row run alone
(the batch-1 kernel: within the bf16 bound, the greedy ids) and against the same rows in the
reverse order (bitwise: a row's sums do not depend on the other rows), then tg128 at B = 1, 2, 4, 8
for the megakernel and the triton tier (total tokens/s, decode_argmax fed back, no host sync).
Before them: the per-phase µs at B = 1, 2, 4, 8 and, at B = 1 and 8, timed steps launched back to
back (the period, the in-kernel time and the gap between launches).
    python tests/gpu/batch_check.py [--json PATH] [--steps 128]"""

from __future__ import annotations

import argparse
import json
import time

import torch

from compare.timing import decode_steps
from megakernel.anatomy import PHASE_NAMES, launch_gaps
from reference import ModelConfig, random_weights


def rows_vs_alone(tier, B, steps, max_seq=256):
    from reference.tolerances import rel_err
    g = torch.Generator().manual_seed(B)
    V = tier.config.vocab_size
    prompts = [torch.randint(0, V, (1, 16 + 3 * r), generator=g) for r in range(B)]
    batch, rev = tier.new_state(B, max_seq), tier.new_state(B, max_seq)
    for r, p in enumerate(prompts):
        tier.prefill(p, batch, row=r)
        tier.prefill(p, rev, row=B - 1 - r)
    alone = [tier.new_state(1, max_seq) for _ in range(B)]
    for s, p in zip(alone, prompts):
        tier.prefill(p, s)
    ids = torch.randint(0, V, (B,), generator=g).cuda()
    worst_abs, worst_rel, reverse_bits, alone_bits, same_tokens = 0.0, 0.0, True, True, True
    for _ in range(steps):
        lb = tier.decode(ids, batch)
        lr = tier.decode(ids.flip(0), rev).flip(0)
        la = torch.cat([tier.decode(ids[r:r + 1], alone[r]) for r in range(B)])
        if not torch.isfinite(lb).all():
            raise AssertionError(f"B={B}: non-finite logits")
        worst_abs = max(worst_abs, (lb - la).abs().max().item())
        worst_rel = max(worst_rel, max(rel_err(lb[r], la[r]) for r in range(B)))
        reverse_bits &= torch.equal(lb, lr)
        alone_bits &= torch.equal(lb, la)
        tb, ta = lb.argmax(-1), la.argmax(-1)
        same_tokens &= torch.equal(tb, ta)
        ids = tb  # (both fed the batch's ids: a near-tie flip cannot carry on)
    return {"B": B, "steps": steps, "positions": batch.positions, "max_abs_diff_vs_alone": worst_abs,
            "max_rel_err_vs_alone": worst_rel, "bitwise_equal_alone": alone_bits, "bitwise_equal_reversed": reverse_bits,
            "greedy_equal_alone": same_tokens}


def tg(tier, B, steps, prompt=16):
    state = tier.new_state(B, prompt + steps + 40)
    g = torch.Generator().manual_seed(0)
    tier.prefill(torch.randint(0, tier.config.vocab_size, (B, prompt), generator=g), state)
    ids = torch.zeros(B, dtype=torch.int64, device="cuda")
    for _ in range(8):  # warm-up (graphs, builds)
        ids = tier.decode_argmax(ids, state)
    tier.check(state)
    torch.cuda.synchronize()
    best = None
    for _ in range(3):
        s = tier.clone_state(state)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        decode_steps(tier, ids, s, steps)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        tier.check(s)
        best = dt if best is None else min(best, dt)
    return {"B": B, "steps": steps, "seconds": best, "total_tok_s": B * steps / best, "per_seq_tok_s": steps / best}


def phase_breakdown(tier, B, steps=8, prompt=16):
    """µs per kind of phase over a step (block 0's in-kernel clock, median of `steps` steps)."""
    state = tier.new_state(B, prompt + steps + 8)
    tier.prefill(torch.randint(0, tier.config.vocab_size, (B, prompt), generator=torch.Generator().manual_seed(1)), state)
    ids = torch.zeros(B, dtype=torch.int64, device="cuda")
    k = tier.k
    per = []
    for _ in range(steps):
        ids, st = tier.decode_step_times(ids, state)
        exits = [st.start] + st.phase_exits
        row = {}
        for q in range(k.NBARRIERS):
            layer, kind = divmod(q, k.PHASES_PER_LAYER)
            key = ("attn " if k.LAYER_TYPES[layer] == "full_attention" else "dn ") + PHASE_NAMES[kind]
            row[key] = row.get(key, 0.0) + (exits[q + 1] - exits[q]) / 1000.0
        row["lm_head"] = (st.argmax_done - st.phase_exits[-1]) / 1000.0
        row["total"] = (st.argmax_done - st.start) / 1000.0
        per.append(row)
    return {key: sorted(r[key] for r in per)[len(per) // 2] for key in per[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--steps", type=int, default=128)
    ap.add_argument("--check-steps", type=int, default=24)
    ap.add_argument("--tiers", default="megakernel,triton")
    ap.add_argument("--phases-only", action="store_true")
    ap.add_argument("--skip-checks", action="store_true", help="no batch-against-alone checks (timing a variant)")
    args = ap.parse_args()
    cfg = ModelConfig.qwen3_5_0_8b()
    w = random_weights(cfg, seed=0, dtype=torch.bfloat16)
    out = {"device": torch.cuda.get_device_name(), "checks": [], "tg": []}
    from megakernel.tier import MegakernelTier
    mk = MegakernelTier(cfg, w, device="cuda")
    print("ring slots by batch", mk.ring_slots_by_batch, flush=True)
    out["phases_us"] = {}
    for B in (1, 2, 4, 8):
        ph = phase_breakdown(mk, B)
        out["phases_us"][B] = ph
        print(f"phases B={B}: " + ", ".join(f"{k} {v:.0f}" for k, v in ph.items()), flush=True)
    out["back_to_back"] = []
    for B in (1, 8):  # where a tg step's time goes beyond the in-kernel time
        r = launch_gaps(mk, steps=32, batch=B)
        out["back_to_back"].append(r)
        print("back to back", r, flush=True)
    if args.phases_only:
        return
    for B in () if args.skip_checks else (1, 2, 3, 8):
        r = rows_vs_alone(mk, B, args.check_steps)
        print("check", r, flush=True)
        out["checks"].append(r)
    tiers = {"megakernel": mk}
    if "triton" in args.tiers:
        from triton_kernels.tier import TritonTier
        tiers["triton"] = TritonTier(cfg, w, device="cuda")
    for B in (1, 2, 4, 8):  # the tiers alternate at each batch size
        for name, tier in tiers.items():
            try:
                r = tg(tier, B, args.steps)
            except Exception as e:  # a tier that fails at a batch size is reported, the others go on
                r = {"B": B, "error": f"{type(e).__name__}: {e}"}
            r["tier"] = name
            print("tg", r, flush=True)
            out["tg"].append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
