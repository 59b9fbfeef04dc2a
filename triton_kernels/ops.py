"""The Triton tier's ops: the same keyword-only functions as `reference/ops.py`, each a
launcher of our own Triton kernel (or fla's, for the delta rule), so
`HybridModel(config, weights, triton_kernels.ops)` runs the reference forward pass on them.

Matrix products: one row of x goes through our GEMV kernel; several rows (prefill) go to
cuBLAS through torch. The embedding is a torch gather.
"""

from __future__ import annotations

import torch

from .attention_decode import gated_attention_decode
from .attention_prefill import gated_attention_prefill
from .conv1d import causal_conv1d, causal_conv1d_step
from .delta_inputs import delta_rule_inputs, l2norm
from .delta_rule import gated_delta_rule_chunked, gated_delta_rule_recurrent
from .gemv import linear
from .lm_head import argmax, lm_head
from .norms import add_rms_norm, gated_rms_norm, rms_norm
from .qk_norm_rope import qk_norm_rope
from .swiglu import swiglu

__all__ = [
    "add_rms_norm", "argmax", "causal_conv1d", "causal_conv1d_step", "delta_rule_inputs", "embedding",
    "gated_attention", "gated_delta_rule_chunked", "gated_delta_rule_recurrent", "gated_rms_norm", "l2norm",
    "linear", "lm_head", "qk_norm_rope", "rms_norm", "swiglu",
]


def embedding(*, ids, weight):
    """ids [B, T] → rows of the embedding [B, T, D]."""
    return weight[ids]


def gated_attention(*, q, gate, k_cache, v_cache, start_pos):
    """Causal GQA attention of T new queries over the cache, gated by σ(gate).
    T == 1 → split-K decode kernel; T > 1 → flash prefill kernel. → [B, T, Hq·d]."""
    if q.shape[1] == 1:
        pos = torch.full((1,), start_pos, dtype=torch.int64, device=q.device)
        return gated_attention_decode(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, pos=pos)
    return gated_attention_prefill(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, start_pos=start_pos)
