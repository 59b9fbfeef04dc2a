"""Per-head zero-centred RMSNorm of q and k, then partial NeoX RoPE at absolute positions.

One program per (block of BLOCK_T tokens, head) over the Hq query heads and then the Hkv
key heads; it owns those tokens' rows [BLOCK_T, d] of one head (BLOCK_T = 1 on a GPU).
Token t of row b sits at positions[b, t]: a prompt's positions are shared by its rows
(a [T] range), a decode step's are each row's own (the tier's device positions, [B, 1]).
RoPE pairs dim i with i ± r/2 inside the first r dims, so the program loads each row twice
(as itself and as its partner) instead of shuffling registers.
Optionally the key programs write k (and copy v) straight into the KV cache at their
position, which is how the tier's forward appends to the cache.
Rounding as transformers: norm in fp32 → model dtype; cos/sin in fp32 → model dtype;
each product and the sum rounded to the model dtype.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ._util import interpreting, next_pow2


@triton.jit
def _norm_rope_rows(src, dst, rows, w_ptr, inv_freq_ptr, pos, D, eps, ROT: tl.constexpr, HALF: tl.constexpr,
                    BLOCK_D: tl.constexpr):
    """src, dst: [BLOCK_T] row base pointers; pos [BLOCK_T]; one head row of D dims each."""
    cols = tl.arange(0, BLOCK_D)
    partner = tl.where(cols < HALF, cols + HALF, tl.where(cols < ROT, cols - HALF, cols))
    mask = rows[:, None] & (cols[None, :] < D)
    x = tl.load(src[:, None] + cols[None, :], mask=mask, other=0.0)
    xp = tl.load(src[:, None] + partner[None, :], mask=mask, other=0.0).to(tl.float32)
    xf = x.to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(xf * xf, axis=1) / D + eps)[:, None]
    w = tl.load(w_ptr + cols, mask=cols < D, other=0.0).to(tl.float32)[None, :]
    wp = tl.load(w_ptr + partner, mask=cols < D, other=0.0).to(tl.float32)[None, :]
    y = (xf * rstd * (1.0 + w)).to(x.dtype).to(tl.float32)
    yp = (xp * rstd * (1.0 + wp)).to(x.dtype).to(tl.float32)
    inv_freq = tl.load(inv_freq_ptr + (cols % HALF), mask=cols < ROT, other=0.0)
    angle = pos.to(tl.float32)[:, None] * inv_freq[None, :]
    c = tl.cos(angle).to(x.dtype).to(tl.float32)
    s = tl.sin(angle).to(x.dtype).to(tl.float32)
    sign = tl.where(cols < HALF, -1.0, 1.0)[None, :]
    rotated = (y * c).to(x.dtype).to(tl.float32) + (sign * yp * s).to(x.dtype).to(tl.float32)
    out = tl.where(cols[None, :] < ROT, rotated, y)
    tl.store(dst[:, None] + cols[None, :], out.to(dst.dtype.element_ty), mask=mask)


@triton.jit
def _qk_norm_rope_kernel(q_ptr, k_ptr, v_ptr, qo_ptr, ko_ptr, vo_ptr, qw_ptr, kw_ptr, inv_freq_ptr, pos_ptr,
                         valid_ptr, NT, T, Hq, Hkv, D, sp_b, sp_t,
                         sq_b, sq_t, sq_h, sk_b, sk_t, sk_h, sv_b, sv_t, sv_h,
                         so_b, so_h, so_t, eps,
                         WRITE_CACHE: tl.constexpr, ROT: tl.constexpr, HALF: tl.constexpr, BLOCK_T: tl.constexpr,
                         BLOCK_D: tl.constexpr, HAS_VALID: tl.constexpr):
    tok = (tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)    # token = b · T + t
    head = tl.program_id(1)
    rows = tok < NT
    b = tok // T
    t = tok % T
    pos = tl.load(pos_ptr + b * sp_b + t * sp_t, mask=rows, other=0)
    if head < Hq:
        _norm_rope_rows(q_ptr + b * sq_b + t * sq_t + head * sq_h, qo_ptr + (tok * Hq + head) * D, rows,
                        qw_ptr, inv_freq_ptr, pos, D, eps, ROT, HALF, BLOCK_D)
    else:
        h = head - Hq
        if HAS_VALID:                                       # a refused step (step_check) writes no cache row
            rows = rows & (tl.load(valid_ptr + 0 * tok) != 0)
        # the key's destination: the cache row at its position, or a plain [B, T, Hkv, d] tensor
        if WRITE_CACHE:
            dst = b * so_b + h * so_h + pos.to(tl.int64) * so_t
        else:
            dst = b * so_b + h * so_h + t * so_t
        _norm_rope_rows(k_ptr + b * sk_b + t * sk_t + h * sk_h, ko_ptr + dst, rows,
                        kw_ptr, inv_freq_ptr, pos, D, eps, ROT, HALF, BLOCK_D)
        if WRITE_CACHE:
            cols = tl.arange(0, BLOCK_D)
            mask = rows[:, None] & (cols[None, :] < D)
            v = tl.load(v_ptr + (b * sv_b + t * sv_t + h * sv_h)[:, None] + cols[None, :], mask=mask)
            tl.store(vo_ptr + dst[:, None] + cols[None, :], v, mask=mask)


@functools.lru_cache(maxsize=16)
def _inv_freq(rotary_dim: int, theta: float, device: torch.device) -> torch.Tensor:
    """θ^(−2i/r), i < r/2, in fp32 exactly as reference.ops.rope_cos_sin builds it."""
    exponent = torch.arange(0, rotary_dim, 2, dtype=torch.float32, device=device) / rotary_dim
    return 1.0 / (theta ** exponent)


def _head_strides(t):
    if t.stride(-1) != 1:
        t = t.contiguous()
    return t, t.stride(0), t.stride(1), t.stride(2)


def launch(*, q, k, positions, q_weight, k_weight, rotary_dim, theta, eps, v=None, k_cache=None, v_cache=None,
           valid=None):
    """q [B, T, Hq, d], k (and v) [B, T, Hkv, d], positions int on the device: [T] (every
    row's tokens at the same positions) or [B, T] (row b's at positions[b], e.g. [B, 1] in decode).
    Without caches → (q, k) normed and rotated. With k_cache/v_cache [B, Hkv, S, d] → q,
    and k, v are written into the caches at `positions` (nothing is read from the host),
    unless `valid` (int64 [1] on the device, step_check) is 0."""
    B, T, Hq, D = q.shape
    Hkv = k.shape[2]
    assert rotary_dim % 2 == 0 and rotary_dim <= D
    q, sq_b, sq_t, sq_h = _head_strides(q)
    k, sk_b, sk_t, sk_h = _head_strides(k)
    q_out = torch.empty(B, T, Hq, D, dtype=q.dtype, device=q.device)
    write_cache = k_cache is not None
    if write_cache:
        v, sv_b, sv_t, sv_h = _head_strides(v)
        k_out, v_out = k_cache, v_cache
        assert k_cache.stride() == v_cache.stride() and k_cache.stride(-1) == 1
        so_b, so_h, so_t = k_cache.stride(0), k_cache.stride(1), k_cache.stride(2)
    else:
        v, sv_b, sv_t, sv_h = k, 0, 0, 0
        k_out = torch.empty(B, T, Hkv, D, dtype=k.dtype, device=k.device)
        v_out = k_out
        so_b, so_h, so_t = T * Hkv * D, D, Hkv * D
    positions = positions.expand(B, T)                       # a [T] range: stride 0 over the rows
    inv_freq = _inv_freq(rotary_dim, float(theta), q.device)
    if B * T:
        block_t = 16 if interpreting() else 1
        _qk_norm_rope_kernel[(triton.cdiv(B * T, block_t), Hq + Hkv)](
            q, k, v, q_out, k_out, v_out, q_weight, k_weight, inv_freq, positions,
            positions if valid is None else valid, B * T, T, Hq, Hkv, D, positions.stride(0), positions.stride(1),
            sq_b, sq_t, sq_h, sk_b, sk_t, sk_h, sv_b, sv_t, sv_h, so_b, so_h, so_t, eps,
            WRITE_CACHE=write_cache, ROT=rotary_dim, HALF=rotary_dim // 2, BLOCK_T=block_t, BLOCK_D=next_pow2(D),
            HAS_VALID=valid is not None, num_warps=2 if D <= 256 else 4)
    return q_out if write_cache else (q_out, k_out)


def qk_norm_rope(*, q, k, q_weight, k_weight, positions, rotary_dim, theta, eps):
    """Per-head (1+w) RMSNorm of q [B, T, Hq, d] and k [B, T, Hkv, d], then partial RoPE at
    `positions` [T]. Returns (q, k) in the model dtype."""
    return launch(q=q, k=k, positions=positions, q_weight=q_weight, k_weight=k_weight,
                  rotary_dim=rotary_dim, theta=theta, eps=eps)
