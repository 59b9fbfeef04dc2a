"""What the tests share: the relative-error check (reference/testing.py) and the
conditions under which Triton kernels can run here."""

import contextlib
import os

import pytest
import torch

from reference.testing import assert_close, poisoned_allocations, rel_err  # noqa: F401  (re-exported)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
TRITON_CAN_RUN = DEVICE == "cuda" or INTERPRET

# marks of the Triton CPU suites: interpreter-only when there is no GPU
TRITON_MARKS = [
    pytest.mark.triton_cpu,
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # numpy, on values the interpreter masks away
    pytest.mark.skipif(not TRITON_CAN_RUN, reason="no GPU: Triton kernels need TRITON_INTERPRET=1 (set by tests/conftest.py)"),
]


@contextlib.contextmanager
def variant_restored(tier):
    """The tier's variant attributes (grid, schedule, ring slots, ...) as they were, on leaving."""
    saved = {name: getattr(tier, name) for name in tier.variant_attributes}
    try:
        yield tier
    finally:
        for name, value in saved.items():
            setattr(tier, name, value)


@contextlib.contextmanager
def debug_poisoned(tier):
    """The tier's debug_poison on (NaN in its workspace, outputs and unwritten cache rows before
    each launch) inside the block."""
    tier.debug_poison = True
    try:
        yield tier
    finally:
        tier.debug_poison = False


def bf16_baseline_tier(config, weights, device="cuda"):
    """(name, tier) of the bf16 run a tier's error is measured against: transformers' where this
    transformers has Qwen3.5, else the bf16 reference."""
    from compare import unavailable_reason
    from reference import ReferenceTier

    if unavailable_reason("hf", device) is None:
        from compare.hf_tier import HFTier

        return "hf", HFTier(config, weights, device=device, dtype=torch.bfloat16)
    return "reference-bf16", ReferenceTier(config, weights, device=device, dtype=torch.bfloat16)


def random_ids(n, seed, vocab_size=248320):
    """[1, n] int64 prompt ids from a seeded CPU generator (default: the 0.8B vocabulary)."""
    return torch.randint(0, vocab_size, (1, n), generator=torch.Generator().manual_seed(seed))


def assert_layers_within_bf16_bounds(got, oracle, base, base_name, keys, tier="megakernel", abs_bound=0.08):
    """Every traced part of `got` within `abs_bound` (8%) of the fp32 `oracle` (None: no absolute
    bound, where the bf16 baseline itself does not keep one) and within 1.5× (+0.005) of the bf16
    baseline's own error; the failure lists every part checked so far."""
    report = []
    for k in keys:
        assert got[k].shape == oracle[k].shape, (k, got[k].shape, oracle[k].shape)
        e, eb = rel_err(got[k], oracle[k]), rel_err(base[k], oracle[k])
        report.append(f"{k}: {tier} {e:.2e}, {base_name} {eb:.2e}")
        assert abs_bound is None or e < abs_bound, "\n".join(report)
        assert e <= 1.5 * eb + 5e-3, "\n".join(report)


def first_candidate_gemms(tier):
    """A PrefillGemms (megakernel/prefill_gemm.py) that runs every GEMM, of any size, by cuBLASLt's first heuristic
    candidate for its shape (prefill_gemm_lt), untimed, with a table of its own: the cuBLASLt path under test
    where the tuner would keep torch's call."""
    from megakernel.prefill_gemm import WORKSPACE_BYTES, PrefillGemms, alignment

    class FirstCandidate(PrefillGemms):
        def choice(self, x, w, out, beta):
            words = self.tier.ext.gemm_lt_candidates(x.shape[0], w.shape[0], x.shape[1], x.stride(0), out.stride(0), 1,
                                                     WORKSPACE_BYTES, alignment(x), alignment(w), alignment(out))
            return torch.tensor(words[0], dtype=torch.int64)

    return FirstCandidate(tier, table={})
