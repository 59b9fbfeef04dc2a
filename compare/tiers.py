"""The registry of tiers: `load_tier(name, config, weights, device, dtype)`.

Tiers are imported only when asked for, so a machine without a GPU (or without a
tier's packages) can still run the others; `unavailable_reason` says why one cannot.
"""

from __future__ import annotations

import importlib

import torch

from reference import TierUnavailable

# name → (module, class); the order is the order tables show them in
TIERS = {
    "reference": ("reference.tier", "ReferenceTier"),
    "hf": ("compare.hf_tier", "HFTier"),
    "triton": ("triton_kernels.tier", "TritonTier"),
    "megakernel": ("megakernel.tier", "MegakernelTier"),
}


def tier_class(name: str):
    if name not in TIERS:
        raise TierUnavailable(f"unknown tier {name!r}; expected one of {list(TIERS)}")
    module, cls = TIERS[name]
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as e:
        raise TierUnavailable(f"tier {name!r} cannot be imported here: {e}") from e


def unavailable_reason(name: str, device="cpu") -> str | None:
    """None if tier `name` can run on `device` on this machine, else why not."""
    try:
        return tier_class(name).unavailable_reason(torch.device(device))
    except TierUnavailable as e:
        return str(e)


def available_tiers(device="cpu") -> list[str]:
    return [name for name in TIERS if unavailable_reason(name, device) is None]


def load_tier(name: str, config, weights, device="cpu", dtype=torch.bfloat16):
    reason = unavailable_reason(name, device)
    if reason is not None:
        raise TierUnavailable(f"tier {name!r} cannot run on {device}: {reason}")
    return tier_class(name)(config, weights, device=device, dtype=dtype)
