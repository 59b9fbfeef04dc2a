"""RMSNorms: the zero-centred one fused with the residual add (`add_rms_norm`, `rms_norm`)
and DeltaNet's gated one (`gated_rms_norm`).

add_rms_norm: one program per BLOCK_R token rows (1 on a GPU); it owns whole hidden
vectors [D], adds the residual, writes the rounded sum (the new residual) and the
normalised rows.
gated_rms_norm: one program per BLOCK_R (token, head) rows of d values; it normalises
each row, multiplies by w and gates it with silu(z).
Reductions in fp32; rounding to the model dtype where transformers rounds.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._util import interpreting, next_pow2, rows_view


@triton.jit
def _add_rms_norm_kernel(x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, R, D, stride_x, stride_r, eps,
                         HAS_RESIDUAL: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < R) & (cols[None, :] < D)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    if HAS_RESIDUAL:
        r = tl.load(res_ptr + rows[:, None] * stride_r + cols[None, :], mask=mask, other=0.0)
        h = (r.to(tl.float32) + x.to(tl.float32)).to(res_out_ptr.dtype.element_ty)   # rounded like the residual stream
        tl.store(res_out_ptr + rows[:, None] * D + cols[None, :], h, mask=mask)
        h = h.to(tl.float32)
    else:
        h = x.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=1) / D + eps)
    w = tl.load(w_ptr + cols, mask=cols < D, other=0.0).to(tl.float32)
    y = h * rstd[:, None] * (1.0 + w[None, :])
    tl.store(out_ptr + rows[:, None] * D + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def add_rms_norm(*, x, residual, weight, eps):
    """residual ← residual + x (rounded), then the (1+w) RMSNorm of it → (normed, residual).
    residual None: the norm of x, and x is the residual."""
    D = x.shape[-1]
    xr, sx = rows_view(x)
    rows = x.numel() // D if D else 0
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if residual is None:
        res_in, sr, res_out = xr, sx, x
    else:
        res_in, sr = rows_view(residual)
        res_out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if rows:
        block_r = 16 if interpreting() else 1
        _add_rms_norm_kernel[(triton.cdiv(rows, block_r),)](
            xr, res_in, weight, out, res_out, rows, D, sx, sr, eps, HAS_RESIDUAL=residual is not None,
            BLOCK_R=block_r, BLOCK_D=next_pow2(D), num_warps=4 if D <= 2048 else 8)
    return out, res_out


def rms_norm(*, x, weight, eps):
    """Zero-centred RMSNorm: x·rsqrt(mean(x²)+ε)·(1+w), fp32 inside, cast to x.dtype."""
    return add_rms_norm(x=x, residual=None, weight=weight, eps=eps)[0]


@triton.jit
def _gated_rms_norm_kernel(x_ptr, z_ptr, w_ptr, out_ptr, R, H, D, sx_t, sx_h, sz_t, sz_h, eps,
                           BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)    # row = token · H + head
    t, h = r // H, r % H
    cols = tl.arange(0, BLOCK_D)
    mask = (r[:, None] < R) & (cols[None, :] < D)
    x = tl.load(x_ptr + (t * sx_t + h * sx_h)[:, None] + cols[None, :], mask=mask, other=0.0)
    z = tl.load(z_ptr + (t * sz_t + h * sz_h)[:, None] + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < D, other=0.0)
    xf = x.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=1) / D + eps)                    # [BLOCK_R]
    y = (xf * rstd[:, None]).to(x.dtype)                                        # normalised, rounded
    y = (w[None, :].to(tl.float32) * y.to(tl.float32)).to(x.dtype)              # · w in the model dtype
    gate = z / (1.0 + tl.exp(-z))                                               # silu(z), fp32
    tl.store(out_ptr + r[:, None] * D + cols[None, :], (y.to(tl.float32) * gate).to(out_ptr.dtype.element_ty),
             mask=mask)


def _folds(t):
    """Whether the dims before the last two fold into one stride (view(-1, H, d) works)."""
    try:
        t.view(-1, *t.shape[-2:])
        return True
    except RuntimeError:
        return False


def gated_rms_norm(*, x, gate, weight, eps):
    """[x·rsqrt(mean(x²)+ε)]·w ⊙ silu(gate) over the last dim (plain w, norm first)."""
    D = x.shape[-1]
    x3 = x if x.dim() >= 2 else x[None]
    g3 = gate if gate.dim() >= 2 else gate[None]
    H = x3.shape[-2]
    if not _folds(x3) or x3.stride(-1) != 1:
        x3 = x3.contiguous()
    if not _folds(g3) or g3.stride(-1) != 1:
        g3 = g3.contiguous()
    x3, g3 = x3.view(-1, H, D), g3.view(-1, H, D)
    R = x3.shape[0] * H
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if R:
        block_r = 64 if interpreting() else 16
        _gated_rms_norm_kernel[(triton.cdiv(R, block_r),)](
            x3, g3, weight, out, R, H, D, x3.stride(0), x3.stride(1), g3.stride(0), g3.stride(1), eps,
            BLOCK_R=block_r, BLOCK_D=next_pow2(D), num_warps=4)
    return out
