"""The reference tier agrees with transformers' Qwen3_5ForCausalLM on the same weights:
fp32 to ~1e-4 relative (every traced tensor), bf16 within the bf16 bounds."""

import pytest
import torch

from compare import load_tier
from compare.diff import part_names, run_tier
from helpers import assert_close, rel_err
from reference import ModelConfig, perturb_norms, random_weights, tolerances

def traces(tier, prompt, steps):
    return run_tier(tier, prompt, steps, max_seq_len=prompt.shape[1] + len(steps) + 1)


@pytest.mark.parametrize("batch", [1, 2])
def test_tiny_fp32(tiny_config, tiny_weights, batch):
    g = torch.Generator().manual_seed(batch)
    prompt = torch.randint(0, tiny_config.vocab_size, (batch, 70), generator=g)  # > one delta-rule chunk
    steps = [torch.randint(0, tiny_config.vocab_size, (batch,), generator=g) for _ in range(3)]
    hf = traces(load_tier("hf", tiny_config, tiny_weights, dtype=torch.float32), prompt, steps)
    ref = traces(load_tier("reference", tiny_config, tiny_weights, dtype=torch.float32), prompt, steps)
    for call, (a, b) in enumerate(zip(ref, hf)):
        for name in part_names(tiny_config):
            assert_close(a[name], b[name], tolerances.FP32_REL, f"call {call} {name}")


def test_real_shapes_fp32_and_bf16():
    """The 0.8B config: fp32 agreement, and bf16 no worse than transformers' bf16 (1.5x)."""
    config = ModelConfig.qwen3_5_0_8b()
    weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, config.vocab_size, (1, 12), generator=g)
    steps = [torch.randint(0, config.vocab_size, (1,), generator=g) for _ in range(2)]
    oracle = traces(load_tier("reference", config, weights, dtype=torch.float32), prompt, steps)
    hf32 = traces(load_tier("hf", config, weights, dtype=torch.float32), prompt, steps)
    for call, (a, b) in enumerate(zip(hf32, oracle)):
        for name in part_names(config):
            assert_close(a[name], b[name], tolerances.FP32_REL, f"fp32 call {call} {name}")
    ref16 = traces(load_tier("reference", config, weights, dtype=torch.bfloat16), prompt, steps)
    hf16 = traces(load_tier("hf", config, weights, dtype=torch.bfloat16), prompt, steps)
    for call in range(len(oracle)):
        for name in part_names(config):
            yard = rel_err(hf16[call][name], oracle[call][name])
            err = rel_err(ref16[call][name], oracle[call][name])
            assert tolerances.within(err, torch.bfloat16, yard), f"bf16 call {call} {name}: {err:.3g} vs hf {yard:.3g}"
