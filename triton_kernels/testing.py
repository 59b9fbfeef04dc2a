"""What the Triton tier's tests and its device script share: the relative error, a check
that prints the worst elements, and NaN-poisoned allocations."""

from __future__ import annotations

import contextlib

import torch


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in fp64 (inf when out holds a NaN or an inf)."""
    out, ref = out.detach().double().cpu(), ref.detach().double().cpu()
    if not torch.isfinite(out).all():
        return float("inf")
    denom = ref.norm().item()
    diff = (out - ref).norm().item()
    return diff / denom if denom > 0 else diff


def assert_close(out, ref, tol, name="output"):
    """Relative error ≤ tol, shapes equal, no NaN; on failure show the worst elements."""
    assert out.shape == ref.shape, f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    err = rel_err(out, ref)
    if not err <= tol:
        o, r = out.detach().double().cpu().flatten(), ref.detach().double().cpu().flatten()
        bad = torch.nan_to_num((o - r).abs(), nan=float("inf")).topk(min(5, o.numel())).indices
        worst = ", ".join(f"[{i}] {o[i].item():.6g} vs {r[i].item():.6g}" for i in bad.tolist())
        raise AssertionError(f"{name}: relative error {err:.3g} > {tol:g}; worst: {worst}")
    return err


@contextlib.contextmanager
def poisoned_allocations():
    """Inside, torch.empty fills floats with NaN (ints with their max), so an output element
    a kernel forgot to write fails the comparison instead of passing on leftover memory."""
    was_on = torch.are_deterministic_algorithms_enabled()
    was_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    was_fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was_on, warn_only=was_warn)
        torch.utils.deterministic.fill_uninitialized_memory = was_fill
