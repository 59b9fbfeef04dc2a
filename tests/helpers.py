"""Small helpers the tests share: relative error that never lets NaN pass."""

from reference.tolerances import rel_err  # noqa: F401  (re-exported for tests)


def assert_close(x, ref, tol, what=""):
    assert x.shape == ref.shape, f"{what}: shape {tuple(x.shape)} != {tuple(ref.shape)}"
    err = rel_err(x, ref)
    if not err <= tol:
        diff = (x.double() - ref.double()).abs().flatten()
        idx = diff.nan_to_num(float("inf")).topk(min(5, diff.numel())).indices
        worst = ", ".join(f"[{i}] {x.flatten()[i].item():.6g} vs {ref.flatten()[i].item():.6g}" for i in idx.tolist())
        raise AssertionError(f"{what}: relative error {err:.3g} > {tol:g}; worst: {worst}")
