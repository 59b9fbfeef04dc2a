"""Session 51 (CPU): how far the hazard logits' error of a bf16 implementation moves with the prompt. The test
(test_logits_within_bf16_bounds_on_hazard_weights) checks one 3-token prompt (ids seed 5, token seed 6) against
transformers' error on it; hazard_cpu.py found the error is the walk of the 4 large channels of the final norm's
output, which differs between bf16 implementations (transformers 2.96e-02, the bf16 reference 4.26e-02 on that prompt).
This prints both errors (logits and norm) for prompt seeds 5.. (N of them, default 8) at length L (default 3).
Usage: PYTHONPATH=. python3 hazard_seeds_cpu.py OUT_JSON [N [L]]"""
import json
import statistics
import sys

import torch

sys.path.insert(0, "tests")
from helpers import bf16_baseline_tier, random_ids  # noqa: E402
from test_megakernel import one_step_trace  # noqa: E402

from reference import ModelConfig, ReferenceTier, hazard_weights, perturb_norms, random_weights  # noqa: E402
from reference.tolerances import rel_err  # noqa: E402


def main(out, n=8, length=3):
    config = ModelConfig.qwen3_5_0_8b()
    weights = hazard_weights(perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16)))
    tiers = {"fp32": ReferenceTier(config, weights, device="cpu", dtype=torch.float32),
             "reference-bf16": ReferenceTier(config, weights, device="cpu", dtype=torch.bfloat16)}
    name, tiers["baseline"] = bf16_baseline_tier(config, weights, device="cpu")
    rows = []
    for seed in range(5, 5 + n):
        prompt, token = random_ids(length, seed), random_ids(1, seed + 1)[0]
        t = {k: one_step_trace(v, prompt, token) for k, v in tiers.items()}
        row = {"prompt_seed": seed, "token_seed": seed + 1}
        for k in ("baseline", "reference-bf16"):
            row[k] = {p: rel_err(t[k][p].float(), t["fp32"][p].float()) for p in ("norm", "logits")}
        rows.append(row)
        print(seed, name, "logits %.3e norm %.3e" % (row["baseline"]["logits"], row["baseline"]["norm"]),
              "| reference-bf16 logits %.3e norm %.3e" % (row["reference-bf16"]["logits"], row["reference-bf16"]["norm"]),
              flush=True)
    summary = {k: {p: {"min": min(r[k][p] for r in rows), "median": statistics.median(r[k][p] for r in rows),
                       "max": max(r[k][p] for r in rows)} for p in ("norm", "logits")} for k in ("baseline", "reference-bf16")}
    json.dump({"baseline": name, "length": length, "rows": rows, "summary": summary}, open(out, "w"), indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
