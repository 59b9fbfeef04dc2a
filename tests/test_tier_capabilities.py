"""What `compare` may use of a tier besides the interface, declared on `Tier` with defaults:
`clone_state`, `decode_timed` (per-part timing), `slow`, `prefill_note`, `variant_attributes`.
On the CPU: the reference and hf tiers at the tiny config, the Triton tier in the interpreter."""

from __future__ import annotations

import pytest
import torch
from helpers import TRITON_MARKS

from compare import load_tier, unavailable_reason
from compare.layer_times import Marks, parts
from reference import Tier, TierInputError


def triton_here():
    """The Triton tier (in the interpreter) with the Triton suites' marks, where it runs."""
    return [pytest.param("triton", marks=TRITON_MARKS)] if unavailable_reason("triton", "cpu") is None else []


def tiers_here():
    return [n for n in ("reference", "hf") if unavailable_reason(n, "cpu") is None] + triton_here()


@pytest.mark.parametrize("name", tiers_here())
def test_clone_state_is_independent(name, tiny_config, tiny_weights):
    tier = load_tier(name, tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
    state = tier.new_state(max_seq_len=16)
    tier.prefill(torch.tensor([[1, 2, 3]]), state)
    copy = tier.clone_state(state)
    assert copy is not state and copy.seq_len == state.seq_len == 3
    a = tier.decode(torch.tensor([4]), state)
    b = tier.decode(torch.tensor([4]), copy)
    assert torch.equal(a, b)
    tier.decode(torch.tensor([5]), state)  # advancing one leaves the other where it was
    assert copy.seq_len == 4 and state.seq_len == 5
    c = tier.decode(torch.tensor([6]), tier.clone_state(copy))
    d = tier.decode(torch.tensor([6]), copy)
    assert torch.equal(c, d)


@pytest.mark.parametrize("name", tiers_here())
def test_decode_timed_times_every_part_and_advances_the_state(name, tiny_config, tiny_weights):
    tier = load_tier(name, tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
    assert tier.part_timing
    state = tier.new_state(max_seq_len=16)
    tier.prefill(torch.tensor([[1, 2, 3]]), state)
    reference = tier.clone_state(state)
    marks = Marks("cpu")
    nxt = tier.decode_timed(torch.tensor([4]), state, marks)
    assert state.seq_len == 4 and nxt.shape == (1,)
    assert list(marks.durations()) == parts(tiny_config)
    assert int(nxt) == int(tier.decode(torch.tensor([4]), reference).argmax(-1))  # the same step as decode_argmax
    with pytest.raises(TierInputError, match="decode on an empty state"):
        tier.decode_timed(torch.tensor([4]), tier.new_state(max_seq_len=4), Marks("cpu"))


def test_declared_capabilities(tiny_config, tiny_weights):
    assert (Tier.slow, Tier.prefill_note, Tier.part_timing, Tier.variant_attributes) == (False, None, None, ())
    ref = load_tier("reference", tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
    assert not ref.slow and ref.variant_attributes == ()
    if unavailable_reason("hf", "cpu") is None:
        hf = load_tier("hf", tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
        assert hf.slow


@pytest.mark.parametrize("name", triton_here())
def test_triton_variants_and_its_eager_timed_step(name, tiny_config, tiny_weights):
    """Its variant attributes are settable switches; decode_timed runs eagerly on its own and
    leaves `cuda_graph` as it was."""
    tier = load_tier(name, tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
    assert tier.variant_attributes == ("cuda_graph", "prefill_graph", "gemv")
    tier.gemv, tier.cuda_graph = "cublas", False
    assert tier.model.gemv == "cublas" and tier.cuda_graph is False
    with pytest.raises(ValueError, match="gemv backend 'nope'"):
        tier.gemv = "nope"
    tier.gemv, tier.cuda_graph = "triton", True
    state = tier.new_state(max_seq_len=8)
    tier.prefill(torch.tensor([[1, 2]]), state)
    tier.decode_timed(torch.tensor([3]), state, Marks("cpu"))
    assert tier.cuda_graph is True and state.seq_len == 3 and int(state.pos) == 3
