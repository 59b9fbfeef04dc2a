"""What every tier's tests share: a relative-error check that prints the worst elements
and never lets NaN pass, and NaN-poisoned allocations."""

from __future__ import annotations

import contextlib
import math

import torch

from .tolerances import rel_err


def assert_close(out, ref, tol, name="output", scale=None):
    """Relative error ≤ tol, shapes equal, no NaN; on failure show the worst elements. With `scale`
    the error is ‖out − ref‖ / ‖scale‖ instead: for sums whose terms cancel, pass the sum of the
    terms' magnitudes (a well-summed dot keeps its absolute error, not its relative one)."""
    assert out.shape == ref.shape, f"{name}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if scale is None:
        err = rel_err(out, ref)
    else:  # in fp64; NaN or inf in out: inf
        o, r, s = (t.detach().double().cpu() for t in (out, ref, scale))
        err = math.inf if not torch.isfinite(o).all() else ((o - r).norm() / s.norm().clamp_min(1e-30)).item()
    if not err <= tol:
        o, r = out.detach().double().cpu().flatten(), ref.detach().double().cpu().flatten()
        bad = torch.nan_to_num((o - r).abs(), nan=float("inf")).topk(min(5, o.numel())).indices
        worst = ", ".join(f"[{i}] {o[i].item():.6g} vs {r[i].item():.6g}" for i in bad.tolist())
        what = "relative error" if scale is None else "error over the scale's norm"
        raise AssertionError(f"{name}: {what} {err:.3g} > {tol:g}; worst: {worst}")
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
