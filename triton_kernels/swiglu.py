"""SwiGLU: silu(gate) ⊙ up, in the model dtype (each step rounded as torch's bf16 ops do).

One program per (token row, block of BLOCK channels). gate and up may be two halves of
one fused gate_up projection (row-strided views).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._util import next_pow2, rows_view


@triton.jit
def swiglu_rounded(g, u, dtype: tl.constexpr):
    """silu(g) rounded to `dtype`, times u, rounded: fp32 in, fp32 out."""
    s = (g / (1.0 + tl.exp(-g))).to(dtype).to(tl.float32)
    return (s * u).to(dtype).to(tl.float32)


@triton.jit
def _swiglu_kernel(g_ptr, u_ptr, o_ptr, I, sg, su, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < I
    g = tl.load(g_ptr + row * sg + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + row * su + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(o_ptr + row * I + cols, swiglu_rounded(g, u, o_ptr.dtype.element_ty).to(o_ptr.dtype.element_ty),
             mask=mask)


def swiglu(*, gate, up):
    """silu(gate) ⊙ up → a new tensor shaped like gate."""
    I = gate.shape[-1]
    g, sg = rows_view(gate)
    u, su = rows_view(up)
    out = torch.empty(gate.shape, dtype=gate.dtype, device=gate.device)
    rows = gate.numel() // I if I else 0
    if rows:
        BLOCK = min(1024, next_pow2(I))
        _swiglu_kernel[(rows, triton.cdiv(I, BLOCK))](g, u, out, I, sg, su, BLOCK=BLOCK, num_warps=4)
    return out
