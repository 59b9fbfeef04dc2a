"""Issue 20 part 5, predicted on the CPU (session 15): which bf16 roundings inside a decode step
keep the megakernel above 0.7x of transformers' per-layer error, and which fp32 choice gets every
layer under it. The reference tier at bf16 (transformers' rounding points) with its ops swapped:

  v2   the residual stream and the normed inputs fp32 (session 14's experiment: 0.52-0.82x)
  v3   v2 + every projection's output fp32 (q/k/v/z/b/a, the attention and DeltaNet outputs'
       out-projections, gate/up, down: fp32 sums left unrounded); the weights, the K/V cache and
       the conv inputs stay bf16 (the state's storage)
  v3-lm  v3 + the lm_head's logits unrounded
  v2+res, v2+in, v2+mlp, v2+res+mlp   v2 with only some projections' outputs fp32: the
       out-projections and down (what the residual adds), the in-projections, gate / up

One decode step after an N-token prompt (the prompt's prefill in the same mode), plain and hazard
weights (reference.hazard_weights); every traced part's relative error against the fp32 reference,
as a ratio to the all-bf16 model's. Run from the repo root: python <this file> N
"""
import sys

import torch

import reference.ops as ops
from reference import ModelConfig, ReferenceTier, hazard_weights, perturb_norms, random_weights


def trace_of(tier, prompt, token):
    st = tier.new_state(max_seq_len=prompt.shape[1] + 4)
    tier.prefill(prompt, st)
    tr = {}
    tier.decode(token, st, trace=tr)
    return tr


def rel(a, b):
    a, b = a.float(), b.float()
    return float((a - b).norm() / b.norm())


orig = {name: getattr(ops, name) for name in ("add_rms_norm", "linear", "lm_head")}


def add_rms_norm_fp32_in(*, x, residual, weight, eps):
    r = x.float() if residual is None else residual.float() + x.float()
    return ops.rms_norm(x=r, weight=weight, eps=eps), r


def linear_fp32_in(round_out):
    def linear(*, x, weight):
        if x.dtype == torch.float32 and weight.dtype == torch.bfloat16:
            y = x @ weight.float().t()
            return y.to(torch.bfloat16) if round_out else y
        return orig["linear"](x=x, weight=weight)
    return linear


def lm_head_fp32_in(round_out):
    def lm_head(*, x, weight):
        if x.dtype != torch.float32:
            return orig["lm_head"](x=x, weight=weight)
        y = x.float() @ weight.float().t()
        return y.to(torch.bfloat16).float() if round_out else y
    return lm_head


def linear_fp32_some(kinds):
    """v2's projections, with the outputs of `kinds` left fp32: "res" (the out-projections and the
    down projection: what is added to the residual), "mlp" (gate / up), "in" (the in-projections)."""
    def kind(weight):
        if weight.shape[0] == config.hidden_size:
            return "res"
        return "mlp" if weight.shape[0] == config.intermediate_size else "in"

    def linear(*, x, weight):
        if x.dtype == torch.float32 and weight.dtype == torch.bfloat16:
            y = x @ weight.float().t()
            return y if kind(weight) in kinds else y.to(torch.bfloat16)
        return orig["linear"](x=x, weight=weight)
    return linear


VARIANTS = {
    "v2": dict(add_rms_norm=add_rms_norm_fp32_in, linear=linear_fp32_in(True), lm_head=lm_head_fp32_in(True)),
    "v3": dict(add_rms_norm=add_rms_norm_fp32_in, linear=linear_fp32_in(False), lm_head=lm_head_fp32_in(True)),
    "v3-lm": dict(add_rms_norm=add_rms_norm_fp32_in, linear=linear_fp32_in(False), lm_head=lm_head_fp32_in(False)),
    "v2+res": dict(add_rms_norm=add_rms_norm_fp32_in, linear=linear_fp32_some({"res"}), lm_head=lm_head_fp32_in(True)),
    "v2+in": dict(add_rms_norm=add_rms_norm_fp32_in, linear=linear_fp32_some({"in"}), lm_head=lm_head_fp32_in(True)),
    "v2+mlp": dict(add_rms_norm=add_rms_norm_fp32_in, linear=linear_fp32_some({"mlp"}), lm_head=lm_head_fp32_in(True)),
    "v2+res+mlp": dict(add_rms_norm=add_rms_norm_fp32_in, linear=linear_fp32_some({"res", "mlp"}), lm_head=lm_head_fp32_in(True)),
}

config = ModelConfig.qwen3_5_0_8b()
w = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
gen = torch.Generator().manual_seed(5)
prompt = torch.randint(0, config.vocab_size, (1, n), generator=gen)
token = torch.randint(0, config.vocab_size, (1,), generator=gen)
for case, weights in (("plain", w), ("hazard", hazard_weights(w))):
    oracle = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.float32), prompt, token)
    base = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16), prompt, token)
    keys = [k for k in oracle if k != "embed"]
    for vname, swap in VARIANTS.items():
        for k, f in swap.items():
            setattr(ops, k, f)
        try:
            got = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16), prompt, token)
        finally:
            for k, f in orig.items():
                setattr(ops, k, f)
        ratios = {k: rel(got[k], oracle[k]) / rel(base[k], oracle[k]) for k in keys}
        layers = [v for k, v in ratios.items() if k.startswith("layers.")]
        print(f"{vname} {case}, prompt {n}: worst {max(ratios.values()):.2f}x, layers {min(layers):.2f}-{max(layers):.2f}x, "
              f"logits {ratios['logits']:.2f}x;", " ".join(f"{k.replace('layers.', 'L')}:{v:.2f}" for k, v in ratios.items()),
              flush=True)
