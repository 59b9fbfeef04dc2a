"""The gated delta rule through fla 0.6.0's kernels (spec §9): `chunk_gated_delta_rule` for
prefill and `fused_recurrent_gated_delta_rule` for decode.

Our q̂ arrives L2-normalised and already scaled by dk^-1/2, so fla gets scale=1; g is the
fp32 log-decay and β the post-sigmoid gate; the state layout is fla's default
[B, Hv, dk, dv] fp32 (key-major), the same as ours. Value head h reads key head
h // (Hv/Hk) in both. `recurrent_step_` launches fla's fused-recurrent kernel with the
state as both its input and its output, so a decode step updates the state in place
(no copy, and a captured CUDA graph stays valid).
"""

from __future__ import annotations

import torch
import triton
from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from fla.ops.gated_delta_rule.fused_recurrent import fused_recurrent_gated_delta_rule_fwd_kernel

from . import fla_interpreter

fla_interpreter.patch()


def gated_delta_rule_chunked(*, q, k, v, g, beta, initial_state=None, chunk_size=64):
    """q, k [B, T, Hk, dk]; v [B, T, Hv, dv]; g, beta [B, T, Hv] →
    (o fp32 [B, T, Hv, dv], final state fp32 [B, Hv, dk, dv]). Runs in fp32."""
    if chunk_size not in (16, 32, 64):
        raise ValueError(f"chunk_size={chunk_size}: fla's chunked gated delta rule takes 16, 32 or 64")
    state = None if initial_state is None else initial_state.float().contiguous()
    o, final = chunk_gated_delta_rule(q.float(), k.float(), v.float(), g.float(), beta.float(), scale=1.0,
                                      initial_state=state, output_final_state=True, chunk_size=chunk_size)
    return o, final


def gated_delta_rule_recurrent(*, q, k, v, g, beta, initial_state=None):
    """Token by token (fla's fused recurrent kernel); same tensors as the chunked form."""
    state = None if initial_state is None else initial_state.float().contiguous()
    o, final = fused_recurrent_gated_delta_rule(q.float(), k.float(), v.float(), g=g.float(), beta=beta.float(),
                                                scale=1.0, initial_state=state, output_final_state=True)
    return o, final


def recurrent_step_(*, q, k, v, g, beta, state):
    """One decode step that updates `state` [B, Hv, dk, dv] fp32 in place and returns
    o [B, 1, Hv, dv] in v's dtype. q, k fp32 [B, 1, Hk, dk]; g, beta fp32 [B, 1, Hv]."""
    B, T, Hk, K = k.shape
    Hv, V = v.shape[2], v.shape[3]
    assert T == 1 and state.is_contiguous() and state.dtype == torch.float32
    q, k, v, g, beta = (t.contiguous() for t in (q, k, v, g, beta))
    o = torch.empty_like(v)
    BV = min(8, triton.next_power_of_2(V))
    grid = (triton.cdiv(V, BV) * B * Hv,)
    # each program loads its [dk, BV] state tile first and stores it last: in place is safe
    fused_recurrent_gated_delta_rule_fwd_kernel[grid](
        q=q, k=k, v=v, g=g, gk=None, gv=None, beta=beta, A_log=None, dt_bias=None, o=o, h0=state, ht=state,
        cu_seqlens=None, scale=1.0, T=T, H=Hk, HV=Hv, K=K, V=V, BK=triton.next_power_of_2(K), BV=BV,
        USE_QK_L2NORM_IN_KERNEL=False, IS_BETA_HEADWISE=True, STATE_V_FIRST=False,
        APPLY_BETA_SIGMOID=False, ALLOW_NEG_EIGVAL=False, num_warps=1, num_stages=3)
    return o
