"""Developer check on the GPU, in one process (see dev_run.sh):

1. phase by phase: the kernel stopped after each phase of layer 0 (DeltaNet) and layer 3
   (attention) with NaN-poisoned scratch, every buffer it wrote diffed against the bf16
   reference's own intermediates of the same step;
2. layer by layer: the trace of one decode step against the fp32 reference (and HF bf16);
3. speed: tg128 of every schedule variant (the ring paced or not, TMA or cp.async, the register
   schedules), per-layer times, barrier skew and exit latency, and the gap between launches;
4. the default schedule's phases taken apart (megakernel.bench.phase_anatomy).
Prints a compact table last and writes JSON to $OUT (or ./dev_check.json).

    python -m megakernel.dev_check [--skip-hf] [--skip-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types

import torch

from reference import HybridModel, ModelConfig, ReferenceTier, perturb_norms, random_weights
from reference import ops as reference_ops


def rel(a, b):
    a, b = a.float().flatten().cpu(), b.float().flatten().cpu()
    if not torch.isfinite(a).all():
        return float("nan")
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


class RecordingOps(types.SimpleNamespace):
    """reference.ops with every call's output appended to `log` as (name, output)."""

    def __init__(self, log):
        super().__init__()
        for name in dir(reference_ops):
            f = getattr(reference_ops, name)
            if callable(f) and not name.startswith("_") and getattr(f, "__module__", "").startswith("reference"):
                setattr(self, name, self._wrap(name, f, log))

    @staticmethod
    def _wrap(name, f, log):
        def g(**kw):
            out = f(**kw)
            log.append((name, out))
            return out
        return g


def reference_intermediates(tier, state, token):
    """One bf16 reference decode step from a copy of `state`; → {layer: [(op, output), ...]}."""
    log = []
    ms = tier.to_model_state(tier.clone_state(state))
    model = HybridModel(tier.config, tier.weights, RecordingOps(log))
    marks = []
    with torch.inference_mode():
        model.forward(token.view(1, 1).to(tier.device), ms, None, layer_hook=lambda n: marks.append((n, len(log))))
    bounds = dict(marks)
    per_layer = {}
    for i in range(tier.config.num_layers):
        lo = bounds["embed" if i == 0 else f"layers.{i - 1}"]
        per_layer[i] = log[lo:bounds[f"layers.{i}"]]
    return per_layer, ms


