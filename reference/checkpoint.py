"""Load a Qwen3.5 checkpoint: a folder of safetensors (one file or sharded with an
index) or a hub id, text weights under `model.language_model.` (real Qwen3.5
checkpoints) or `model.` (text-only saves). Vision and MTP weights are ignored, the
lm_head is tied, and every problem is reported in one CheckpointError."""

from __future__ import annotations

import json
import os

import torch

from .config import ConfigError, ModelConfig
from .weights import WeightsError, validate_weights

IGNORED_PREFIXES = ("model.visual.", "mtp.", "visual.")
TEXT_PREFIXES = ("model.language_model.", "model.")


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable or holds another model."""


def resolve_checkpoint_dir(path_or_repo_id) -> str:
    """A local folder as it is; anything else that looks like `owner/name` is fetched
    from the hub (config, safetensors, tokenizer files)."""
    path = os.fspath(path_or_repo_id)
    if os.path.isdir(path):
        return path
    looks_like_repo = path.count("/") == 1 and not path.startswith((".", "/", "~")) and not os.path.exists(path)
    if not looks_like_repo:
        raise CheckpointError(f"checkpoint folder {path!r} does not exist (expected a folder of safetensors or a hub id)")
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(path, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja"])
    except Exception as e:  # offline, unknown repo, no permission
        raise CheckpointError(f"{path!r} is not a local folder and could not be downloaded from the hub: {e}") from e


def _safetensors_files(folder: str) -> list[str]:
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        missing = [s for s in shards if not os.path.isfile(os.path.join(folder, s))]
        if missing:
            raise CheckpointError(f"{folder}: the index names shards that are not there: {missing}")
        return [os.path.join(folder, s) for s in shards]
    files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
    if not files:
        raise CheckpointError(f"{folder} holds no .safetensors files")
    return [os.path.join(folder, f) for f in files]


def _text_name(name: str) -> str | None:
    """The `Qwen3_5ForCausalLM` name of a checkpoint tensor, or None if it is not text."""
    if name.startswith(IGNORED_PREFIXES):
        return None
    if name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name


def load_checkpoint(path_or_repo_id, dtype=torch.bfloat16, device="cpu") -> tuple[ModelConfig, dict]:
    """→ (ModelConfig, weights keyed by `Qwen3_5ForCausalLM` names, cast to dtype)."""
    from safetensors import safe_open

    folder = resolve_checkpoint_dir(path_or_repo_id)
    try:
        config = ModelConfig.from_hf(folder)
    except ConfigError as e:
        raise CheckpointError(f"{folder}: {e}") from e
    weights = {}
    for file in _safetensors_files(folder):
        with safe_open(file, framework="pt") as f:
            for name in f.keys():
                text = _text_name(name)
                if text is None:
                    continue
                weights[text] = f.get_tensor(name).to(dtype=dtype, device=device)
    if "lm_head.weight" in weights and "model.embed_tokens.weight" in weights:
        if not torch.equal(weights["lm_head.weight"], weights["model.embed_tokens.weight"]):
            raise CheckpointError(f"{folder}: lm_head.weight differs from the embedding, but this model ties them")
    weights.pop("lm_head.weight", None)
    try:
        validate_weights(config, weights)
    except WeightsError as e:
        raise CheckpointError(f"{folder}: {e}") from e
    return config, weights
