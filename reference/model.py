"""The Qwen3.5 text forward pass, written once over an `ops` namespace.

`HybridModel(config, weights, ops)` runs embedding → 24 × (mixer + MLP) → norm → lm_head
with whatever module supplies the ops: `reference.ops` (plain PyTorch) or a kernel tier
offering the same keyword-only functions. The state is a `ModelState`:
    conv      [n_linear, B, conv_dim, K-1]      model dtype   (pre-conv inputs)
    recurrent [n_linear, B, Hv, dk, dv]         fp32          (S, key-major)
    k_cache, v_cache [n_full, B, Hkv, max_seq, d] model dtype (k after norm + RoPE)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from .config import LINEAR, ModelConfig
from .interface import TierState, record


@dataclass(eq=False)
class ModelState(TierState):
    conv: torch.Tensor = None
    recurrent: torch.Tensor = None
    k_cache: torch.Tensor = None
    v_cache: torch.Tensor = None


ROW_TENSORS = ("conv", "recurrent", "k_cache", "v_cache")  # ModelState's tensors: batch is dim 1


def row_view(state: ModelState, row: int, **fields) -> ModelState:
    """Row `row` of a batch state as a batch-1 state whose tensors are views into the batch's
    (writing it writes the row in place); `fields` replace others (a tier's own)."""
    views = {name: getattr(state, name)[:, row:row + 1] for name in ROW_TENSORS}
    return dataclasses.replace(state, batch_size=1, positions=[state.positions[row]], unchecked=0, **views, **fields)


def reset_row(state: ModelState, row: int) -> None:
    """Row `row` as a new state's: conv inputs, recurrent state and K/V cache zeroed."""
    for name in ROW_TENSORS:
        getattr(state, name)[:, row].zero_()


def forward_rows(forward, ids, state: ModelState, trace, view=row_view):
    """A decode step of a batch whose rows sit at different positions: each row through
    `forward(ids_row, row_state, trace_row)` on its own view, logits and trace concatenated."""
    logits, traces = [], []
    for r in range(state.batch_size):
        t = {} if trace is not None else None
        logits.append(forward(ids[r:r + 1], view(state, r), t))
        traces.append(t)
    if trace is not None:
        for name in traces[0]:
            trace[name] = torch.cat([t[name] for t in traces])
    return torch.cat(logits)


def new_model_state(tier: str, config: ModelConfig, batch_size: int, max_seq_len: int, device, dtype) -> ModelState:
    c, B = config, batch_size
    n_lin, n_full = len(c.linear_layers), len(c.full_layers)
    kw = dict(device=device)
    return ModelState(
        tier=tier, config=c, batch_size=B, max_seq_len=max_seq_len,
        conv=torch.zeros(n_lin, B, c.conv_dim, c.linear_conv_kernel_dim - 1, dtype=dtype, **kw),
        recurrent=torch.zeros(n_lin, B, c.linear_num_value_heads, c.linear_key_head_dim,
                              c.linear_value_head_dim, dtype=torch.float32, **kw),
        k_cache=torch.zeros(n_full, B, c.num_key_value_heads, max_seq_len, c.head_dim, dtype=dtype, **kw),
        v_cache=torch.zeros(n_full, B, c.num_key_value_heads, max_seq_len, c.head_dim, dtype=dtype, **kw),
    )


class HybridModel:
    def __init__(self, config: ModelConfig, weights: dict, ops):
        self.config = config
        self.w = weights
        self.ops = ops

    def forward(self, ids, state: ModelState, trace=None, layer_hook=None):
        """ids [B, T] at positions [state.seq_len, state.seq_len + T) → fp32 logits [B, vocab]
        of the last position. T == 1 takes the decode path (conv step, recurrent delta rule).
        `layer_hook(name)`, if given, is called as each part ends ("embed", "layers.{i}",
        "norm", "lm_head"): the per-layer timers of `compare bench --layers` hang there."""
        c, ops, w = self.config, self.ops, self.w
        hook = layer_hook or (lambda name: None)
        decode = ids.shape[1] == 1 and min(state.positions) > 0
        x = ops.embedding(ids=ids, weight=w["model.embed_tokens.weight"])          # [B, T, D]
        record(trace, "embed", x)
        hook("embed")
        residual = None
        for i, kind in enumerate(c.layer_types):
            p = f"model.layers.{i}."
            h, residual = ops.add_rms_norm(x=x, residual=residual, weight=w[p + "input_layernorm.weight"],
                                           eps=c.rms_norm_eps)
            if kind == LINEAR:
                x = self.deltanet(h, p + "linear_attn.", state, c.layer_slot(i), decode)
            else:
                x = self.attention(h, p + "self_attn.", state, c.layer_slot(i))
            h, residual = ops.add_rms_norm(x=x, residual=residual,
                                           weight=w[p + "post_attention_layernorm.weight"], eps=c.rms_norm_eps)
            x = self.mlp(h, p + "mlp.")
            if trace is not None:
                record(trace, f"layers.{i}", (residual + x).to(x.dtype))
            hook(f"layers.{i}")
        h, _ = ops.add_rms_norm(x=x, residual=residual, weight=w["model.norm.weight"], eps=c.rms_norm_eps)
        record(trace, "norm", h)
        hook("norm")
        head = "model.embed_tokens.weight" if c.tie_word_embeddings else "lm_head.weight"  # (tied, or its own)
        logits = ops.lm_head(x=h[:, -1], weight=w[head])
        hook("lm_head")
        return logits

    # ---- Gated DeltaNet mixer ------------------------------------------------------
    def deltanet(self, h, p, state: ModelState, slot: int, decode: bool):
        c, ops, w = self.config, self.ops, self.w
        B, T, _ = h.shape
        Hk, Hv, dk, dv = c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim
        mixed = ops.linear(x=h, weight=w[p + "in_proj_qkv.weight"])               # [B, T, conv_dim]
        z = ops.linear(x=h, weight=w[p + "in_proj_z.weight"]).view(B, T, Hv, dv)
        b = ops.linear(x=h, weight=w[p + "in_proj_b.weight"])                     # [B, T, Hv]
        a = ops.linear(x=h, weight=w[p + "in_proj_a.weight"])                     # [B, T, Hv]
        conv_w = w[p + "conv1d.weight"][:, 0, :]                                   # [conv_dim, K]
        if decode:
            y, state.conv[slot] = ops.causal_conv1d_step(x=mixed[:, 0], weight=conv_w, conv_state=state.conv[slot])
            y = y[:, None]
        else:
            y, state.conv[slot] = ops.causal_conv1d(x=mixed, weight=conv_w, conv_state=state.conv[slot])
        q, k, v = torch.split(y, [c.key_dim, c.key_dim, c.value_dim], dim=-1)
        q, k, v = q.reshape(B, T, Hk, dk), k.reshape(B, T, Hk, dk), v.reshape(B, T, Hv, dv)
        q, k, g, beta = ops.delta_rule_inputs(q=q, k=k, a=a, b=b, A_log=w[p + "A_log"], dt_bias=w[p + "dt_bias"],
                                              eps=1e-6)
        rule = ops.gated_delta_rule_recurrent if decode else ops.gated_delta_rule_chunked
        o, state.recurrent[slot] = rule(q=q, k=k, v=v, g=g, beta=beta, initial_state=state.recurrent[slot])
        o = ops.gated_rms_norm(x=o.to(h.dtype), gate=z, weight=w[p + "norm.weight"], eps=c.rms_norm_eps)
        return ops.linear(x=o.reshape(B, T, c.value_dim), weight=w[p + "out_proj.weight"])

    # ---- gated full attention mixer ----------------------------------------------------
    def attention(self, h, p, state: ModelState, slot: int):
        c, ops, w = self.config, self.ops, self.w
        B, T, _ = h.shape
        Hq, Hkv, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        qg = ops.linear(x=h, weight=w[p + "q_proj.weight"]).view(B, T, Hq, 2 * d)  # per head [q | gate]
        q, gate = qg[..., :d], qg[..., d:]
        k = ops.linear(x=h, weight=w[p + "k_proj.weight"]).view(B, T, Hkv, d)
        v = ops.linear(x=h, weight=w[p + "v_proj.weight"]).view(B, T, Hkv, d)
        start = state.seq_len
        positions = torch.arange(start, start + T, device=h.device)
        q, k = ops.qk_norm_rope(q=q, k=k, q_weight=w[p + "q_norm.weight"], k_weight=w[p + "k_norm.weight"],
                                positions=positions, rotary_dim=c.rotary_dim, theta=c.rope_theta, eps=c.rms_norm_eps)
        state.k_cache[slot, :, :, start:start + T] = k.transpose(1, 2)
        state.v_cache[slot, :, :, start:start + T] = v.transpose(1, 2)
        o = ops.gated_attention(q=q, gate=gate, k_cache=state.k_cache[slot], v_cache=state.v_cache[slot],
                                start_pos=start)
        return ops.linear(x=o, weight=w[p + "o_proj.weight"])

    # ---- SwiGLU MLP ------------------------------------------------------------------
    def mlp(self, h, p):
        ops, w = self.ops, self.w
        gate = ops.linear(x=h, weight=w[p + "gate_proj.weight"])
        up = ops.linear(x=h, weight=w[p + "up_proj.weight"])
        return ops.linear(x=ops.swiglu(gate=gate, up=up), weight=w[p + "down_proj.weight"])