def phase_check(tier, state, token):
    ref, ms_after = reference_intermediates(tier, state, token)
    pos = state.seq_len
    rows = []

    def run(stop):
        st = tier.clone_state(state)
        tier.poison(st)
        out = torch.full((1,), -1, dtype=torch.int64, device=tier.device)
        tier._launch(st, token.to(tier.device).view(1), out, stop_after=stop)
        torch.cuda.synchronize()
        return st

    s = tier.scratch
    # ---- layer 0: DeltaNet ----
    L0 = ref[0]
    ops0 = [n for n, _ in L0]
    lin = [o for n, o in L0 if n == "linear"]
    st = run(0)
    rows.append(("L0 P0 qkv -> conv ring", rel(st.conv_ring[0, pos % 4], lin[0].flatten())))
    rows.append(("L0 P0 z", rel(s["zab"][:2048], lin[1].flatten())))
    rows.append(("L0 P0 b", rel(s["zab"][2048:2064], lin[2].flatten())))
    rows.append(("L0 P0 a", rel(s["zab"][2064:2080], lin[3].flatten())))
    st = run(1)
    o_ref = dict(L0)["gated_delta_rule_recurrent"][0].to(torch.bfloat16)
    rows.append(("L0 P1 core out", rel(s["obuf"], o_ref.flatten())))
    rows.append(("L0 P1 state", rel(st.dn_state[0], ms_after.recurrent[0, 0].transpose(-1, -2))))
    st = run(2)
    res_mid = [o for n, o in L0 if n == "add_rms_norm"][1][1]
    rows.append(("L0 P2 residual after mixer", rel(s["hidden"], res_mid.flatten())))
    st = run(3)
    rows.append(("L0 P3 act", rel(s["act"], dict(L0)["swiglu"].flatten())))
    st = run(4)
    out0 = (res_mid + lin[-1]).to(torch.bfloat16)
    rows.append(("L0 P4 layer output", rel(s["hidden"], out0.flatten())))
    # ---- layer 3: attention ----
    L3 = ref[3]
    lin3 = [o for n, o in L3 if n == "linear"]
    st = run(15)
    rows.append(("L3 P0 q|gate", rel(s["qkv"][:4096], lin3[0].flatten())))
    rows.append(("L3 P0 k", rel(s["qkv"][4096:4608], lin3[1].flatten())))
    rows.append(("L3 P0 v", rel(s["qkv"][4608:5120], lin3[2].flatten())))
    st = run(16)
    rows.append(("L3 P1 gated attention", rel(s["attn"], dict(L3)["gated_attention"].flatten())))
    kref = dict(L3)["qk_norm_rope"][1]  # [1, 1, 2, 256]
    rows.append(("L3 P1 k cache row", rel(st.k_cache[0, :, pos], kref[0, 0])))
    rows.append(("L3 P1 v cache row", rel(st.v_cache[0, :, pos], lin3[2].view(2, 256))))
    st = run(17)
    res3 = [o for n, o in L3 if n == "add_rms_norm"][1][1]
    rows.append(("L3 P2 residual after mixer", rel(s["hidden"], res3.flatten())))
    st = run(19)
    rows.append(("L3 P4 layer output", rel(s["hidden"], (res3 + lin3[-1]).to(torch.bfloat16).flatten())))
    del ops0
    return rows


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--skip-hf", action="store_true")
    p.add_argument("--skip-bench", action="store_true")
    p.add_argument("--prompt", type=int, default=16)
    args = p.parse_args(argv)
    out_dir = os.environ.get("OUT", ".")
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
               "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    t0 = time.time()
    config = ModelConfig.qwen3_5_0_8b()
    weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
    print(f"[{time.time() - t0:.0f}s] weights ready", flush=True)
    from megakernel.tier import MegakernelTier

    t1 = time.time()
    mk = MegakernelTier(config, weights, device="cuda")
    results["build_and_load_s"] = time.time() - t1
    results["grid"], results["smem_bytes"] = mk.grid, mk.smem_bytes
    results["ring_slots"], results["ring_smem_bytes"] = mk.ring_slots, mk.ring_smem_bytes
    print(f"[{time.time() - t0:.0f}s] megakernel ready: grid {mk.grid}, smem {mk.smem_bytes} B, ring {mk.ring_slots} "
          f"slots ({mk.ring_smem_bytes} B)", flush=True)

    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (1, args.prompt), generator=gen)
    token = torch.randint(0, config.vocab_size, (1,), generator=gen)

    # 1. phase by phase
    st = mk.new_state(max_seq_len=256)
    mk.prefill(prompt, st)
    rows = phase_check(mk, st, token)
    results["phases"] = rows
    print("\nphase check (kernel stopped after the phase vs bf16 reference intermediates):", flush=True)
    for name, e in rows:
        print(f"  {name:32s} {e:.3e}{'  <-- BAD' if not e < 0.05 else ''}", flush=True)

    # 2. layer by layer, one decode step, against the fp32 reference (and HF bf16)
    def run_tier(tier):
        s = tier.new_state(max_seq_len=256)
        tier.prefill(prompt, s)
        trace = {}
        tier.decode(token, s, trace=trace)
        return trace

    traces = {"megakernel": run_tier(mk)}
    ref32 = ReferenceTier(config, weights, device="cuda", dtype=torch.float32)
    traces["fp32"] = run_tier(ref32)
    del ref32
    ref16 = ReferenceTier(config, weights, device="cuda", dtype=torch.bfloat16)
    traces["ref_bf16"] = run_tier(ref16)
    del ref16
    if not args.skip_hf:
        try:
            from compare.hf_tier import HFTier

            hf = HFTier(config, weights, device="cuda", dtype=torch.bfloat16)
            traces["hf_bf16"] = run_tier(hf)
            del hf
        except Exception as e:  # noqa: BLE001
            print(f"HF tier unavailable: {e}", flush=True)
    torch.cuda.empty_cache()
    keys = ["embed"] + [f"layers.{i}" for i in range(24)] + ["norm", "logits"]
    layer_rows = []
    for k in keys:
        row = {"name": k}
        for t in traces:
            if t != "fp32":
                row[t] = rel(traces[t][k], traces["fp32"][k])
        layer_rows.append(row)
    results["layers"] = layer_rows
    print("\nrelative L2 error vs the fp32 reference, one decode step:", flush=True)
    cols = [t for t in traces if t != "fp32"]
    print("  " + "part".ljust(10) + "".join(c.rjust(12) for c in cols), flush=True)
    for row in layer_rows:
        print("  " + row["name"].ljust(10) + "".join(f"{row[c]:12.3e}" for c in cols), flush=True)
    mk_l = traces["megakernel"]["logits"]
    results["argmax_equal_fp32"] = bool(mk_l.argmax() == traces["fp32"]["logits"].argmax())

    # determinism + argmax path
    s1 = mk.new_state(max_seq_len=64)
    mk.prefill(prompt, s1)
    s1_base = mk.clone_state(s1)
    s2, s3 = mk.clone_state(s1), mk.clone_state(s1)
    l1 = mk.decode(token, s1)
    l2 = mk.decode(token, s2)
    nid = mk.decode_argmax(token.to(mk.device), s3)
    results["bitwise_repeat"] = bool(torch.equal(l1, l2))
    results["argmax_matches"] = int(nid) == int(l1.argmax())
    print(f"\nbitwise repeat: {results['bitwise_repeat']}, fused argmax == argmax(logits): {results['argmax_matches']}", flush=True)

    # 3. schedule variants: same bits, different speed
    from megakernel.bench import launch_gaps, layer_times, tg
    from megakernel.tier import (MKF_DN_FLAGS, MKF_EARLY, MKF_EVICT_FIRST, MKF_GEN_BAR, MKF_LEAN_MERGE, MKF_LIGHT_BAR,
                                 MKF_OUT_MERGE, MKF_RING, MKF_RING_TMA)

    default = (mk.flags, mk.pf_dist, mk.ring_slots, mk.ring_inflight)
    EL, RL = MKF_EARLY | MKF_LIGHT_BAR, MKF_RING | MKF_LIGHT_BAR
    S = mk.ring_slots
    # v6: the ring (slots: its size; in flight: the most chunks the producer keeps in flight, 0 = slots)
    # v9: the weights' L2 lines evict-first (the default), unpaced or paced
    EF = MKF_EVICT_FIRST
    # v11: the split-K count without fences, the out-proj merging 2-8 partials (the default)
    SK = MKF_LEAN_MERGE | MKF_OUT_MERGE
    ring = [("v11 ring, split-K merged by the out-proj", RL | EF | SK, 0, S, 0)]
    ring += [(f"v9 ring evict-first, {m or S} in flight", RL | EF, 0, S, m) for m in (0, 2)]
    ring += [(f"v6 ring cp.async, {m or S} in flight", RL, 0, S, m) for m in (2, 0)]
    ring += [(f"v6 ring TMA, {m} in flight", RL | MKF_RING_TMA, 0, S, m) for m in (1, 0)]
    variants = (ring if S else []) + [
        ("early+light (v4)", EL, 0, S, 0),
        ("plain (v1 schedule)", 0, 0, S, 0),
        # v5: barrier variants (megakernel/NOTES.md, "v5")
        ("v5 gen", EL | MKF_GEN_BAR, 0, S, 0),
        ("v5 dnflags", EL | MKF_DN_FLAGS, 0, S, 0),
    ]
    if args.skip_bench:
        variants = variants[:2]
    ref_logits = None
    results["variants"] = {}
    print("\nvariant                    same bits   tok/s  ms/tok  %copyBW | DeltaNet phases us (in mix out gu down) | attention phases | lm_head", flush=True)
    for name, flags, pf, slots, inflight in variants:
        mk.flags, mk.pf_dist, mk.ring_slots, mk.ring_inflight = flags, pf, slots, inflight
        sv = mk.clone_state(s1_base)
        lv = mk.decode(token, sv)
        same = ref_logits is None or torch.equal(lv, ref_logits)
        ref_logits = lv if ref_logits is None else ref_logits
        r = tg(mk, reps=5) if not args.skip_bench else {"tok_s_median": 0, "ms_per_token": 0, "bw_fraction": 0}
        lt, phases = layer_times(mk, steps=3)
        gaps = launch_gaps(mk)
        dn = [sum(phases[5 * ly + j] for ly in range(24) if ly % 4 != 3) / 18 for j in range(5)]
        fa = [sum(phases[5 * ly + j] for ly in range(24) if ly % 4 == 3) / 6 for j in range(5)]
        bm = mk.last_barrier_means
        results["variants"][name] = {"flags": flags, "pf_dist": pf, "ring_slots": slots, "ring_inflight": inflight, "same_bits": same, **r, "layer_times_us": lt,
                                     "phase_times_us": phases, "barrier": bm, "launch": gaps}
        print(f"   launch: kernel span {gaps['span_us']:.1f} us, gap to the next launch {gaps['gap_us']:.1f} us "
              f"(min {gaps['gap_min_us']:.1f})", flush=True)
        print(f"   barrier: mean arrival skew {sum(bm['skew_us']) / 120:.2f} us, mean exit latency after the last "
              f"arrival {sum(bm['latency_us']) / 120:.2f} us (block 0's view)", flush=True)
        print(f"{name:26s} {str(same):9s} {r['tok_s_median']:6.0f} {r['ms_per_token']:7.3f} {100 * r['bw_fraction']:6.1f}% | "
              + " ".join(f"{x:4.1f}" for x in dn) + " | " + " ".join(f"{x:4.1f}" for x in fa) + f" | {lt['lm_head']:.1f}",
              flush=True)
    mk.flags, mk.pf_dist, mk.ring_slots, mk.ring_inflight = default
    # the weight stream alone: the ceiling the ring's producer puts on the default schedule
    if not args.skip_bench:
        from megakernel.bench import WEIGHT_BYTES, stream_only
        results["stream_only"] = stream_only(mk)
        for name, r in results["stream_only"].items():
            print(f"weight stream alone ({name}, MKF_STREAM_ONLY): tg128 {r['tok_s_median']:.0f} tok/s, "
                  f"{r['ms_per_token']:.3f} ms/token, {WEIGHT_BYTES / r['ms_per_token'] / 1e9:.2f} TB/s", flush=True)
    # 4. the default schedule's phases taken apart: the blocks' work and the barrier's exit
    from megakernel.bench import anatomy_lines, phase_anatomy
    anat = phase_anatomy(mk, prompt_len=64)
    results["phase_anatomy_us"] = anat
    print("\nphase anatomy (default schedule, 64-token context; us from block 0's barrier exit to the blocks' "
          "arrivals, then to the next exit):", flush=True)
    print("\n".join(anatomy_lines(anat)), flush=True)
    results["all_variants_same_bits"] = all(v["same_bits"] for v in results["variants"].values())
    # the summary the default is chosen from: fastest first (tg128 median of 5 repetitions)
    print("\nschedule variants, fastest first (tg128, median of 5; copy BW 2.87 TB/s):", flush=True)
    print(f"  {'variant':26s} {'flags':>5s} {'tok/s':>7s} {'min':>6s} {'max':>6s} {'ms/tok':>7s} {'%copyBW':>8s} "
          f"{'bar skew':>8s} {'bar exit':>8s}  same bits", flush=True)
    rank = sorted(results["variants"].items(), key=lambda kv: -kv[1]["tok_s_median"])
    for name, v in rank:
        bm = v["barrier"]
        print(f"  {name:26s} {v['flags']:5d} {v['tok_s_median']:7.0f} {v.get('tok_s_min', 0):6.0f} "
              f"{v.get('tok_s_max', 0):6.0f} {v['ms_per_token']:7.3f} {100 * v['bw_fraction']:7.1f}% "
              f"{sum(bm['skew_us']) / 120:7.2f}us {sum(bm['latency_us']) / 120:7.2f}us  {v['same_bits']}", flush=True)
    results["fastest_variant"] = rank[0][0]
    with open(os.path.join(out_dir, "dev_check.json"), "w") as f:
        json.dump(results, f, indent=1, default=float)
    print(f"[{time.time() - t0:.0f}s] done", flush=True)
    bad = [n for n, e in rows if not e < 0.05]
    return 1 if bad or not results["all_variants_same_bits"] else 0


if __name__ == "__main__":
    sys.exit(main())
