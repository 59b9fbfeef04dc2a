"""Small helpers the kernel launchers share."""

from __future__ import annotations

import os

import torch


def interpreting() -> bool:
    """True when Triton runs kernels in its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def next_pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def rows_view(t: torch.Tensor) -> tuple[torch.Tensor, int]:
    """`t` [..., W] seen as rows of W unit-stride elements → (tensor, row stride), so
    row r starts at r·stride. Keeps a strided view (a slice of a wider projection) when
    the leading dims fold into one stride; copies otherwise."""
    if t.stride(-1) != 1:
        t = t.contiguous()
    row_stride, expected = None, None
    for size, stride in reversed(list(zip(t.shape[:-1], t.stride()[:-1]))):
        if size == 1:
            continue
        if row_stride is None:
            row_stride = stride
        elif stride != expected:
            t = t.contiguous()
            return t, t.shape[-1]
        expected = stride * size
    return t, (t.shape[-1] if row_stride is None else row_stride)
