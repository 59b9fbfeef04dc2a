"""How close a tier must be to the fp32 reference (relative L2 error ‖x − ref‖/‖ref‖).

- fp32 tiers: every traced tensor within FP32_REL (measured: transformers' fp32 run is
  within 4e-6 of the reference at the 0.8B shapes).
- bf16 tiers: every traced tensor within BF16_CEILING, and, where transformers' own bf16
  run is measured on the same inputs (the yardstick), within HF_FACTOR × its error plus
  BF16_SLACK. Measured at the 0.8B shapes with random weights: transformers bf16 is
  ~0.8% off after layer 0 and ~5% after layer 23.
NaN or inf is never within bounds.
"""

from __future__ import annotations

import math

import torch

FP32_REL = 1e-4
BF16_CEILING = 0.10
HF_FACTOR = 1.5
BF16_SLACK = 2e-3


def bound(dtype, yardstick: float | None = None) -> float:
    """The largest relative error a tier running in `dtype` may show on one tensor."""
    if dtype == torch.float32:
        return FP32_REL
    if yardstick is None or not math.isfinite(yardstick):
        return BF16_CEILING
    return min(BF16_CEILING, HF_FACTOR * yardstick + BF16_SLACK)


def within_bound(err: float, limit: float) -> bool:
    """A finite error at most `limit` (NaN and inf never pass)."""
    return math.isfinite(err) and err <= limit


def within(err: float, dtype, yardstick: float | None = None) -> bool:
    return within_bound(err, bound(dtype, yardstick))


def rel_err(x: torch.Tensor, ref: torch.Tensor) -> float:
    """‖x − ref‖ / ‖ref‖ in fp64; inf when x holds NaN/inf or the shapes differ."""
    if x.shape != ref.shape:
        return math.inf
    x, ref = x.detach().double().cpu(), ref.detach().double().cpu()
    if not torch.isfinite(x).all():
        return math.inf
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()
