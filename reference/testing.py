"""What every tier's tests share: a relative-error check that prints the worst elements
and never lets NaN pass, and NaN-poisoned allocations."""

from __future__ import annotations

import contextlib

import torch

from .tolerances import rel_err


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
