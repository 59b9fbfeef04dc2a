"""Causal depthwise conv1d + SiLU over time (DeltaNet's short conv), for prefill and for
one decode step.

Prefill: one program per (batch, time block, channel block) owns a [BLOCK_T, BLOCK_C] tile
of outputs; tap j reads the input K-1-j steps back, from the cached state before the
sequence start. The programs of time block 0 also write the new state (the last K-1 inputs).
Step: one program per (batch, channel block) owns BLOCK_C channels; it reads the K-1 cached
inputs, writes the shifted state (in place if asked) and the output.
Sums in fp32, rounded to the model dtype before the SiLU, as a bf16 conv then F.silu do.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._util import next_pow2, rows_view


@triton.jit
def _silu_rounded(acc, dtype: tl.constexpr):
    y = acc.to(dtype).to(tl.float32)
    return (y / (1.0 + tl.exp(-y))).to(dtype)


@triton.jit
def _conv_prefill_kernel(x_ptr, w_ptr, s_ptr, y_ptr, ns_ptr, T, C, sx_b, sx_t,
                         HAS_STATE: tl.constexpr, K: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    pid_t = tl.program_id(1)
    ch = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    cmask = ch < C
    acc = tl.zeros([BLOCK_T, BLOCK_C], dtype=tl.float32)
    for j in tl.static_range(K):
        src = t - (K - 1 - j)                                               # input time of tap j
        w = tl.load(w_ptr + ch * K + j, mask=cmask, other=0.0).to(tl.float32)
        inside = (src[:, None] >= 0) & (t[:, None] < T) & cmask[None, :]
        xv = tl.load(x_ptr + b * sx_b + src[:, None] * sx_t + ch[None, :], mask=inside, other=0.0).to(tl.float32)
        if HAS_STATE:
            before = (src[:, None] < 0) & (t[:, None] < T) & cmask[None, :]
            sv = tl.load(s_ptr + (b * C + ch[None, :]) * (K - 1) + (K - 1 + src[:, None]), mask=before, other=0.0)
            xv += sv.to(tl.float32)
        acc += w[None, :] * xv
    y = _silu_rounded(acc, y_ptr.dtype.element_ty)
    tl.store(y_ptr + (b * T + t[:, None]) * C + ch[None, :], y, mask=(t[:, None] < T) & cmask[None, :])
    if pid_t == 0:
        for i in tl.static_range(K - 1):
            col = tl.zeros([BLOCK_C], dtype=tl.int32) + (T - (K - 1) + i)   # input time of window column T + i
            v = tl.load(x_ptr + b * sx_b + col * sx_t + ch, mask=cmask & (col >= 0), other=0.0)
            if HAS_STATE:
                v += tl.load(s_ptr + (b * C + ch) * (K - 1) + (K - 1 + col), mask=cmask & (col < 0), other=0.0)
            tl.store(ns_ptr + (b * C + ch) * (K - 1) + i, v.to(ns_ptr.dtype.element_ty), mask=cmask)


def causal_conv1d(*, x, weight, conv_state=None):
    """x [B, T, C], weight [C, K], conv_state [B, C, K-1] or None (zeros)
    → (y [B, T, C], new conv_state [B, C, K-1])."""
    B, T, C = x.shape
    K = weight.shape[1]
    if x.stride(-1) != 1:
        x = x.contiguous()
    weight = weight.contiguous()
    y = torch.empty(B, T, C, dtype=x.dtype, device=x.device)
    new_state = torch.empty(B, C, K - 1, dtype=x.dtype, device=x.device)
    state = conv_state.contiguous() if conv_state is not None else new_state
    BLOCK_T = min(16, next_pow2(T))
    BLOCK_C = 128 if C >= 128 else next_pow2(C)
    grid = (B, triton.cdiv(T, BLOCK_T), triton.cdiv(C, BLOCK_C))
    _conv_prefill_kernel[grid](x, weight, state, y, new_state, T, C, x.stride(0), x.stride(1),
                               HAS_STATE=conv_state is not None, K=K, BLOCK_T=BLOCK_T, BLOCK_C=BLOCK_C,
                               num_warps=4)
    return y, new_state


@triton.jit
def _conv_step_kernel(x_ptr, w_ptr, s_ptr, y_ptr, ns_ptr, valid_ptr, C, sx_b, K: tl.constexpr, KP: tl.constexpr,
                      BLOCK_C: tl.constexpr, HAS_VALID: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    ch = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    j = tl.arange(0, KP)                                   # window column: K-1 cached inputs, then x
    cmask = ch < C
    x = tl.load(x_ptr + b * sx_b + ch, mask=cmask, other=0.0)
    state = s_ptr + (b * C + ch[:, None]) * (K - 1) + j[None, :]
    cached = tl.load(state, mask=cmask[:, None] & (j[None, :] < K - 1), other=0.0)
    window = tl.where(j[None, :] == K - 1, x[:, None], cached)                         # [BLOCK_C, KP]
    w = tl.load(w_ptr + ch[:, None] * K + j[None, :], mask=cmask[:, None] & (j[None, :] < K), other=0.0)
    acc = tl.sum(w.to(tl.float32) * window.to(tl.float32), axis=1)
    tl.debug_barrier()                                     # all state reads before the in-place shift
    shifted = ns_ptr + (b * C + ch[:, None]) * (K - 1) + (j[None, :] - 1)
    keep = cmask[:, None] & (j[None, :] >= 1) & (j[None, :] < K)
    if HAS_VALID:                                          # a refused step (step_check) leaves the state
        keep = keep & (tl.load(valid_ptr + 0 * ch) != 0)[:, None]
    tl.store(shifted, window.to(ns_ptr.dtype.element_ty), mask=keep)
    tl.store(y_ptr + b * C + ch, _silu_rounded(acc, y_ptr.dtype.element_ty), mask=cmask)


def step(*, x, weight, conv_state, out_state, valid=None):
    """One decode step; writes the new state into `out_state` (may be `conv_state`), unless
    `valid` (int64 [1] on the device, step_check) is 0."""
    B, C = x.shape
    K = weight.shape[1]
    x, sx = rows_view(x)
    y = torch.empty(B, C, dtype=x.dtype, device=x.device)
    BLOCK_C = 256 if C >= 256 else next_pow2(C)
    _conv_step_kernel[(B, triton.cdiv(C, BLOCK_C))](x, weight, conv_state, y, out_state,
                                                    y if valid is None else valid, C, sx, K=K, KP=next_pow2(K),
                                                    BLOCK_C=BLOCK_C, HAS_VALID=valid is not None, num_warps=4)
    return y


def causal_conv1d_step(*, x, weight, conv_state):
    """One decode step. x [B, C], conv_state [B, C, K-1] → (y [B, C], new conv_state)."""
    new_state = torch.empty_like(conv_state)
    y = step(x=x, weight=weight.contiguous(), conv_state=conv_state.contiguous(), out_state=new_state)
    return y, new_state
