"""Gated GQA attention for one new token over the KV cache: flash-decoding split-K.

Pass 1: one program per (batch, kv head, split) owns a contiguous range of cache
positions and all G = Hq/Hkv query heads that read this kv head (padded to 16 rows for
tl.dot); it runs an online softmax over its range and writes the unnormalised partial
output with its running max and sum. The number of splits is fixed (a CUDA graph can
replay it) and each row's context length is read from the device (row b's new token sits
at pos[b] and sees keys 0..pos[b]), so each split sizes its range at run time; splits past
the end of their row write an empty partial.
Pass 2: one program per (batch, query head) merges the splits, casts to the model dtype
and applies the output gate σ(gate) (rounded as transformers' bf16 ops).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._util import interpreting, next_pow2
from .online_softmax import online_softmax_step


@triton.jit
def _decode_split_kernel(q_ptr, k_ptr, v_ptr, pos_ptr, acc_ptr, m_ptr, l_ptr,
                         Hkv, sp_b, sq_b, sq_h, sk_b, sk_h, sk_s, scale,
                         GROUP: tl.constexpr, NUM_SPLITS: tl.constexpr, BLOCK_G: tl.constexpr,
                         BLOCK_N: tl.constexpr, D: tl.constexpr, IEEE: tl.constexpr):
    bh = tl.program_id(0)
    split = tl.program_id(1)
    b = (bh // Hkv).to(tl.int64)
    h = bh % Hkv
    n_ctx = tl.load(pos_ptr + b * sp_b).to(tl.int32) + 1      # keys 0..position of row b's new token
    per_split = tl.cdiv(tl.cdiv(n_ctx, NUM_SPLITS), BLOCK_N) * BLOCK_N
    start = split * per_split
    end = tl.minimum(start + per_split, n_ctx)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, D)
    heads = h * GROUP + g
    q = tl.load(q_ptr + b * sq_b + heads[:, None] * sq_h + d[None, :], mask=g[:, None] < GROUP, other=0.0)
    m = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, D], dtype=tl.float32)
    kv = b * sk_b + h * sk_h
    for n0 in range(start, end, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N)
        valid = n < end
        k = tl.load(k_ptr + kv + n[:, None] * sk_s + d[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_ptr + kv + n[:, None] * sk_s + d[None, :], mask=valid[:, None], other=0.0)
        m, l, acc = online_softmax_step(q, k, v, valid[None, :], m, l, acc, scale, IEEE)
    part = (b * Hkv * GROUP + heads) * NUM_SPLITS + split         # [B, Hq, NUM_SPLITS] index
    tl.store(acc_ptr + part[:, None] * D + d[None, :], acc, mask=g[:, None] < GROUP)
    tl.store(m_ptr + part, m, mask=g < GROUP)
    tl.store(l_ptr + part, l, mask=g < GROUP)


@triton.jit
def _decode_merge_kernel(acc_ptr, m_ptr, l_ptr, gate_ptr, out_ptr, Hq, sg_b, sg_h,
                         NUM_SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, D: tl.constexpr):
    bh = tl.program_id(0).to(tl.int64)
    b = bh // Hq
    h = bh % Hq
    s = tl.arange(0, BLOCK_S)
    d = tl.arange(0, D)
    m = tl.load(m_ptr + bh * NUM_SPLITS + s, mask=s < NUM_SPLITS, other=float("-inf"))
    l = tl.load(l_ptr + bh * NUM_SPLITS + s, mask=s < NUM_SPLITS, other=0.0)
    m_all = tl.max(m, axis=0)
    norm = tl.sum(tl.exp(m - m_all) * l, axis=0)                  # an empty split weighs exp(-inf) = 0
    total = tl.zeros([D], dtype=tl.float32)
    for i in range(NUM_SPLITS):
        w = tl.exp(tl.load(m_ptr + bh * NUM_SPLITS + i) - m_all)
        total += w * tl.load(acc_ptr + (bh * NUM_SPLITS + i) * D + d)
    dtype = out_ptr.dtype.element_ty
    o = (total / norm).to(dtype).to(tl.float32)
    gate = tl.load(gate_ptr + b * sg_b + h * sg_h + d).to(tl.float32)
    sig = (1.0 / (1.0 + tl.exp(-gate))).to(dtype).to(tl.float32)
    tl.store(out_ptr + bh * D + d, (o * sig).to(dtype))


def num_splits(max_keys: int) -> int:
    """Splits for a cache of `max_keys` positions: about 128 keys each, at most 64."""
    return max(1, min(64, triton.cdiv(max_keys, 128)))


def gated_attention_decode(*, q, gate, k_cache, v_cache, pos, splits=None):
    """q, gate [B, 1, Hq, d] (views allowed); caches [B, Hkv, S, d]; pos: int64 on the device,
    [B] (row b's new token at pos[b]: its keys 0..pos[b] are attended) or [1] (every row's).
    Returns [B, 1, Hq·d] in the model dtype."""
    B, T, Hq, D = q.shape
    assert T == 1 and D == next_pow2(D), "decode attention: one token, power-of-2 head dim"
    Hkv = k_cache.shape[1]
    group = Hq // Hkv
    splits = splits or num_splits(k_cache.shape[2])
    assert q.stride(-1) == 1 and gate.stride(-1) == 1 and k_cache.stride(-1) == 1
    assert k_cache.stride() == v_cache.stride()
    acc = torch.empty(B, Hq, splits, D, dtype=torch.float32, device=q.device)
    m = torch.empty(B, Hq, splits, dtype=torch.float32, device=q.device)
    l = torch.empty_like(m)
    out = torch.empty(B, 1, Hq * D, dtype=q.dtype, device=q.device)
    block_n = 16 if interpreting() else 64
    pos = pos.expand(B)                                       # [1]: stride 0 over the rows
    _decode_split_kernel[(B * Hkv, splits)](
        q, k_cache, v_cache, pos, acc, m, l, Hkv, pos.stride(0), q.stride(0), q.stride(2),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), D ** -0.5,
        GROUP=group, NUM_SPLITS=splits, BLOCK_G=max(16, next_pow2(group)), BLOCK_N=block_n, D=D,
        IEEE=q.dtype == torch.float32, num_warps=4)
    _decode_merge_kernel[(B * Hq,)](acc, m, l, gate, out, Hq, gate.stride(0), gate.stride(2),
                                    NUM_SPLITS=splits, BLOCK_S=next_pow2(splits), D=D, num_warps=4)
    return out
