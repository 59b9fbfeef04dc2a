"""Checkpoint loading: round-trips what `save_pretrained` writes, in both naming schemes
(text-only `model.` and Qwen3.5's `model.language_model.` with vision and MTP weights),
sharded or not; every broken checkpoint is one clear error."""

import json
import os

import pytest
import torch
from safetensors.torch import save_file

from reference import CheckpointError, ModelConfig, load_checkpoint, random_weights


@pytest.fixture(scope="module")
def saved_text_model(tmp_path_factory, tiny_config, tiny_weights):
    """What Qwen3_5ForCausalLM.save_pretrained writes for the tiny model (sharded)."""
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    folder = tmp_path_factory.mktemp("text_ckpt")
    model = Qwen3_5ForCausalLM(Qwen3_5TextConfig(**tiny_config.to_hf_dict())).to(torch.bfloat16)
    state = dict(tiny_weights)
    state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state)
    model.save_pretrained(folder, max_shard_size="100KB")
    return folder


def test_round_trip_save_pretrained(saved_text_model, tiny_config, tiny_weights):
    assert any(f.endswith(".index.json") for f in os.listdir(saved_text_model)), "expected a sharded save"
    config, weights = load_checkpoint(saved_text_model)
    assert config.layer_types == tiny_config.layer_types and config.hidden_size == tiny_config.hidden_size
    assert set(weights) == set(tiny_weights)
    for name, t in tiny_weights.items():
        assert torch.equal(weights[name], t), name


def write_multimodal(folder, config, weights, extra=None, drop=None):
    """A checkpoint laid out like the real Qwen/Qwen3.5-0.8B: a VLM config nesting
    text_config, text weights under model.language_model., vision and mtp weights."""
    os.makedirs(folder, exist_ok=True)
    tensors = {"model.language_model." + k[len("model."):]: v.contiguous() for k, v in weights.items() if k != drop}
    tensors["model.visual.patch_embed.proj.weight"] = torch.zeros(4, 3)
    tensors["mtp.fc.weight"] = torch.zeros(2, 2)
    tensors.update(extra or {})
    save_file(tensors, os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
                   "text_config": config.to_hf_dict(), "vision_config": {"depth": 1}}, f)


def test_multimodal_naming(tmp_path, tiny_config, tiny_weights):
    write_multimodal(tmp_path, tiny_config, tiny_weights)
    config, weights = load_checkpoint(tmp_path, dtype=torch.float32)
    assert set(weights) == set(tiny_weights)
    assert weights["model.norm.weight"].dtype == torch.float32
    assert torch.equal(weights["model.layers.0.linear_attn.A_log"], tiny_weights["model.layers.0.linear_attn.A_log"].float())
    assert config.linear_num_value_heads == tiny_config.linear_num_value_heads


def test_missing_folder():
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint("/no/such/folder/anywhere")


def test_folder_without_safetensors(tmp_path, tiny_config):
    (tmp_path / "config.json").write_text(json.dumps(tiny_config.to_hf_dict()))
    with pytest.raises(CheckpointError, match="no .safetensors"):
        load_checkpoint(tmp_path)


def test_other_model(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    save_file({"model.embed_tokens.weight": torch.zeros(4, 4)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointError, match="not a Qwen3.5 text config"):
        load_checkpoint(tmp_path)


def test_every_problem_listed(tmp_path, tiny_config, tiny_weights):
    bad_shape = {"model.language_model.norm.weight": torch.zeros(3)}
    write_multimodal(tmp_path, tiny_config, tiny_weights, drop="model.layers.1.mlp.up_proj.weight",
                     extra={**bad_shape, "model.language_model.layers.0.surprise.weight": torch.zeros(1)})
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path)
    msg = str(info.value)
    assert "model.layers.1.mlp.up_proj.weight" in msg and "missing" in msg
    assert "model.layers.0.surprise.weight" in msg and "unexpected" in msg
    assert "model.norm.weight has shape (3,), expected (64,)" in msg


def test_untied_lm_head_rejected(tmp_path, tiny_config, tiny_weights):
    write_multimodal(tmp_path, tiny_config, tiny_weights, extra={"lm_head.weight": torch.ones(512, 64)})
    with pytest.raises(CheckpointError, match="ties them"):
        load_checkpoint(tmp_path)


def test_config_from_hf_reads_real_config():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "qwen3_5_0_8b_config.json")
    if not os.path.exists(path):
        pytest.skip("shared/qwen3_5_0_8b_config.json is not beside this checkout")
    assert ModelConfig.from_hf(path).replace(name="x") == ModelConfig.qwen3_5_0_8b().replace(name="x")


def test_config_from_hf_larger_family_member(tiny_config):
    """Larger Qwen3.5 sizes have more DeltaNet value heads than key heads."""
    d = tiny_config.to_hf_dict() | {"linear_num_value_heads": 8, "linear_num_key_heads": 2, "hidden_size": 96}
    config = ModelConfig.from_hf({"text_config": d})
    assert config.value_dim == 8 * 16 and config.conv_dim == 2 * 2 * 16 + 8 * 16
    assert set(random_weights(config)) == set(random_weights(tiny_config))
