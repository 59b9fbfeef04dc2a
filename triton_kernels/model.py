"""The forward pass the Triton tier runs: `reference.HybridModel`'s, with its three mixers
rewritten to fewer launches and to state updates that a CUDA graph can replay.

Differences from running `HybridModel` over `triton_kernels.ops` (which also works):
- fused weights, concatenated once at construction: DeltaNet [qkv | z | b | a] → one
  projection, attention [q+gate | k | v] → one, MLP [gate | up] → one; in decode the
  down projection also computes the SwiGLU on the fly (one GEMV, no SwiGLU launch);
- state written in place: the conv step and fla's recurrent kernel update their state
  slot, the q/k norm + RoPE kernel writes k and v straight into the KV cache;
- decode reads each row's token position from `state.pos` (a device tensor, one entry
  per row), never from the host, so the whole step can be captured once and replayed
  for rows at any positions;
- decode honours `step_valid` (int64 [1] on the device, set by the tier for the step,
  step_check.py): where it is 0 the kernels that write the state write nothing.
The trace keys and the layer hooks are the reference's (the forward loop is inherited).
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import torch

from reference import LINEAR, HybridModel, ModelState

from . import conv1d, ops, qk_norm_rope
from .attention_decode import gated_attention_decode
from .attention_prefill import gated_attention_prefill
from .delta_rule import recurrent_step_
from .gemv import BACKENDS, linear, swiglu_linear


@dataclass(eq=False)
class TritonState(ModelState):
    pos: torch.Tensor = None  # int64 [B] on the device: row b's next position (= positions[b])


def fuse_weights(config, weights: dict) -> dict:
    """The tier's weight dict (from weights without a tied head's copy: reference
    `without_tied_head`): the fused projections replace their parts; the conv weight becomes
    [C, K]. Other tensors are shared with `weights`."""
    w = dict(weights)
    for i, kind in enumerate(config.layer_types):
        p = f"model.layers.{i}."
        names = [p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"]
        w[p + "mlp.gate_up_proj.weight"] = torch.cat([w.pop(n) for n in names])                  # [2I, D]
        if kind == LINEAR:
            a = p + "linear_attn."
            names = [a + n + ".weight" for n in ("in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a")]
            w[a + "in_proj_qkvzba.weight"] = torch.cat([w.pop(n) for n in names])                # [conv+v+2Hv, D]
            w[a + "conv1d.weight"] = w[a + "conv1d.weight"][:, 0, :].contiguous()                 # [C, K]
        else:
            a = p + "self_attn."
            names = [a + n + ".weight" for n in ("q_proj", "k_proj", "v_proj")]
            w[a + "qkv_proj.weight"] = torch.cat([w.pop(n) for n in names])                      # [2Hq·d+2Hkv·d, D]
    return w


def ops_namespace(backend: str):
    """`triton_kernels.ops` with the matrix products bound to a GEMV backend."""
    names = {name: getattr(ops, name) for name in ops.__all__}
    names["linear"] = lambda *, x, weight: linear(x=x, weight=weight, backend=backend)
    names["lm_head"] = lambda *, x, weight: ops.lm_head(x=x, weight=weight, backend=backend)
    return types.SimpleNamespace(**names)


class FusedModel(HybridModel):
    def __init__(self, config, weights: dict, gemv_backend: str = "triton"):
        super().__init__(config, fuse_weights(config, weights), None)
        self.gemv = gemv_backend
        self.step_valid = None  # the decode step's device-side check (TritonTier._decode_step), or None

    @property
    def gemv(self) -> str:
        return self._gemv

    @gemv.setter
    def gemv(self, backend: str):
        if backend not in BACKENDS:
            raise ValueError(f"gemv backend {backend!r}; expected one of {BACKENDS}")
        self._gemv = backend
        self.ops = ops_namespace(backend)

    def _linear(self, x, weight):
        return linear(x=x, weight=weight, backend=self._gemv)

    # ---- Gated DeltaNet mixer ------------------------------------------------------
    def deltanet(self, h, p, state: TritonState, slot: int, decode: bool):
        c, w = self.config, self.w
        B, T, _ = h.shape
        Hk, Hv = c.linear_num_key_heads, c.linear_num_value_heads
        dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
        C, V = c.conv_dim, c.value_dim
        proj = self._linear(h, w[p + "in_proj_qkvzba.weight"])                      # [B, T, C + V + 2Hv]
        mixed = proj[..., :C]
        z = proj[..., C:C + V].unflatten(-1, (Hv, dv))
        b, a = proj[..., C + V:C + V + Hv], proj[..., C + V + Hv:]
        conv_w, conv_state = w[p + "conv1d.weight"], state.conv[slot]
        if decode:
            y = conv1d.step(x=mixed[:, 0], weight=conv_w, conv_state=conv_state, out_state=conv_state,
                            valid=self.step_valid)[:, None]
        else:
            y, new_conv = ops.causal_conv1d(x=mixed, weight=conv_w, conv_state=conv_state)
            conv_state.copy_(new_conv)
        q, k, v = torch.split(y, [c.key_dim, c.key_dim, c.value_dim], dim=-1)
        q, k, v = q.unflatten(-1, (Hk, dk)), k.unflatten(-1, (Hk, dk)), v.unflatten(-1, (Hv, dv))
        q, k, g, beta = ops.delta_rule_inputs(q=q, k=k, a=a, b=b, A_log=w[p + "A_log"], dt_bias=w[p + "dt_bias"],
                                              eps=1e-6, valid=self.step_valid if decode else None)
        if decode:
            o = recurrent_step_(q=q, k=k, v=v, g=g, beta=beta, state=state.recurrent[slot])
        else:
            o, final = ops.gated_delta_rule_chunked(q=q, k=k, v=v, g=g, beta=beta, initial_state=state.recurrent[slot])
            state.recurrent[slot].copy_(final)
        o = ops.gated_rms_norm(x=o.to(h.dtype), gate=z, weight=w[p + "norm.weight"], eps=c.rms_norm_eps)
        return self._linear(o.reshape(B, T, V), w[p + "out_proj.weight"])

    # ---- gated full attention mixer ----------------------------------------------------
    def attention(self, h, p, state: TritonState, slot: int):
        c, w = self.config, self.w
        B, T, _ = h.shape
        Hq, Hkv, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        proj = self._linear(h, w[p + "qkv_proj.weight"])                           # [B, T, 2Hq·d + 2Hkv·d]
        qg = proj[..., :2 * Hq * d].unflatten(-1, (Hq, 2 * d))                      # per head [q | gate]
        q, gate = qg[..., :d], qg[..., d:]
        k = proj[..., 2 * Hq * d:(2 * Hq + Hkv) * d].unflatten(-1, (Hkv, d))
        v = proj[..., (2 * Hq + Hkv) * d:].unflatten(-1, (Hkv, d))
        decode = T == 1 and min(state.positions) > 0  # (rows may sit apart: each reads its own from state.pos)
        start = None if decode else state.seq_len            # a prompt: every row at one position
        positions = state.pos[:, None] if decode else torch.arange(start, start + T, device=h.device)
        k_cache, v_cache = state.k_cache[slot], state.v_cache[slot]
        q = qk_norm_rope.launch(q=q, k=k, v=v, positions=positions, q_weight=w[p + "q_norm.weight"],
                                k_weight=w[p + "k_norm.weight"], rotary_dim=c.rotary_dim, theta=c.rope_theta,
                                eps=c.rms_norm_eps, k_cache=k_cache, v_cache=v_cache,
                                valid=self.step_valid if decode else None)
        if decode:
            o = gated_attention_decode(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, pos=state.pos)
        else:
            o = gated_attention_prefill(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, start_pos=start)
        return self._linear(o, w[p + "o_proj.weight"])

    # ---- SwiGLU MLP ------------------------------------------------------------------
    def mlp(self, h, p):
        gate_up = self._linear(h, self.w[p + "gate_up_proj.weight"])               # [B, T, 2I]
        return swiglu_linear(gate_up=gate_up, weight=self.w[p + "down_proj.weight"], backend=self._gemv)
