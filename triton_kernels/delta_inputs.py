"""The delta rule's inputs: q/k L2 norm (q also scaled by dk^-1/2), β = σ(b) and the
log-decay g = −exp(A_log)·softplus(a + dt_bias), all returned in fp32.

delta_rule_inputs: one program per (block of BLOCK_T tokens, key head) owns those tokens'
q and k rows [BLOCK_T, dk] and the gates of the value heads that read this key head
(Hv/Hk of them). BLOCK_T = 1 on a GPU.
l2norm: one program per BLOCK_R rows.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._util import interpreting, next_pow2, rows_view


@triton.jit
def _l2norm_rows(src, dst, rows, D, eps, scale, BLOCK_D: tl.constexpr):
    """src, dst: [BLOCK_R] row base pointers of D values; rows: which are real."""
    cols = tl.arange(0, BLOCK_D)
    mask = rows[:, None] & (cols[None, :] < D)
    x = tl.load(src[:, None] + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    y = x * (1.0 / tl.sqrt(tl.sum(x * x, axis=1) + eps))[:, None] * scale
    tl.store(dst[:, None] + cols[None, :], y, mask=mask)


@triton.jit
def _softplus(x):
    """ln(1 + eˣ), x past 20 passed through (as torch); log1p by Goldberg's correction."""
    e = tl.exp(tl.minimum(x, 20.0))
    u = 1.0 + e
    exact = u == 1.0
    log1p = tl.where(exact, e, tl.log(u) * (e / tl.where(exact, 1.0, u - 1.0)))
    return tl.where(x > 20.0, x, log1p)


@triton.jit
def _delta_inputs_kernel(q_ptr, k_ptr, a_ptr, b_ptr, alog_ptr, dtb_ptr, qo_ptr, ko_ptr, g_ptr, beta_ptr, valid_ptr,
                         NT, Hk, Hv, D, sq_t, sk_t, sa_t, sb_t, eps, scale,
                         GROUP: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_G: tl.constexpr,
                         HAS_VALID: tl.constexpr):
    tok = (tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)
    h = tl.program_id(1)
    rows = tok < NT
    _l2norm_rows(q_ptr + tok * sq_t + h * D, qo_ptr + (tok * Hk + h) * D, rows, D, eps, scale, BLOCK_D)
    _l2norm_rows(k_ptr + tok * sk_t + h * D, ko_ptr + (tok * Hk + h) * D, rows, D, eps, 1.0, BLOCK_D)
    hv = h * GROUP + tl.arange(0, BLOCK_G)                 # value heads reading key head h
    m = rows[:, None] & (hv < (h + 1) * GROUP)[None, :]
    a = tl.load(a_ptr + tok[:, None] * sa_t + hv[None, :], mask=m, other=0.0).to(tl.float32)
    dt_bias = tl.load(dtb_ptr + hv, mask=hv < Hv, other=0.0).to(tl.float32)[None, :]
    A_log = tl.load(alog_ptr + hv, mask=hv < Hv, other=0.0).to(tl.float32)[None, :]
    g = -tl.exp(A_log) * _softplus(a + dt_bias)
    b = tl.load(b_ptr + tok[:, None] * sb_t + hv[None, :], mask=m, other=0.0)
    beta = tl.sigmoid(b.to(tl.float32)).to(b.dtype).to(tl.float32)  # σ in the model dtype, then fp32
    if HAS_VALID:  # a refused step (step_check): decay exp(0) = 1 and β = 0 leave the state as it was
        ok = tl.load(valid_ptr) != 0
        g = tl.where(ok, g, 0.0)
        beta = tl.where(ok, beta, 0.0)
    tl.store(g_ptr + tok[:, None] * Hv + hv[None, :], g, mask=m)
    tl.store(beta_ptr + tok[:, None] * Hv + hv[None, :], beta, mask=m)


def _token_rows(t):
    """[B, T, H, d] → ([B, T, H·d] view, token stride); copies unless each token's heads are packed."""
    if t.stride(-1) != 1 or t.stride(-2) != t.shape[-1]:
        t = t.contiguous()
    return rows_view(t.flatten(-2))


def delta_rule_inputs(*, q, k, a, b, A_log, dt_bias, eps=1e-6, valid=None):
    """q, k [B, T, Hk, dk]; a, b [B, T, Hv] → (q̂ scaled, k̂, g, β), all fp32; g = β = 0 where
    `valid` (int64 [1] on the device, step_check) is 0."""
    B, T, Hk, D = q.shape
    Hv = a.shape[-1]
    group = Hv // Hk
    q_rows, sq = _token_rows(q)
    k_rows, sk = _token_rows(k)
    a_rows, sa = rows_view(a)
    b_rows, sb = rows_view(b)
    q_hat = torch.empty(B, T, Hk, D, dtype=torch.float32, device=q.device)
    k_hat = torch.empty_like(q_hat)
    g = torch.empty(B, T, Hv, dtype=torch.float32, device=q.device)
    beta = torch.empty_like(g)
    if B * T:
        block_t = 16 if interpreting() else 1
        _delta_inputs_kernel[(triton.cdiv(B * T, block_t), Hk)](
            q_rows, k_rows, a_rows, b_rows, A_log, dt_bias, q_hat, k_hat, g, beta, g if valid is None else valid,
            B * T, Hk, Hv, D, sq, sk, sa, sb, eps, D ** -0.5, GROUP=group, BLOCK_T=block_t, BLOCK_D=next_pow2(D),
            BLOCK_G=next_pow2(group), HAS_VALID=valid is not None, num_warps=1 if D <= 128 else 2)
    return q_hat, k_hat, g, beta


@triton.jit
def _l2norm_kernel(x_ptr, y_ptr, R, D, sx, eps, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    _l2norm_rows(x_ptr + r * sx, y_ptr + r * D, r < R, D, eps, 1.0, BLOCK_D)


def l2norm(*, x, eps=1e-6):
    """x / sqrt(Σx² + ε) over the last dim, fp32 out."""
    D = x.shape[-1]
    rows, sx = rows_view(x)
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    n = x.numel() // D if D else 0
    if n:
        block_r = 16 if interpreting() else 4
        _l2norm_kernel[(triton.cdiv(n, block_r),)](rows, y, n, D, sx, eps, BLOCK_R=block_r,
                                                    BLOCK_D=next_pow2(D), num_warps=4)
    return y
