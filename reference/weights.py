"""Weights: the state-dict names and shapes of `Qwen3_5ForCausalLM`, seeded random
weights drawn like transformers' own initialisation, and one validator that reports
every problem at once."""

from __future__ import annotations

import math

import torch

from .config import LINEAR, ModelConfig


class WeightsError(ValueError):
    """Weights that do not fit the config (missing, unexpected, wrong shape or dtype)."""


MAX_LISTED = 8  # names listed in one message before "… N more"

# Parameters kept as 1-D vectors, whatever the model dtype (norms and DeltaNet gates).
NORM_ZERO_CENTRED = ("input_layernorm.weight", "post_attention_layernorm.weight",
                     "self_attn.q_norm.weight", "self_attn.k_norm.weight")


def expected_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor of the text model, keyed by its transformers name (`lm_head.weight` only
    where the config does not tie it to the embedding)."""
    c = config
    D, I = c.hidden_size, c.intermediate_size
    shapes = {"model.embed_tokens.weight": (c.vocab_size, D), "model.norm.weight": (D,)}
    if not c.tie_word_embeddings:
        shapes["lm_head.weight"] = (c.vocab_size, D)
    for i, kind in enumerate(c.layer_types):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (D,)
        shapes[p + "post_attention_layernorm.weight"] = (D,)
        shapes[p + "mlp.gate_proj.weight"] = (I, D)
        shapes[p + "mlp.up_proj.weight"] = (I, D)
        shapes[p + "mlp.down_proj.weight"] = (D, I)
        if kind == LINEAR:
            a = p + "linear_attn."
            Hv = c.linear_num_value_heads
            shapes[a + "in_proj_qkv.weight"] = (c.conv_dim, D)
            shapes[a + "in_proj_z.weight"] = (c.value_dim, D)
            shapes[a + "in_proj_b.weight"] = (Hv, D)
            shapes[a + "in_proj_a.weight"] = (Hv, D)
            shapes[a + "conv1d.weight"] = (c.conv_dim, 1, c.linear_conv_kernel_dim)
            shapes[a + "dt_bias"] = (Hv,)
            shapes[a + "A_log"] = (Hv,)
            shapes[a + "norm.weight"] = (c.linear_value_head_dim,)
            shapes[a + "out_proj.weight"] = (D, c.value_dim)
        else:
            a = p + "self_attn."
            hd = c.head_dim
            shapes[a + "q_proj.weight"] = (2 * c.num_attention_heads * hd, D)
            shapes[a + "k_proj.weight"] = (c.num_key_value_heads * hd, D)
            shapes[a + "v_proj.weight"] = (c.num_key_value_heads * hd, D)
            shapes[a + "o_proj.weight"] = (D, c.num_attention_heads * hd)
            shapes[a + "q_norm.weight"] = (hd,)
            shapes[a + "k_norm.weight"] = (hd,)
    return shapes


def random_weights(config: ModelConfig, seed: int = 0, dtype=torch.bfloat16, device="cpu") -> dict:
    """Seeded random weights at the config's shapes, drawn as transformers initialises
    `Qwen3_5ForCausalLM`: matrices, conv and embedding N(0, initializer_range), the
    zero-centred norms 0, the gated norm 1, dt_bias 1, A_log = ln U(0.01, 16)."""
    gen = torch.Generator().manual_seed(seed)
    std = config.initializer_range
    weights = {}
    for name, shape in expected_shapes(config).items():
        if name.endswith(NORM_ZERO_CENTRED) or name == "model.norm.weight":
            t = torch.zeros(shape)
        elif name.endswith(("linear_attn.norm.weight", "dt_bias")):
            t = torch.ones(shape)
        elif name.endswith("A_log"):
            t = torch.empty(shape).uniform_(0.01, 16, generator=gen).log_()
        else:
            t = torch.empty(shape).normal_(0.0, std, generator=gen)
        weights[name] = t.to(dtype=dtype, device=device)
    return weights


def perturb_norms(weights: dict, scale: float = 0.05, seed: int = 1) -> dict:
    """A copy of `weights` whose norm weights are moved off their init values, so a
    test can tell (1 + w) from w. Random init leaves every zero-centred norm at 0."""
    gen = torch.Generator().manual_seed(seed)
    out = dict(weights)
    for name, t in weights.items():
        if name.endswith("norm.weight"):
            noise = torch.randn(t.shape, generator=gen) * scale
            out[name] = (t.float() + noise).to(t.dtype).to(t.device)
    return out


HAZARD_CHANNELS, HAZARD_SCALE = 4, 32.0  # hazard_weights: embedding channels made large, and by how much
HAZARD_A_LOG = (math.log(64.0), math.log(1e-3))  # a DeltaNet head that forgets every token, one that keeps almost all
HAZARD_DT_BIAS = (1.0, -4.0)


def hazard_weights(weights: dict, seed: int = 2) -> dict:
    """A copy of `weights` made numerically harder, as trained checkpoints are, for the error
    checks random weights do not stress: HAZARD_CHANNELS seeded embedding channels HAZARD_SCALE
    times larger (the few huge residual channels of trained LLMs; the tied lm_head with them),
    and in every DeltaNet layer the even heads with a decay near 0 (A_log = ln 64: the state is
    all but erased each token) and the odd heads near 1 (A_log = ln 1e-3, dt_bias -4: it keeps
    almost everything); then the norms perturbed (perturb_norms). Checkpoint or random, any
    config."""
    gen = torch.Generator().manual_seed(seed)
    out = perturb_norms(weights, seed=seed)
    emb = out["model.embed_tokens.weight"]
    channels = torch.randperm(emb.shape[1], generator=gen)[:HAZARD_CHANNELS].to(emb.device)
    scaled = emb.to(torch.float32, copy=True)  # (.float() of an fp32 tensor is the tensor itself)
    scaled[:, channels] *= HAZARD_SCALE
    out["model.embed_tokens.weight"] = scaled.to(emb.dtype)
    head = out.get("lm_head.weight")
    if head is not None and (head is emb or torch.equal(head, emb)):  # (a tied head's copy follows the embedding)
        out["lm_head.weight"] = out["model.embed_tokens.weight"]
    for name, t in weights.items():
        for suffix, values in (("linear_attn.A_log", HAZARD_A_LOG), ("linear_attn.dt_bias", HAZARD_DT_BIAS)):
            if name.endswith(suffix):
                heads = torch.arange(t.shape[0], device=t.device)
                out[name] = torch.where(heads % 2 == 0, values[0], values[1]).to(t.dtype)
    return out


def shape_problems(config: ModelConfig, shapes: dict, label=str) -> list[str]:
    """The missing, unexpected and mis-shaped tensors among `shapes` (transformers name →
    shape, or None where there is no shape to check), one message each; `label(name)` is
    how a tensor that is there is named (a checkpoint adds its file)."""
    expected = expected_shapes(config)
    problems = []
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    if missing:
        problems.append(f"{len(missing)} missing: {_preview(missing)}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected: {_preview([label(n) for n in unexpected])}")
    misshaped = [n for n, s in expected.items() if shapes.get(n) is not None and tuple(shapes[n]) != s]
    problems += [f"{label(n)} has shape {tuple(shapes[n])}, expected {expected[n]}" for n in misshaped[:MAX_LISTED]]
    if len(misshaped) > MAX_LISTED:
        problems.append(f"… {len(misshaped) - MAX_LISTED} more of the wrong shape")
    return problems


def validate_weights(config: ModelConfig, weights: dict, dtype=None) -> None:
    """Raise one WeightsError listing every missing, unexpected, mis-shaped or
    mis-typed tensor. Where the config ties the lm_head, `lm_head.weight` is accepted only as
    a copy of the embedding."""
    tied = config.tie_word_embeddings
    given = without_tied_head(config, weights)
    problems = shape_problems(config, {k: tuple(v.shape) if isinstance(v, torch.Tensor) else None
                                       for k, v in given.items()})
    for name, t in given.items():
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name} is a {type(t).__name__}, expected a torch.Tensor")
        elif dtype is not None and t.dtype != dtype:
            problems.append(f"{name} has dtype {t.dtype}, expected {dtype}")
        elif not t.is_floating_point():
            problems.append(f"{name} has dtype {t.dtype}, expected a floating-point dtype")
    if tied and "lm_head.weight" in weights:
        lm, emb = weights["lm_head.weight"], weights.get("model.embed_tokens.weight")
        if emb is not None and (lm.shape != emb.shape or not torch.equal(lm, emb)):
            problems.append("lm_head.weight differs from model.embed_tokens.weight, but the model ties them")
    if problems:
        raise WeightsError(f"weights do not fit config {config.name!r}: " + "; ".join(problems))


def without_tied_head(config: ModelConfig, weights: dict) -> dict:
    """`weights` without a tied lm_head's copy of the embedding (the tiers read the embedding
    there); an lm_head of its own stays."""
    return {k: v for k, v in weights.items() if k != "lm_head.weight" or not config.tie_word_embeddings}


def _preview(names: list[str], limit: int = MAX_LISTED) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names) - limit} more)" if len(names) > limit else "")


def num_parameters(config: ModelConfig) -> int:
    return sum(math.prod(s) for s in expected_shapes(config).values())
