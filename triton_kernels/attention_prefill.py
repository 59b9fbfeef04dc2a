"""Gated causal GQA attention for T new tokens over the KV cache (prefill), flash style.

One program per (block of BLOCK_M queries, batch · query head) owns those queries' output
rows [BLOCK_M, d]. It walks the cache in BLOCK_N-key tiles up to the last key its queries
may see (query i sits at start_pos + i and sees keys ≤ that position), with an online
softmax in fp32, then casts to the model dtype and applies σ(gate) (rounded as
transformers' bf16 ops). GQA: query head h reads kv head h // (Hq/Hkv).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._util import interpreting, next_pow2
from .online_softmax import online_softmax_step


@triton.jit
def _prefill_kernel(q_ptr, g_ptr, k_ptr, v_ptr, out_ptr, T, start_pos, Hq, Hkv,
                    sq_b, sq_t, sq_h, sg_b, sg_t, sg_h, sk_b, sk_h, sk_s, scale,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr, IEEE: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // Hq).to(tl.int64)
    h = bh % Hq
    kvh = h // (Hq // Hkv)
    i = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)                   # query index in the new tokens
    d = tl.arange(0, D)
    rows = i < T
    q = tl.load(q_ptr + b * sq_b + i[:, None] * sq_t + h * sq_h + d[None, :], mask=rows[:, None], other=0.0)
    q_pos = start_pos + i
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    kv = b * sk_b + kvh * sk_h
    n_end = tl.minimum(start_pos + (pid_m + 1) * BLOCK_M, start_pos + T)   # keys this block may see
    for n0 in range(0, n_end, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N)
        valid = n < n_end
        k = tl.load(k_ptr + kv + n[:, None] * sk_s + d[None, :], mask=valid[:, None], other=0.0)
        v = tl.load(v_ptr + kv + n[:, None] * sk_s + d[None, :], mask=valid[:, None], other=0.0)
        causal = valid[None, :] & (n[None, :] <= q_pos[:, None])
        m, l, acc = online_softmax_step(q, k, v, causal, m, l, acc, scale, IEEE)
    dtype = out_ptr.dtype.element_ty
    o = (acc / l[:, None]).to(dtype).to(tl.float32)
    gate = tl.load(g_ptr + b * sg_b + i[:, None] * sg_t + h * sg_h + d[None, :], mask=rows[:, None], other=0.0)
    sig = (1.0 / (1.0 + tl.exp(-gate.to(tl.float32)))).to(dtype).to(tl.float32)
    tl.store(out_ptr + ((b * T + i[:, None]) * Hq + h) * D + d[None, :], (o * sig).to(dtype), mask=rows[:, None])


def gated_attention_prefill(*, q, gate, k_cache, v_cache, start_pos):
    """q, gate [B, T, Hq, d] (views allowed); caches [B, Hkv, S, d] holding positions
    [0, start_pos + T). Returns [B, T, Hq·d] in the model dtype."""
    B, T, Hq, D = q.shape
    assert D == next_pow2(D), "prefill attention: power-of-2 head dim"
    Hkv = k_cache.shape[1]
    assert q.stride(-1) == 1 and gate.stride(-1) == 1 and k_cache.stride(-1) == 1
    assert k_cache.stride() == v_cache.stride()
    out = torch.empty(B, T, Hq * D, dtype=q.dtype, device=q.device)
    if interpreting():
        block_m, block_n, warps = 16, 16, 4
    else:
        block_m, block_n, warps = (64, 32, 8) if D >= 128 else (64, 64, 4)
    grid = (triton.cdiv(T, block_m), B * Hq)
    _prefill_kernel[grid](q, gate, k_cache, v_cache, out, T, start_pos, Hq, Hkv,
                          q.stride(0), q.stride(1), q.stride(2), gate.stride(0), gate.stride(1), gate.stride(2),
                          k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), D ** -0.5,
                          BLOCK_M=block_m, BLOCK_N=block_n, D=D, IEEE=q.dtype == torch.float32,
                          num_warps=warps)
    return out
