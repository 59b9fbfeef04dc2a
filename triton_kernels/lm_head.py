"""The output head: logits = x Eᵀ (the tied embedding) and the greedy argmax over them.

lm_head: the GEMV kernel with an fp32 output (values rounded to the model dtype first, as
a bf16 matmul returns them), cuBLAS for several rows or when asked.
argmax: two passes with no host sync. Pass 1: one program per (row, block of BLOCK
logits) writes its block's max and the first index holding it. Pass 2: one program per
row reduces those partials; ties go to the lowest index, as torch.argmax.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from ._util import interpreting, next_pow2
from .gemv import gemv


def lm_head(*, x, weight, backend="triton"):
    """x [B, D] → fp32 logits [B, vocab]."""
    if backend == "triton" and x.numel() == x.shape[-1]:
        return gemv(x, weight, out_dtype=torch.float32)
    return F.linear(x, weight).float()


@triton.jit
def _argmax_blocks_kernel(x_ptr, vmax_ptr, imax_ptr, V, n_blocks, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    blk = tl.program_id(1)
    cols = blk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * V + cols, mask=cols < V, other=float("-inf")).to(tl.float32)
    best = tl.max(x, axis=0)
    first = tl.min(tl.where(x == best, cols, 2147483647), axis=0)
    tl.store(vmax_ptr + row * n_blocks + blk, best)
    tl.store(imax_ptr + row * n_blocks + blk, first)


@triton.jit
def _argmax_reduce_kernel(vmax_ptr, imax_ptr, out_ptr, valid_ptr, fallback_ptr, n_blocks, BLOCK: tl.constexpr,
                          HAS_VALID: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    i = tl.arange(0, BLOCK)
    v = tl.load(vmax_ptr + row * n_blocks + i, mask=i < n_blocks, other=float("-inf"))
    idx = tl.load(imax_ptr + row * n_blocks + i, mask=i < n_blocks, other=2147483647)
    best = tl.max(v, axis=0)
    first = tl.min(tl.where(v == best, idx, 2147483647), axis=0).to(tl.int64)
    if HAS_VALID:  # a refused step (step_check) hands its input id back
        first = tl.where(tl.load(valid_ptr) != 0, first, tl.load(fallback_ptr + row))
    tl.store(out_ptr + row, first)


def argmax(logits, valid=None, fallback=None):
    """logits [B, V] → [B] int64 on the device, first index of the maximum; `fallback` [B]
    int64 where `valid` (int64 [1] on the device, step_check) is 0."""
    logits = logits.contiguous()
    B, V = logits.shape
    block = 1024 if interpreting() else 8192
    n_blocks = triton.cdiv(V, block)
    vmax = torch.empty(B, n_blocks, dtype=torch.float32, device=logits.device)
    imax = torch.empty(B, n_blocks, dtype=torch.int32, device=logits.device)
    out = torch.empty(B, dtype=torch.int64, device=logits.device)
    _argmax_blocks_kernel[(B, n_blocks)](logits, vmax, imax, V, n_blocks, BLOCK=block, num_warps=8)
    has_valid = valid is not None
    _argmax_reduce_kernel[(B,)](vmax, imax, out, valid if has_valid else out, fallback if has_valid else out, n_blocks,
                                BLOCK=next_pow2(n_blocks), HAS_VALID=has_valid, num_warps=4)
    return out
