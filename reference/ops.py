"""The operations of the Qwen3.5 forward pass, one function each, in plain PyTorch.

Every op is keyword-only, and the Triton tier provides the same names with the same
signatures (see `triton_kernels/ops.py`), so a test can call both the same way.

Dtype rule (what transformers does in a bf16 run): activations arrive and leave in the
model dtype `x.dtype`; reductions, gates and the recurrent state are fp32 inside.
With fp32 inputs every op is an fp32 oracle.

Shapes: B batch, T tokens, D hidden, H heads, d head dim, C conv channels, K conv taps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .delta_rule import gated_delta_rule_chunked, gated_delta_rule_recurrent  # noqa: F401  (re-exported ops)


# ---- norms -------------------------------------------------------------------

def rms_norm(*, x, weight, eps):
    """Zero-centred RMSNorm: x·rsqrt(mean(x²)+ε)·(1+w), in fp32, cast back to x.dtype."""
    x32 = x.float()
    y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (y * (1.0 + weight.float())).to(x.dtype)


def add_rms_norm(*, x, residual, weight, eps):
    """residual ← residual + x (rounded to the model dtype), then rms_norm of it.
    Returns (normed, residual). The first layer passes x = embedding, residual = None."""
    residual = x if residual is None else (residual + x).to(x.dtype)
    return rms_norm(x=residual, weight=weight, eps=eps), residual


def gated_rms_norm(*, x, gate, weight, eps):
    """DeltaNet output norm over the last dim: [x·rsqrt(mean(x²)+ε)]·w ⊙ silu(gate).
    Plain w (not 1+w), norm first, then the gate; rounding points as transformers'."""
    dtype = x.dtype
    x32 = x.float()
    y = (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(dtype)
    y = weight * y
    return (y.float() * F.silu(gate.float())).to(dtype)


def l2norm(*, x, eps=1e-6):
    """x / sqrt(Σx² + ε) over the last dim, in fp32 (ε on the sum, unlike F.normalize)."""
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).sum(-1, keepdim=True) + eps)


# ---- embedding, projections, head ----------------------------------------------

def embedding(*, ids, weight):
    """ids [B, T] → rows of the embedding [B, T, D] (no scaling)."""
    return weight[ids]


def linear(*, x, weight):
    """x [..., in] · Wᵀ, W [out, in] → [..., out] in x.dtype."""
    return F.linear(x, weight)


def swiglu(*, gate, up):
    """silu(gate) ⊙ up, in the model dtype."""
    return F.silu(gate) * up


def lm_head(*, x, weight):
    """x [B, D] → logits [B, vocab], computed in the model dtype and returned as fp32."""
    return F.linear(x, weight).float()


# ---- Gated DeltaNet pieces -------------------------------------------------------

def causal_conv1d(*, x, weight, conv_state=None):
    """Causal depthwise conv + SiLU over time. x [B, T, C], weight [C, K],
    conv_state [B, C, K-1] (the K-1 inputs before x; None = zeros).
    Returns (y [B, T, C], new conv_state [B, C, K-1])."""
    B, T, C = x.shape
    K = weight.shape[1]
    if conv_state is None:
        conv_state = x.new_zeros(B, C, K - 1)
    window = torch.cat([conv_state.to(x.dtype), x.transpose(1, 2)], dim=-1)  # [B, C, K-1+T]
    y = F.conv1d(window, weight.unsqueeze(1).to(x.dtype), groups=C)  # [B, C, T]
    return F.silu(y).transpose(1, 2), window[:, :, -(K - 1):].clone()


def causal_conv1d_step(*, x, weight, conv_state):
    """One decode step of causal_conv1d. x [B, C], conv_state [B, C, K-1].
    Returns (y [B, C], new conv_state)."""
    y, new_state = causal_conv1d(x=x[:, None, :], weight=weight, conv_state=conv_state)
    return y[:, 0], new_state


def delta_rule_inputs(*, q, k, a, b, A_log, dt_bias, eps=1e-6):
    """Prepare the delta rule's inputs. q, k [B, T, Hk, dk]; a, b [B, T, Hv].
    Returns fp32 q̂ = l2norm(q)/√dk, k̂ = l2norm(k), g = −exp(A_log)·softplus(a + dt_bias)
    (log-decay ≤ 0, fp32) and β = σ(b) (σ in the model dtype, then fp32)."""
    q_hat = l2norm(x=q, eps=eps) * q.shape[-1] ** -0.5
    k_hat = l2norm(x=k, eps=eps)
    g = -A_log.float().exp() * F.softplus(a.float() + dt_bias.float())
    beta = torch.sigmoid(b).float()
    return q_hat, k_hat, g, beta


# ---- gated full attention pieces -------------------------------------------------

def rope_cos_sin(*, positions, rotary_dim, theta, dtype):
    """positions [T] → cos, sin [T, rotary_dim] (computed in fp32, cast to dtype)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32, device=positions.device) / rotary_dim))
    freqs = positions.float()[:, None] * inv_freq[None, :]  # [T, rotary_dim/2]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_partial_rope(*, x, cos, sin):
    """NeoX ("half") rotation of the first rotary_dim dims of each head; the rest pass.
    x [B, T, H, d], cos/sin [T, rotary_dim]."""
    r = cos.shape[-1]
    rot, rest = x[..., :r], x[..., r:]
    half = r // 2
    rotated = torch.cat([-rot[..., half:], rot[..., :half]], dim=-1)
    rot = rot * cos[None, :, None, :] + rotated * sin[None, :, None, :]
    return torch.cat([rot, rest], dim=-1)


def qk_norm_rope(*, q, k, q_weight, k_weight, positions, rotary_dim, theta, eps):
    """Per-head zero-centred RMSNorm of q [B, T, Hq, d] and k [B, T, Hkv, d], then
    partial RoPE at absolute `positions` [T]. Returns (q, k) in the model dtype."""
    q = rms_norm(x=q, weight=q_weight, eps=eps)
    k = rms_norm(x=k, weight=k_weight, eps=eps)
    cos, sin = rope_cos_sin(positions=positions, rotary_dim=rotary_dim, theta=theta, dtype=q.dtype)
    return apply_partial_rope(x=q, cos=cos, sin=sin), apply_partial_rope(x=k, cos=cos, sin=sin)


def gated_attention(*, q, gate, k_cache, v_cache, start_pos):
    """Causal GQA attention of T new queries over the cache, then the sigmoid output gate.
    q, gate [B, T, Hq, d]; k_cache, v_cache [B, Hkv, S, d] holding positions
    [0, start_pos + T). Query i sits at start_pos + i and sees keys ≤ that position.
    Softmax in fp32. Returns [B, T, Hq·d] in the model dtype."""
    B, T, Hq, d = q.shape
    Hkv = k_cache.shape[1]
    n_ctx = start_pos + T
    k = k_cache[:, :, :n_ctx].float().repeat_interleave(Hq // Hkv, dim=1)  # [B, Hq, n_ctx, d]
    v = v_cache[:, :, :n_ctx].float().repeat_interleave(Hq // Hkv, dim=1)
    scores = torch.einsum("bthd,bhsd->bhts", q.float(), k) * d ** -0.5
    q_pos = torch.arange(start_pos, n_ctx, device=q.device)[:, None]
    k_pos = torch.arange(n_ctx, device=q.device)[None, :]
    scores = scores.masked_fill(k_pos > q_pos, float("-inf"))
    out = torch.einsum("bhts,bhsd->bthd", scores.softmax(-1), v).to(q.dtype)
    return (out * torch.sigmoid(gate)).reshape(B, T, Hq * d)
