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


def two_rows_prefilled(tier):
    """A 2-row state: rows at positions 3 and 5 where the tier keeps a position per row, else both at 3."""
    state = tier.new_state(batch_size=2, max_seq_len=32)
    if tier.per_row_positions:
        tier.prefill(torch.tensor([[1, 2, 3]]), state, row=0)
        tier.prefill(torch.tensor([[4, 5, 6, 7, 8]]), state, row=1)
    else:
        tier.prefill(torch.tensor([[1, 2, 3], [4, 5, 6]]), state)
    return state


@pytest.mark.parametrize("name", tiers_here())
def test_decode_greedy_is_decode_argmax_step_by_step(name, tiny_config, tiny_weights):
    """decode_greedy: the same ids and the same state as one decode_argmax per step, each step's ids
    handed to on_step in order, the state advanced by the steps run; a batch whose rows sit at
    different positions; stop ids end it after the step where every row has produced one."""
    tier = load_tier(name, tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
    state = two_rows_prefilled(tier)
    start = list(state.positions)
    ref, cur, want = tier.clone_state(state), torch.tensor([9, 10]), []
    for _ in range(6):
        cur = tier.decode_argmax(cur, ref)
        want.append(cur.tolist())
    seen = []
    got = tier.decode_greedy(torch.tensor([9, 10]), state, 6, on_step=lambda i, ids: seen.append((i, ids)))
    assert got.dtype == torch.int64 and got.tolist() == want
    assert seen == list(enumerate(want)) and state.positions == [p + 6 for p in start]
    # stop ids: it ends after the first step by which every row has produced one (at the latest
    # step 4: row 0's id of step 1, row 1's of step 3)
    stop = (want[1][0], want[3][1])
    rows_done = [i for i in range(6) if all(any(w[b] in stop for w in want[:i + 1]) for b in range(2))]
    assert rows_done[0] <= 3
    s2 = tier.new_state(batch_size=2, max_seq_len=32)  # (the state before the steps, again)
    if tier.per_row_positions:
        tier.prefill(torch.tensor([[1, 2, 3]]), s2, row=0)
        tier.prefill(torch.tensor([[4, 5, 6, 7, 8]]), s2, row=1)
    else:
        tier.prefill(torch.tensor([[1, 2, 3], [4, 5, 6]]), s2)
    got = tier.decode_greedy(torch.tensor([9, 10]), s2, 6, stop_ids=stop)
    n = rows_done[0] + 1
    assert got.tolist() == want[:n] and s2.positions == [p + n for p in start]


@pytest.mark.parametrize("name", tiers_here())
def test_decode_greedy_refuses_bad_input_and_leaves_the_state(name, tiny_config, tiny_weights):
    tier = load_tier(name, tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
    state = tier.new_state(max_seq_len=8)
    tier.prefill(torch.tensor([[1, 2, 3]]), state)
    V = tiny_config.vocab_size
    for kwargs, match in (({"steps": 0}, "steps=0"), ({"steps": True}, "steps=True"), ({"steps": 6}, "exceed"),
                          ({"steps": 2, "stop_ids": [V]}, f"stop_ids holds {V}"),
                          ({"steps": 2, "stop_ids": ["a"]}, r"stop_ids=\['a'\]; expected a sequence"),
                          ({"steps": 2, "stop_ids": None}, "stop_ids=None; expected a sequence"),
                          ({"steps": 2, "stop_ids": 5}, "stop_ids=5; expected a sequence"),
                          ({"steps": 2, "stop_ids": [True]}, "stop_ids holds True"),
                          ({"steps": 2, "on_step": 3}, "on_step must be callable")):
        with pytest.raises(TierInputError, match=match):
            tier.decode_greedy(torch.tensor([4]), state, **kwargs)
        assert state.positions == [3]
    with pytest.raises(TierInputError, match="outside the vocabulary"):
        tier.decode_greedy(torch.tensor([V]), state, 2)
    assert state.positions == [3]
    with pytest.raises(TierInputError, match="empty state"):
        tier.decode_greedy(torch.tensor([4]), tier.new_state(max_seq_len=8), 2)


@pytest.mark.parametrize("name", tiers_here())
def test_decode_greedy_counts_the_steps_run_when_on_step_raises(name, tiny_config, tiny_weights):
    """A consumer that stops reading (on_step raises) loses nothing: the state counts every step that ran."""
    tier = load_tier(name, tiny_config, tiny_weights, device="cpu", dtype=torch.float32)
    state = tier.new_state(max_seq_len=16)
    tier.prefill(torch.tensor([[1, 2, 3]]), state)

    def stop_reading(i, ids):
        if i == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        tier.decode_greedy(torch.tensor([4]), state, 5, on_step=stop_reading)
    ran = state.positions[0] - 3
    assert ran >= 3  # (a tier whose launch runs on may have run all 5)
    assert info.value.decoded_ids.shape == (ran, 1)  # every step that ran, the last row the input to go on from
    tier.decode_argmax(torch.tensor([4]), state)  # and the state decodes on from there
    assert state.positions == [4 + ran]


@pytest.mark.parametrize("name", tiers_here())
def test_decode_sample_is_the_specs_draw_step_by_step(name, tiny_config, tiny_weights):
    """decode_sample: each step's ids are reference/sampling.py's draw from that step's logits at the
    positions it decodes (rows at different positions), the same seed the same ids, another seed
    other ids; the state advanced by the steps run."""
    from reference import sampling

    tier = load_tier(name, tiny_config, tiny_weights, device="cpu", dtype=torch.float32)

    fresh = lambda: two_rows_prefilled(tier)  # noqa: E731
    state, cur, want = fresh(), torch.tensor([9, 10]), []
    for _ in range(6):
        positions = list(state.positions)
        cur = sampling.sample(tier.decode(cur, state), 1.5, 42, positions)
        want.append(cur.tolist())
    got = tier.decode_sample(torch.tensor([9, 10]), (s := fresh()), 6, 1.5, seed=42)
    assert got.tolist() == want and s.positions == state.positions
    other = tier.decode_sample(torch.tensor([9, 10]), fresh(), 6, 1.5, seed=43)
    assert other.tolist() != want
    with pytest.raises(TierInputError, match="temperature=0"):
        tier.decode_sample(torch.tensor([9, 10]), s, 2, 0)
    with pytest.raises(TierInputError, match="temperature=inf"):
        tier.decode_sample(torch.tensor([9, 10]), s, 2, float("inf"))
    with pytest.raises(TierInputError, match="seed=-1"):
        tier.decode_sample(torch.tensor([9, 10]), s, 2, 1.0, seed=-1)
    with pytest.raises(TierInputError, match=r"seed=4294967296"):
        tier.decode_sample(torch.tensor([9, 10]), s, 2, 1.0, seed=2 ** 32)
    assert s.positions == state.positions
