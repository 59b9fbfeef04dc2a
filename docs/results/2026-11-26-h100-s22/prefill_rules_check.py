"""Session 22: the fast prefill with each chunked delta rule on one tier (the 0.8B, random weights):
a prompt of T tokens prefilled into two fresh states, fla's rule then FlashQLA's; the logits, the
DeltaNet states, the conv ring and the K/V cache compared (relative Frobenius), each also against the
reference path (prefill="reference" on the same weights), then 128 greedy tokens decoded from each.
Run from a tree's root: python prefill_rules_check.py OUT_JSON [T ...]"""
import json
import sys

import torch

from reference import ModelConfig, perturb_norms, random_weights
from megakernel.tier import MegakernelTier


def rel(a, b):
    a, b = a.float(), b.float()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


config = ModelConfig.qwen3_5_0_8b()
weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
tier = MegakernelTier(config, weights, device="cuda")
slow = MegakernelTier(config, weights, device="cuda", prefill="reference")
rows = []
for T in [int(x) for x in sys.argv[2:]] or [520]:
    ids = torch.randint(0, config.vocab_size, (1, T), generator=torch.Generator().manual_seed(T)).cuda()
    out = {}
    for name, t, rule in (("reference", slow, None), ("fla", tier, "fla"), ("flash-qla", tier, "flash-qla")):
        if rule:
            t.prefill_delta_rule = rule
        s = t.new_state(1, T + 130)
        logits = t.prefill(ids, s)
        s2 = t.clone_state(s)
        step = [logits.argmax(-1)]
        for _ in range(127):
            step.append(t.decode_argmax(step[-1], s2))
        tokens = torch.cat(step).tolist()
        out[name] = (logits, s, tokens)
        torch.cuda.synchronize()
    for name in ("fla", "flash-qla"):
        logits, s, tokens = out[name]
        ref_logits, ref_s, ref_tokens = out["reference"]
        row = {"T": T, "rule": name, "logits_vs_reference": rel(logits, ref_logits),
               "dn_state_vs_reference": rel(s.dn_state, ref_s.dn_state),
               "k_cache_vs_reference": rel(s.k_cache[..., :T, :], ref_s.k_cache[..., :T, :]),
               "greedy_same_as_reference": sum(a == b for a, b in zip(tokens, ref_tokens)),
               "logits_vs_fla": rel(logits, out["fla"][0]), "dn_state_vs_fla": rel(s.dn_state, out["fla"][1].dn_state),
               "greedy_same_as_fla": sum(a == b for a, b in zip(tokens, out["fla"][2]))}
        rows.append(row)
        print(row, flush=True)
json.dump(rows, open(sys.argv[1], "w"), indent=1)
