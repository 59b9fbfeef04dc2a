"""The Qwen3.5 family beyond the 0.8B (issue 22): the built-in configs of the public dense sizes,
and the lm_head of their own that 9B and 27B carry (`tie_word_embeddings: false`) through the
config, the weights, a checkpoint, the byte floor, and the reference and transformers tiers
(tiny shapes here; the Triton tier's test of it is in test_triton_tier.py); the megakernel,
built for the 0.8B, refuses it by name."""

import json
import math
import os

import pytest
import torch
from safetensors.torch import save_file

from compare import load_tier
from compare.diff import part_names, run_tier
from compare.timing import part_bytes_per_step, weight_bytes_per_step
from helpers import assert_close
from reference import (ConfigError, ModelConfig, WeightsError, expected_shapes, load_checkpoint, perturb_norms,
                       random_weights, tolerances, validate_weights)
from reference.weights import num_parameters

# each size's name in billions of parameters (the published totals include a vision tower and an
# MTP layer, which the text model here leaves out) and whether it ties its lm_head to the embedding
FAMILY = {"qwen3.5-0.8b": (0.8, True), "qwen3.5-2b": (2, True), "qwen3.5-4b": (4, True), "qwen3.5-9b": (9, False),
          "qwen3.5-27b": (27, False)}
UNTIED = ModelConfig.tiny().replace(name="tiny-untied", tie_word_embeddings=False)


@pytest.mark.parametrize("name", list(FAMILY))
def test_built_in_family_configs(name):
    config = ModelConfig.named(name)
    billions, tied = FAMILY[name]
    assert config.tie_word_embeddings is tied
    assert abs(num_parameters(config) / 1e9 / billions - 1) < 0.1, f"{num_parameters(config):,} parameters"
    assert ("lm_head.weight" in expected_shapes(config)) is not tied
    assert ModelConfig.from_hf(config.to_hf_dict()).replace(name=name) == config, "to_hf_dict / from_hf round trip"
    assert config.linear_num_value_heads % config.linear_num_key_heads == 0 and config.num_layers % 4 == 0


def test_an_unknown_name_lists_the_built_in_ones():
    with pytest.raises(ConfigError, match=r"unknown config 'qwen3.5-3b'; expected one of \['qwen3.5-0.8b', "
                                          r"'qwen3.5-27b', 'qwen3.5-2b', 'qwen3.5-4b', 'qwen3.5-9b', 'tiny', 'tiny-megakernel'\]"):
        ModelConfig.named("qwen3.5-3b")


def test_tie_word_embeddings_is_read_from_the_text_config_or_the_top_level():
    text = UNTIED.to_hf_dict()
    assert ModelConfig.from_hf({"text_config": text}).tie_word_embeddings is False
    del text["tie_word_embeddings"]
    assert ModelConfig.from_hf({"text_config": text, "tie_word_embeddings": False}).tie_word_embeddings is False
    assert ModelConfig.from_hf({"text_config": text}).tie_word_embeddings is True  # transformers' default
    with pytest.raises(ConfigError, match="tie_word_embeddings is a string in JSON, expected true or false"):
        ModelConfig.from_hf({"text_config": text | {"tie_word_embeddings": "no"}})


def test_an_untied_model_needs_its_own_head():
    weights = random_weights(UNTIED, seed=0)
    assert weights["lm_head.weight"].shape == weights["model.embed_tokens.weight"].shape
    assert not torch.equal(weights["lm_head.weight"], weights["model.embed_tokens.weight"])
    validate_weights(UNTIED, weights)
    with pytest.raises(WeightsError, match=r"1 missing: lm_head.weight"):
        validate_weights(UNTIED, {k: v for k, v in weights.items() if k != "lm_head.weight"})
    tied = random_weights(ModelConfig.tiny(), seed=0)
    with pytest.raises(WeightsError, match="lm_head.weight differs from model.embed_tokens.weight, but the model ties"):
        validate_weights(ModelConfig.tiny(), tied | {"lm_head.weight": weights["lm_head.weight"]})


def test_the_byte_floor_counts_the_head_once():
    """A decode step reads the whole lm_head and one row of the embedding: an untied model's floor
    counts the head's matrix, not the embedding's; the parts add up to it."""
    for name in ("qwen3.5-0.8b", "qwen3.5-9b"):
        config = ModelConfig.named(name)
        shapes = expected_shapes(config)
        head = 2 * config.vocab_size * config.hidden_size
        layers = sum(2 * math.prod(s) for n, s in shapes.items() if len(s) == 2 and n.startswith("model.layers."))
        assert weight_bytes_per_step(config) == layers + head, name
        parts = part_bytes_per_step(config, context=0)
        assert parts["lm_head"] == head
        state = sum(v for k, v in parts.items() if k.startswith("layers.")) - layers
        assert sum(parts[k] for k in parts if k.startswith("layers.") or k == "lm_head") == weight_bytes_per_step(config) + state
    assert weight_bytes_per_step(ModelConfig.qwen3_5_0_8b()) == 1_503_789_056


