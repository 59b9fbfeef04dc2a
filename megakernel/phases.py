"""Phase by phase: the decode kernel stopped after each phase of layer 0 (DeltaNet) and the first
attention layer (layer 3 of the family), with its workspace and the unwritten cache rows NaN-poisoned, and every buffer the
phase wrote diffed against the bf16 reference's own intermediates of the same step:

    python -m megakernel phases [--context 16] [--bound 0.05] [--config NAME]

Prints one line per buffer (relative L2 error) and exits 1 when one is above the bound or not
finite. The GPU tests run it too (tests/test_megakernel.py).
"""

from __future__ import annotations

import argparse
import sys
import types

import torch

from reference import HybridModel
from reference import ops as reference_ops


def rel(a, b) -> float:
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
    """One bf16 reference decode step from a copy of `state` → ({layer: [(op, output), ...]},
    the reference state after the step)."""
    log, marks = [], []
    ms = tier.to_model_state(tier.clone_state(state))
    model = HybridModel(tier.config, tier.weights, RecordingOps(log))
    with torch.inference_mode():
        model.forward(token.view(1, 1).to(tier.device), ms, None, layer_hook=lambda n: marks.append((n, len(log))))
    bounds = dict(marks)
    per_layer = {}
    for i in range(tier.config.num_layers):
        lo = bounds["embed" if i == 0 else f"layers.{i - 1}"]
        per_layer[i] = log[lo:bounds[f"layers.{i}"]]
    return per_layer, ms


def phase_check(tier, state, token) -> list[tuple[str, float]]:
    """→ [(what, relative error)] for the phases of layer 0 (DeltaNet) and the first attention layer (layer 3
    of the family) (the state is not changed)."""
    ref, ms_after = reference_intermediates(tier, state, token)
    k, pos = tier.k, state.seq_len
    area = tier.workspace_area
    per_layer = k.PHASES_PER_LAYER
    rows = []

    def run(layer, phase):
        st = tier.clone_state(state)
        tier.poison(st)
        out = torch.full((1,), -1, dtype=torch.int64, device=tier.device)
        tier._launch(st, token.to(tier.device).view(1), out, stop_after=layer * per_layer + phase)
        torch.cuda.synchronize()
        return st

    # ---- layer 0: DeltaNet ----
    L0 = ref[0]
    lin = [o for n, o in L0 if n == "linear"]
    st = run(0, 0)
    zab = area("zab")
    rows.append(("L0 in-proj qkv -> conv ring", rel(st.conv_ring[0, 0, pos % k.CONV_K], lin[0].flatten())))
    rows.append(("L0 in-proj z", rel(zab[:k.DN_VAL], lin[1].flatten())))
    rows.append(("L0 in-proj b", rel(zab[k.DN_VAL:k.DN_VAL + k.DN_HV], lin[2].flatten())))
    rows.append(("L0 in-proj a", rel(zab[k.DN_VAL + k.DN_HV:], lin[3].flatten())))
    st = run(0, 1)
    o_ref = dict(L0)["gated_delta_rule_recurrent"][0].to(torch.bfloat16)
    rows.append(("L0 core output", rel(area("obuf"), o_ref.flatten())))
    rows.append(("L0 core state", rel(st.dn_state[0, 0], ms_after.recurrent[0, 0].transpose(-1, -2))))
    run(0, 2)
    res_mid = [o for n, o in L0 if n == "add_rms_norm"][1][1]
    rows.append(("L0 out-proj residual", rel(area("hidden"), res_mid.flatten())))
    run(0, 3)
    rows.append(("L0 gate/up act", rel(area("act"), dict(L0)["swiglu"].flatten())))
    run(0, 4)
    rows.append(("L0 down: layer output", rel(area("hidden"), (res_mid + lin[-1]).to(torch.bfloat16).flatten())))
    # ---- the first attention layer (layer 3 of the family; any layer of another pattern) ----
    a = tier.config.layer_types.index("full_attention")
    L3 = ref[a]
    lin3 = [o for n, o in L3 if n == "linear"]
    run(a, 0)
    qkv = area("qkv")
    rows.append((f"L{a} in-proj q|gate", rel(qkv[:k.FA_WIN_K], lin3[0].flatten())))
    rows.append((f"L{a} in-proj k", rel(qkv[k.FA_WIN_K:k.FA_WIN_V], lin3[1].flatten())))
    rows.append((f"L{a} in-proj v", rel(qkv[k.FA_WIN_V:], lin3[2].flatten())))
    st = run(a, 1)
    if tier.attention_output_in_workspace(pos):
        rows.append((f"L{a} core gated attention", rel(area("attn"), dict(L3)["gated_attention"].flatten())))
    kref = dict(L3)["qk_norm_rope"][1]  # [1, 1, FA_HKV, FA_HD]
    rows.append((f"L{a} core k cache row", rel(st.k_cache[0, 0, :, pos], kref[0, 0])))
    rows.append((f"L{a} core v cache row", rel(st.v_cache[0, 0, :, pos], lin3[2].view(k.FA_HKV, k.FA_HD))))
    run(a, 2)
    res3 = [o for n, o in L3 if n == "add_rms_norm"][1][1]
    rows.append((f"L{a} out-proj residual", rel(area("hidden"), res3.flatten())))
    run(a, 4)
    rows.append((f"L{a} down: layer output", rel(area("hidden"), (res3 + lin3[-1]).to(torch.bfloat16).flatten())))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m megakernel phases", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--context", type=int, default=16, help="prompt tokens before the checked step (default 16)")
    ap.add_argument("--bound", type=float, default=0.05, help="largest relative error that passes (default 0.05)")
    ap.add_argument("--config", default=None, help="a built-in config the megakernel builds (default: the 0.8B)")
    args = ap.parse_args(argv)
    from reference import TierInputError, TierUnavailable

    from .sanitize import tool_model
    from .tier import MegakernelTier

    try:
        config, weights = tool_model(args.config)
        tier = MegakernelTier(config, weights, device="cuda")
    except (TierInputError, TierUnavailable) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, config.vocab_size, (1, args.context), generator=gen)
    token = torch.randint(0, config.vocab_size, (1,), generator=gen)
    state = tier.new_state(max_seq_len=args.context + 8)
    tier.prefill(prompt, state)
    rows = phase_check(tier, state, token)
    print(f"the kernel stopped after each phase vs the bf16 reference's intermediates ({args.context}-token context, "
          f"schedule {tier.schedule}):")
    for name, e in rows:
        print(f"  {name:30s} {e:.3e}{'' if e < args.bound else '  <-- above the bound'}")
    return 0 if all(e < args.bound for _, e in rows) else 1
