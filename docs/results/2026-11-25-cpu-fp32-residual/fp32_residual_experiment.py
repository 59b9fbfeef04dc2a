"""Issue 20 part 5, predicted on the CPU: per-layer error of a bf16 model whose residual stream
is fp32 (normed inputs, weights, sublayer outputs bf16), against the same model all-bf16, both vs
the fp32 reference. One decode step after a prompt (the prompt's prefill in the same mode)."""
import sys, torch
import reference.ops as ops
from reference import ReferenceTier, ModelConfig, random_weights, perturb_norms, hazard_weights

def trace_of(tier, prompt, token):
    st = tier.new_state(max_seq_len=prompt.shape[1] + 4)
    tier.prefill(prompt, st)
    tr = {}
    tier.decode(token, st, trace=tr)
    return tr

def rel(a, b):
    a, b = a.float(), b.float()
    return float((a - b).norm() / b.norm())

orig = ops.add_rms_norm
def add_rms_norm_fp32(*, x, residual, weight, eps):
    r = x.float() if residual is None else residual.float() + x.float()
    return ops.rms_norm(x=r, weight=weight, eps=eps).to(x.dtype), r

torch.manual_seed(0)
config = ModelConfig.qwen3_5_0_8b()
w = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
cases = [("plain", w), ("hazard", hazard_weights(w))]
n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
gen = torch.Generator().manual_seed(5)
prompt = torch.randint(0, config.vocab_size, (1, n), generator=gen)
token = torch.randint(0, config.vocab_size, (1,), generator=gen)
for name, weights in cases:
    oracle = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.float32), prompt, token)
    base = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16), prompt, token)
    ops.add_rms_norm = add_rms_norm_fp32
    try:
        f32r = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16), prompt, token)
    finally:
        ops.add_rms_norm = orig
    keys = [k for k in oracle if k != "embed"]
    worst = max(rel(f32r[k], oracle[k]) / rel(base[k], oracle[k]) for k in keys)
    print(f"{name}, prompt {n}: worst ratio {worst:.2f}x;", " ".join(f"{k.replace('layers.', 'L')}:{rel(f32r[k], oracle[k]) / rel(base[k], oracle[k]):.2f}"
                                                   for k in keys))

# variant 2: the residual and the normed inputs in fp32 (every projection: fp32 x, bf16 weights,
# fp32 sums, output rounded to bf16)
orig_linear = ops.linear
def add_rms_norm_fp32_in(*, x, residual, weight, eps):
    r = x.float() if residual is None else residual.float() + x.float()
    return ops.rms_norm(x=r, weight=weight, eps=eps), r
def linear_fp32_in(*, x, weight):
    if x.dtype == torch.float32 and weight.dtype == torch.bfloat16:
        return (x @ weight.float().t()).to(torch.bfloat16)
    return orig_linear(x=x, weight=weight)
orig_lm = ops.lm_head
def lm_head_fp32_in(*, x, weight):
    return (x.float() @ weight.float().t()).to(torch.bfloat16).float() if x.dtype == torch.float32 else orig_lm(x=x, weight=weight)
for name, weights in cases:
    oracle = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.float32), prompt, token)
    base = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16), prompt, token)
    ops.add_rms_norm, ops.linear, ops.lm_head = add_rms_norm_fp32_in, linear_fp32_in, lm_head_fp32_in
    try:
        v2 = trace_of(ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16), prompt, token)
    finally:
        ops.add_rms_norm, ops.linear, ops.lm_head = orig, orig_linear, orig_lm
    keys = [k for k in oracle if k != "embed"]
    worst = max(rel(v2[k], oracle[k]) / rel(base[k], oracle[k]) for k in keys)
    print(f"v2 {name}, prompt {n}: worst ratio {worst:.2f}x;", " ".join(f"{k.replace('layers.', 'L')}:{rel(v2[k], oracle[k]) / rel(base[k], oracle[k]):.2f}"
                                                   for k in keys))