def traces(tier, prompt, steps):
    return run_tier(tier, prompt, steps, max_seq_len=prompt.shape[1] + len(steps) + 1)


def test_untied_reference_agrees_with_transformers():
    """fp32, every traced part, over a prompt of more than one delta-rule chunk and 3 decode steps;
    the logits are the head's, not the embedding's."""
    weights = perturb_norms(random_weights(UNTIED, seed=3, dtype=torch.bfloat16))
    g = torch.Generator().manual_seed(3)
    prompt = torch.randint(0, UNTIED.vocab_size, (1, 70), generator=g)
    steps = [torch.randint(0, UNTIED.vocab_size, (1,), generator=g) for _ in range(3)]
    ref = traces(load_tier("reference", UNTIED, weights, dtype=torch.float32), prompt, steps)
    hf = traces(load_tier("hf", UNTIED, weights, dtype=torch.float32), prompt, steps)
    for call, (a, b) in enumerate(zip(ref, hf)):
        for name in part_names(UNTIED):
            assert_close(a[name], b[name], tolerances.FP32_REL, f"call {call} {name}")
    norm = ref[-1]["norm"].reshape(-1, UNTIED.hidden_size)[-1]
    assert_close(ref[-1]["logits"].reshape(-1), norm @ weights["lm_head.weight"].float().t(), 1e-5, "logits = norm · headᵀ")


def test_an_untied_checkpoint_loads_its_head(tmp_path):
    """Laid out as the real 9B / 27B: text weights under model.language_model., the head at the
    top level; a checkpoint of such a config without it is one error naming it."""
    weights = random_weights(UNTIED, seed=4)
    tensors = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v.contiguous()
               for k, v in weights.items()}
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with open(tmp_path / "config.json", "w") as f:
        json.dump({"model_type": "qwen3_5", "text_config": UNTIED.to_hf_dict(), "tie_word_embeddings": False}, f)
    config, loaded = load_checkpoint(str(tmp_path))
    assert config.tie_word_embeddings is False and set(loaded) == set(weights)
    assert torch.equal(loaded["lm_head.weight"], weights["lm_head.weight"])
    os.remove(tmp_path / "model.safetensors")
    save_file({k: v for k, v in tensors.items() if k != "lm_head.weight"}, str(tmp_path / "model.safetensors"))
    with pytest.raises(Exception, match=r"1 missing: lm_head.weight"):
        load_checkpoint(str(tmp_path))


def test_the_megakernel_builds_an_untied_head_and_refuses_27b_by_name():
    from megakernel.family import config_problems, kernel_defines

    assert config_problems(ModelConfig.qwen3_5_0_8b().replace(tie_word_embeddings=False)) == []
    assert kernel_defines(ModelConfig.named("qwen3.5-9b"))["MK_TIED"] == 0
    assert config_problems(ModelConfig.named("qwen3.5-4b")) == []
    assert [p.split(":")[0] for p in config_problems(ModelConfig.named("qwen3.5-27b"))] == [
        "hidden_size=5120", "intermediate_size=17408", "num_attention_heads=24"]


def test_a_tier_that_cannot_run_the_config_is_skipped_with_why(monkeypatch):
    """`compare diff / bench --config NAME`: the megakernel, where it cannot be built for the config,
    is listed as skipped with its reason where the default tiers run, and asking for it is an error
    naming the fields."""
    import compare.common as common
    from compare.common import UsageError, select_tiers

    monkeypatch.setattr(common, "unavailable_reason", lambda name, device: None)  # (as on a GPU machine)
    config = ModelConfig.named("qwen3.5-27b")
    run, skipped = select_tiers(None, "cuda", config=config)
    assert "megakernel" not in run and {"reference", "hf"} <= set(run)
    assert skipped["megakernel"].startswith("the megakernel cannot be built for config 'qwen3.5-27b': hidden_size=5120: "
                                            "must be a multiple of 256 from 1024 to 4096")
    for ok in ("qwen3.5-0.8b", "qwen3.5-2b", "qwen3.5-4b", "qwen3.5-9b", "tiny-megakernel"):
        assert "megakernel" in select_tiers(None, "cuda", config=ModelConfig.named(ok))[0]
    with pytest.raises(UsageError, match=r"tier 'megakernel' cannot run on cuda: .*hidden_size=5120"):
        select_tiers("reference,megakernel", "cuda", config=config)
