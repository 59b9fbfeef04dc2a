"""Session 51 (CPU): how much of the hazard logits' error after the 3-token prompt any bf16 implementation must carry.
test_logits_within_bf16_bounds_on_hazard_weights[3] fails on the H100 (megakernel 4.98e-02, transformers' bf16
2.93e-02, bound 4.90e-02). The logits are the tied embedding times the final norm's output x, and 4 embedding channels
are 32x larger: each logit is dominated by x's 4 large channels times their 32x weights. This measures, on the CPU, with
the fp32 reference's own x: the logits' error from rounding x alone to bf16 (what every kernel that feeds the lm_head
bf16 x carries), from rounding the logits alone, and both; and transformers' / the bf16 reference's errors.
Usage: PYTHONPATH=. python3 hazard_cpu.py OUT_JSON"""
import json
import sys

import torch

sys.path.insert(0, "tests")
from helpers import bf16_baseline_tier, random_ids  # noqa: E402
from test_megakernel import one_step_trace  # noqa: E402

from reference import ModelConfig, ReferenceTier, hazard_weights, perturb_norms, random_weights  # noqa: E402
from reference.tolerances import rel_err  # noqa: E402


def main(out):
    torch.manual_seed(0)
    config = ModelConfig.qwen3_5_0_8b()
    weights = hazard_weights(perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)))
    prompt, token = random_ids(3, 5), random_ids(1, 6)[0]
    oracle = one_step_trace(ReferenceTier(config, weights, device="cpu", dtype=torch.float32), prompt, token)
    w = weights["model.embed_tokens.weight"].float()
    x = oracle["norm"].float().reshape(1, -1)
    ref = oracle["logits"].float().reshape(1, -1)
    res = {"oracle_logits_from_its_norm": rel_err(x @ w.T, ref)}
    res["x_bf16"] = rel_err(x.bfloat16().float() @ w.T, ref)
    res["logits_bf16"] = rel_err((x @ w.T).bfloat16().float(), ref)
    res["x_bf16_logits_bf16"] = rel_err((x.bfloat16().float() @ w.T).bfloat16().float(), ref)
    big = w.abs().amax(0).topk(4).indices
    res["large_channels"] = big.tolist()
    res["x_large_channels"] = x[0, big].tolist()
    res["x_large_channels_bf16_rel_rounding"] = ((x[0, big].bfloat16().float() - x[0, big]) / x[0, big]).tolist()
    xs = x.clone()
    xs[0, big] = xs[0, big].bfloat16().float()
    res["only_large_channels_bf16"] = rel_err(xs @ w.T, ref)
    for name, tier in (bf16_baseline_tier(config, weights, device="cpu"),
                       ("reference-bf16", ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16))):
        t = one_step_trace(tier, prompt, token)
        res[name] = {k: rel_err(t[k].float(), oracle[k].float()) for k in ("norm", "logits")}
        tx = t["norm"].float().reshape(1, -1)
        res[name]["x_large_channels_rel_err"] = ((tx[0, big] - x[0, big]) / x[0, big]).tolist()
        res[name]["logits_fp32_from_its_norm"] = rel_err(tx @ w.T, ref)
    json.dump(res, open(out, "w"), indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
