"""Matrix-vector product for batch-1 decode: y = W x, W [N, K] row-major, x one row.

One program owns BLOCK_N output rows: it streams their [BLOCK_N, BLOCK_K] weight tiles
(evict-first, 16-byte loads), multiplies by the matching slice of x, accumulates in fp32
and reduces across K once at the end. Decode is weight-bandwidth bound; on the H100 two
rows per program over all of K in one pass (K ≤ 4096) measured best for every shape of
the model, ahead of wider row blocks and of split-K (docs/results/2026-11-22-h100-dev-reports/triton_dev.md).
SWIGLU=True reads x as a fused [gate | up] vector and computes silu(gate) ⊙ up on the
fly (the down projection's input), so the MLP needs no separate SwiGLU launch.
`linear` dispatches: one row of x and backend "triton" → this kernel; otherwise
cuBLAS through torch (prefill GEMMs, batch > 1, or backend "cublas").
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ._util import interpreting, next_pow2
from .swiglu import swiglu, swiglu_rounded

BACKENDS = ("triton", "cublas")


@triton.jit
def _gemv_kernel(x_ptr, w_ptr, y_ptr, N, K, stride_w, up_offset,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SWIGLU: tl.constexpr,
                 EVEN_N: tl.constexpr, EVEN_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    w_rows = w_ptr + rows.to(tl.int64)[:, None] * stride_w
    acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        if EVEN_K:
            x = tl.load(x_ptr + cols).to(tl.float32)
        else:
            x = tl.load(x_ptr + cols, mask=cols < K, other=0.0).to(tl.float32)
        if SWIGLU:
            if EVEN_K:
                up = tl.load(x_ptr + up_offset + cols).to(tl.float32)
            else:
                up = tl.load(x_ptr + up_offset + cols, mask=cols < K, other=0.0).to(tl.float32)
            x = swiglu_rounded(x, up, x_ptr.dtype.element_ty)
        if EVEN_N and EVEN_K:
            w = tl.load(w_rows + cols[None, :], eviction_policy="evict_first")
        else:
            w = tl.load(w_rows + cols[None, :], mask=(rows[:, None] < N) & (cols[None, :] < K), other=0.0,
                        eviction_policy="evict_first")
        acc += w.to(tl.float32) * x[None, :]
    y = tl.sum(acc, axis=1).to(x_ptr.dtype.element_ty).to(y_ptr.dtype.element_ty)   # rounded as cuBLAS rounds
    if EVEN_N:
        tl.store(y_ptr + rows, y)
    else:
        tl.store(y_ptr + rows, y, mask=rows < N)


# (BLOCK_N, BLOCK_K, num_warps) per weight shape [N, K], measured best on an H100
# (docs/results/2026-11-22-h100-dev-reports/triton_dev.md; `python -m triton_kernels.bench_dev` sweeps them again)
TUNED = {
    (8224, 1024): (4, 1024, 4),         # DeltaNet [qkv | z | b | a]
    (7168, 1024): (2, 1024, 4),         # MLP [gate | up]
    (5120, 1024): (2, 1024, 4),         # attention [q+gate | k | v]
    (1024, 2048): (2, 2048, 8),         # DeltaNet out, attention o
    (1024, 3584): (2, 4096, 4),         # MLP down
    (248320, 1024): (2, 1024, 4),       # lm_head
}


def gemv_config(N: int, K: int) -> tuple[int, int, int]:
    """(BLOCK_N, BLOCK_K, num_warps) for an [N, K] weight: the measured table, else two
    rows per program over all of K (one pass up to K = 4096), as the table mostly says."""
    if interpreting():
        return min(32, next_pow2(N)), min(128, next_pow2(K)), 4
    if (N, K) in TUNED:
        return TUNED[(N, K)]
    return 2, min(next_pow2(K), 4096), 4


def gemv(x, weight, out_dtype=None, swiglu_input=False, config=None):
    """x: one row ([..., K], or [..., 2K] fused gate|up when swiglu_input) → W x [..., N].
    config: (BLOCK_N, BLOCK_K, num_warps), default `gemv_config`."""
    N, K = weight.shape
    assert weight.stride(1) == 1
    x_flat = x.reshape(-1)
    if x_flat.stride(0) != 1:
        x_flat = x_flat.contiguous()
    assert x_flat.numel() == (2 * K if swiglu_input else K)
    y = torch.empty(*x.shape[:-1], N, dtype=out_dtype or x.dtype, device=x.device)
    block_n, block_k, num_warps = config or gemv_config(N, K)
    _gemv_kernel[(triton.cdiv(N, block_n),)](x_flat, weight, y, N, K, weight.stride(0), K,
                                             BLOCK_N=block_n, BLOCK_K=block_k, SWIGLU=swiglu_input,
                                             EVEN_N=N % block_n == 0, EVEN_K=K % block_k == 0,
                                             num_warps=num_warps)
    return y


def linear(*, x, weight, backend="triton"):
    """x [..., in] · Wᵀ → [..., out] in x.dtype: the Triton GEMV when x is one row."""
    if backend == "triton" and x.numel() == x.shape[-1]:
        return gemv(x, weight)
    return F.linear(x, weight)


def swiglu_linear(*, gate_up, weight, backend="triton"):
    """W · (silu(gate) ⊙ up) for a fused gate_up [..., 2I]: one launch when it is one row."""
    if backend == "triton" and gate_up.numel() == gate_up.shape[-1]:
        return gemv(gate_up, weight, swiglu_input=True)
    I = gate_up.shape[-1] // 2
    return F.linear(swiglu(gate=gate_up[..., :I], up=gate_up[..., I:]), weight)
