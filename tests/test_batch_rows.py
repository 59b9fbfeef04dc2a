"""Rows of a batch state (issue 19), on the CPU at the tiny config: every row of a batch behaves
exactly as if it ran alone (reference/model.py row_view / forward_rows define it).

- test_rows_equal_alone (hypothesis): batch 1..4, rows prefilled one by one in a drawn order with
  their own prompt lengths, then a drawn program of decode / decode_argmax steps (random ids or
  the greedy ids fed back), row prefills that continue a row, reset_row (refilled at once or left
  empty for a while) and refused calls. Each row's logits equal the same calls on a batch-1
  state of the same tier ("alone"): fp32 within TIGHT (the batched matmuls of rows at one
  position round differently from one row's by ~1e-7), bf16 within the bf16 bound of
  reference/tolerances.py (and within it of the fp32 reference alone); greedy ids equal the
  alone run's wherever its top two logits are further apart than the two runs differ.
  Every refused call (an id outside the vocabulary in one row of a decode / decode_argmax / row
  prefill, a row prefill past max_seq_len, a bad row index to prefill and reset_row, [2, T] ids
  to a row prefill, a batch prefill of rows at different positions, a decode with an empty row)
  is a TierInputError naming the problem and leaves every row's position and every tensor byte
  of the state as it was.
- test_nan_in_one_row_stays_there (hypothesis): NaN written into one element of one row's
  recurrent state, conv inputs or K cache (at a position the row has written) makes that row's
  logits NaN and leaves every other row's finite and equal to alone; NaN in a K/V cache slot the
  row has not reached yet is never read.
- state checks: seq_len raises where rows differ, clone_state's positions are its own, max_batch
  (a small subclass; the megakernel's declared value).
- the hf tier (per_row_positions False): row prefill, reset_row and a decode of rows at
  different positions are TierInputErrors with the state unchanged; a batch at one position still
  decodes as the reference does; clone_state's positions are a fresh list.
The triton tier (interpreter) takes part where it declares per_row_positions: a few short examples.
"""

from __future__ import annotations

import functools
import math
import re

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_state_machine import snapshot, snapshot_diff

from compare import load_tier, unavailable_reason
from compare.tiers import tier_class
from reference import ModelConfig, ReferenceTier, TierInputError, perturb_norms, random_weights
from reference.tolerances import bound, rel_err

TIGHT = 1e-5  # fp32 rows against fp32 alone (measured ≤ 2e-7 relative)


@functools.lru_cache(None)
def model():
    config = ModelConfig.tiny()
    return config, perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))


@functools.lru_cache(None)
def tier(variant):
    """'reference-fp32', 'reference-bf16', 'hf' (fp32), 'triton' (interpreter, fp32)."""
    config, weights = model()
    if variant == "reference-fp32":
        return ReferenceTier(config, weights, dtype=torch.float32)
    if variant == "reference-bf16":
        return ReferenceTier(config, weights, dtype=torch.bfloat16)
    return load_tier(variant, config, weights, device="cpu", dtype=torch.float32)


def oracle():
    return tier("reference-fp32")


ROW_TIERS = ("reference-fp32", "reference-bf16", "triton")


def row_tier_or_skip(variant):
    if variant == "triton":
        reason = unavailable_reason("triton", "cpu")
        if reason is not None:
            pytest.skip(f"tier 'triton' cannot run on this CPU: {reason}")
        if not tier_class("triton").per_row_positions:
            pytest.skip("the triton tier does not declare per_row_positions yet")
    return tier(variant)


def examples(variant, n):
    """Hypothesis settings: `n` examples (the interpreter, ~0.5 s a step: 2)."""
    return settings(max_examples=2 if variant == "triton" else n, deadline=None, derandomize=False,
                    suppress_health_check=list(HealthCheck))


def given_per_variant(n):
    """@given(data) with `n` examples for the tier of the test's `variant` parameter."""
    def wrap(test):
        def run(variant):
            t = row_tier_or_skip(variant)

            def example(data):
                test(variant, t, data)

            example.__qualname__ = f"{test.__name__}[{variant}]"  # (hypothesis' example database key)
            examples(variant, n)(given(data=st.data())(example))()

        run.__name__, run.__doc__ = test.__name__, test.__doc__
        return run
    return wrap


# ---- checks -----------------------------------------------------------------------------------
def ids_of(seed, shape, V):
    return torch.randint(0, V, shape, generator=torch.Generator().manual_seed(seed))


def tolerance(t):
    return TIGHT if t.dtype == torch.float32 else bound(torch.bfloat16)


def assert_row_close(got, want, tol, what):
    err = rel_err(got, want)
    assert math.isfinite(err) and err <= tol, f"{what}: relative error {err:.3g} > {tol:g}" + (
        "" if math.isfinite(err) else " (NaN or inf)")
    return err


def assert_greedy(next_id, alone_logits, diff, what):
    """`next_id` is the argmax of logits that differ from `alone_logits` by at most `diff` (max abs):
    equal to the alone argmax unless that one's top two are within 2·diff."""
    alone_logits = alone_logits.double().cpu()
    top = int(alone_logits.argmax())
    if int(next_id) == top:
        return
    gap = float(alone_logits[top] - alone_logits[int(next_id)])
    assert gap <= 2 * diff + 1e-6, (f"{what}: greedy id {int(next_id)} but alone {top} (its logit {gap:.3g} below the "
                                    f"max; the runs differ by {diff:.3g})")


def refuse(call, match, state, what):
    """`call` raises a TierInputError matching `match` and leaves `state` bit-identical."""
    before = snapshot(state)
    with pytest.raises(TierInputError) as info:
        call()
    message = str(info.value)
    assert re.search(match, message), f"{what}: TierInputError {message!r} does not match {match!r}"
    problems = snapshot_diff(before, snapshot(state))
    assert not problems, f"{what} (refused: {message}) changed the state: " + "; ".join(problems[:8])
    return message


# ---- a batch and its rows alone ------------------------------------------------------------------
class Rows:
    """A batch state of `t`, and per row the same calls on a batch-1 state of `t` (and of the fp32
    reference where `t` is not it)."""

    def __init__(self, t, B, max_seq_len):
        self.t, self.B, self.n = t, B, max_seq_len
        self.V = t.config.vocab_size
        self.state = t.new_state(B, max_seq_len)
        self.with_oracle = not (isinstance(t, ReferenceTier) and t.dtype == torch.float32)
        self.alone = [self.fresh(r) for r in range(B)]
        self.last = [None] * B  # each row's last alone logits (their greedy id may be fed back)
        self.worst = 0.0

    def fresh(self, r):
        pair = [self.t.new_state(1, self.n)]
        if self.with_oracle:
            pair.append(oracle().new_state(1, self.n))
        return pair

    def check_positions(self):
        want = [a[0].seq_len for a in self.alone]
        assert self.state.positions == want, f"positions {self.state.positions}; the rows alone are at {want}"

    def compare(self, got, r, alone, what):
        """Row `r` of a call's logits against its alone runs' (tier, oracle)."""
        tol = tolerance(self.t)
        self.worst = max(self.worst, assert_row_close(got, alone[0][0], tol, f"{what}, row {r} vs alone"))
        if self.with_oracle:
            assert_row_close(got, alone[1][0], bound(self.t.dtype), f"{what}, row {r} vs the fp32 reference alone")

    def prefill_row(self, r, ids):
        got = self.t.prefill(ids, self.state, row=r)
        assert got.dtype == torch.float32 and tuple(got.shape) == (1, self.V), (got.dtype, tuple(got.shape))
        alone = [tier_.prefill(ids, s) for tier_, s in zip(self.tiers(), self.alone[r])]
        self.compare(got[0], r, alone, f"prefill of {ids.shape[1]} at {self.state.positions[r] - ids.shape[1]}")
        self.last[r] = alone[0][0]
        self.check_positions()

    def reset_row(self, r):
        self.t.reset_row(self.state, r)
        self.alone[r] = self.fresh(r)
        self.last[r] = None
        self.check_positions()

    def tiers(self):
        return [self.t, oracle()] if self.with_oracle else [self.t]

    def step_ids(self, data):
        """A decode step's ids: per row a random id or the row's alone greedy id."""
        out = []
        for r in range(self.B):
            if self.last[r] is not None and data.draw(st.booleans(), label=f"feed back row {r}"):
                out.append(int(self.last[r].argmax()))
            else:
                out.append(data.draw(st.integers(0, self.V - 1), label=f"id row {r}"))
        return torch.tensor(out, dtype=torch.int64)

    def decode(self, ids, argmax=False):
        at = list(self.state.positions)
        if argmax:
            got = self.t.decode_argmax(ids, self.state)
            self.t.check(self.state)
            assert got.dtype == torch.int64 and tuple(got.shape) == (self.B,), (got.dtype, tuple(got.shape))
        else:
            got = self.t.decode(ids, self.state)
            assert got.dtype == torch.float32 and tuple(got.shape) == (self.B, self.V), (got.dtype, tuple(got.shape))
        for r in range(self.B):
            alone = [tier_.decode(ids[r:r + 1], s) for tier_, s in zip(self.tiers(), self.alone[r])]
            what = f"decode{'_argmax' if argmax else ''} at positions {at}"
            if argmax:  # the alone run's logits differ from the batch's by at most their bound
                diff = tolerance(self.t) * float(alone[0][0].norm())
                assert_greedy(got[r].cpu(), alone[0][0], diff, f"{what}, row {r}")
            else:
                self.compare(got[r], r, alone, what)
                assert_greedy(got[r].argmax().cpu(), alone[0][0], float((got[r] - alone[0][0]).abs().max()),
                              f"{what}, row {r}")
            self.last[r] = alone[0][0]
        self.check_positions()


def prompt(data, V, n, label):
    seed = data.draw(st.integers(0, 2**20), label=f"{label} seed")
    return ids_of(seed, (1, n), V)


# ---- the property ----------------------------------------------------------------------------------
OPS = ("decode", "decode", "decode_argmax", "continue a row", "reset and refill", "reset, refill later", "refuse")
REFUSALS = ("bad id", "row prefill past max_seq_len", "bad row", "two rows to a row prefill",
            "batch prefill of rows apart", "decode with an empty row")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("variant", ROW_TIERS)
@given_per_variant(40)
def test_rows_equal_alone(variant, t, data):
    small = variant == "triton"
    B = data.draw(st.integers(1, 2 if small else 4), label="batch")
    n = data.draw(st.integers(8, 16 if small else 40), label="max_seq_len")
    rows = Rows(t, B, n)
    V = rows.V
    empty_for = {}  # rows reset and left empty: how many more ops until refilled
    order = data.draw(st.permutations(range(B)), label="row prefill order")
    for r in order:
        T = data.draw(st.integers(1, min(4 if small else 12, n - 1)), label=f"prompt length row {r}")
        rows.prefill_row(r, prompt(data, V, T, f"row {r}"))
    for i in range(data.draw(st.integers(1, 4 if small else 12), label="ops")):
        for r in [r for r, k in empty_for.items() if k <= 0]:  # refill rows left empty
            del empty_for[r]
            rows.prefill_row(r, prompt(data, V, data.draw(st.integers(1, min(6, n)), label="refill"), f"refill {r}"))
        for r in empty_for:
            empty_for[r] -= 1
        op = data.draw(st.sampled_from(OPS), label=f"op {i}")
        pos = rows.state.positions
        if op in ("decode", "decode_argmax"):
            if min(pos) == 0 or max(pos) >= n:
                op = "refuse"
            else:
                rows.decode(rows.step_ids(data), argmax=op == "decode_argmax")
                continue
        if op == "continue a row":
            room = [r for r in range(B) if 0 < pos[r] < n]
            if room:
                r = data.draw(st.sampled_from(room), label="row")
                T = data.draw(st.integers(1, min(8, n - pos[r])), label="more")
                rows.prefill_row(r, prompt(data, V, T, f"more row {r}"))
                continue
            op = "refuse"
        if op.startswith("reset"):
            r = data.draw(st.integers(0, B - 1), label="reset row")
            rows.reset_row(r)
            empty_for.pop(r, None)
            if op == "reset and refill":
                rows.prefill_row(r, prompt(data, V, data.draw(st.integers(1, min(8, n)), label="refill"), f"new row {r}"))
            else:
                empty_for[r] = data.draw(st.integers(0, 2), label="ops left empty")
            continue
        refused_call(rows, data)
    assert rows.worst <= tolerance(t)


def refused_call(rows, data):
    t, state, B, n, V = rows.t, rows.state, rows.B, rows.n, rows.V
    pos = state.positions
    kinds = [k for k in REFUSALS
             if not (k == "decode with an empty row" and min(pos) > 0)
             and not (k == "batch prefill of rows apart" and (state.uniform or max(pos) >= n))]
    kind = data.draw(st.sampled_from(kinds), label="refusal")
    r = data.draw(st.integers(0, B - 1), label="refused row")
    if kind == "bad id":
        bad = data.draw(st.sampled_from([V, V + 5_000_000, -1]), label="bad id")
        entry = data.draw(st.sampled_from(["decode", "decode_argmax", "row prefill"]), label="entry")
        if entry == "row prefill" or min(pos) == 0 or max(pos) >= n:
            if pos[r] >= n:
                return refuse(lambda: t.prefill(ids_of(0, (1, 1), V), state, row=r), "exceed the state's max_seq_len",
                              state, "a row prefill past max_seq_len")
            ids = ids_of(1, (1, min(3, n - pos[r])), V)
            ids[0, data.draw(st.integers(0, ids.shape[1] - 1), label="t")] = bad
            return refuse(lambda: t.prefill(ids, state, row=r), rf"token id {bad}\b.*outside the vocabulary \[0, {V}\)",
                          state, f"a row prefill with id {bad}")
        ids = rows.step_ids(data)
        ids[r] = bad
        if entry == "decode":
            call = lambda: t.decode(ids, state)  # noqa: E731
        else:
            call = lambda: (t.decode_argmax(ids, state), t.check(state))  # noqa: E731
        message = refuse(call, rf"token id {bad}\b.*outside the vocabulary \[0, {V}\)", state, f"{entry} with id {bad}")
        if "fed to decode_argmax" in message:  # a tier with device checks: its row and position named
            assert f"(batch row {r}) fed to decode_argmax at position {pos[r]}" in message, message
        return message
    if kind == "row prefill past max_seq_len":
        over = n - pos[r] + data.draw(st.integers(1, 3), label="over")
        return refuse(lambda: t.prefill(ids_of(2, (1, over), V), state, row=r),
                      rf"{over} more token\(s\) after {pos[r]} in row {r} exceed the state's max_seq_len={n}",
                      state, "a row prefill past max_seq_len")
    if kind == "bad row":
        row = data.draw(st.sampled_from([-1, B, B + 3, True, 1.0, "0"]), label="bad row")
        entry = data.draw(st.sampled_from(["prefill", "reset_row"]), label="entry")
        call = (lambda: t.prefill(ids_of(3, (1, 1), V), state, row=row)) if entry == "prefill" else \
            (lambda: t.reset_row(state, row))
        return refuse(call, rf"row {re.escape(repr(row))} is not a row of this state; expected an int in \[0, {B}\)",
                      state, f"{entry} of row {row!r}")
    if kind == "two rows to a row prefill":
        return refuse(lambda: t.prefill(ids_of(4, (2, 1), V), state, row=r), r"a row prefill takes one row: expected \[1, T\]",
                      state, "[2, T] ids to a row prefill")
    if kind == "batch prefill of rows apart":
        return refuse(lambda: t.prefill(ids_of(5, (B, 1), V), state), r"rows of this state are at different positions.*"
                      r"one row at a time", state, "a batch prefill of rows at different positions")
    empty = [i for i, p in enumerate(pos) if p == 0]
    entry = data.draw(st.sampled_from(["decode", "decode_argmax"]), label="entry")
    ids = ids_of(6, (B,), V)
    call = (lambda: t.decode(ids, state)) if entry == "decode" else (lambda: (t.decode_argmax(ids, state), t.check(state)))
    what = "an empty state" if len(empty) == B else f"empty row(s) {empty}"
    return refuse(call, re.escape(f"decode on {what}"), state, f"{entry} with empty row(s) {empty}")


# ---- NaN in one row --------------------------------------------------------------------------------
def row_tensor(state, name, r):
    """Row `r` of the state tensor `name` (batch is dim 1 of the reference layout: ModelState, TritonState)."""
    return getattr(state, name)[:, r]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("variant", ROW_TIERS)
@given_per_variant(25)
def test_nan_in_one_row_stays_there(variant, t, data):
    small = variant == "triton"
    B = data.draw(st.integers(2, 3 if small else 4), label="batch")
    n = 24
    rows = Rows(t, B, n)
    V = rows.V
    for r in data.draw(st.permutations(range(B)), label="row prefill order"):
        rows.prefill_row(r, prompt(data, V, data.draw(st.integers(2, 5 if small else 10), label="length"), f"row {r}"))
    if data.draw(st.booleans(), label="all rows at one position"):  # the batched path, not row by row
        rows.reset_row(0)
        for r in range(B):
            if r:
                rows.reset_row(r)
            rows.prefill_row(r, prompt(data, V, 6, f"even row {r}"))
    p = data.draw(st.integers(0, B - 1), label="poisoned row")
    where = data.draw(st.sampled_from(["recurrent", "conv", "k_cache", "v_cache", "unreached cache"]), label="where")
    state = rows.state
    if where == "unreached cache":  # a slot past the row's next position: no step may read it
        name = data.draw(st.sampled_from(["k_cache", "v_cache"]), label="cache")
        slot = data.draw(st.integers(state.positions[p] + 1, n - 1), label="slot")
        row_tensor(state, name, p)[:, :, slot] = float("nan")
    else:
        target = row_tensor(state, where, p)
        if where in ("k_cache", "v_cache"):  # a position the row has written (and every step reads)
            target = target[:, :, :state.positions[p]]
        flat = target.reshape(-1) if target.is_contiguous() else None
        index = data.draw(st.integers(0, target.numel() - 1), label="element")
        if flat is not None:
            flat[index] = float("nan")
        else:
            target[torch.unravel_index(torch.tensor(index), target.shape)] = float("nan")
    for step in range(data.draw(st.integers(1, 2 if small else 3), label="steps")):
        ids = ids_of(step, (B,), V)
        at = list(state.positions)
        logits = t.decode(ids, state)
        for r in range(B):
            alone = [tier_.decode(ids[r:r + 1], s) for tier_, s in zip(rows.tiers(), rows.alone[r])]
            if r == p and where != "unreached cache":
                assert torch.isnan(logits[r]).any(), (f"NaN in row {p}'s {where} at positions {at}: its logits are finite "
                                                     "(the poison was not read, or was masked away)")
            else:
                assert torch.isfinite(logits[r]).all(), f"NaN in row {p}'s {where} reached row {r} at positions {at}"
                rows.compare(logits[r], r, alone, f"decode {step} with NaN in row {p}'s {where}")


# ---- the state -----------------------------------------------------------------------------------
def test_seq_len_where_rows_differ():
    t = tier("reference-fp32")
    state = t.new_state(3, 16)
    assert state.seq_len == 0 and state.positions == [0, 0, 0] and state.uniform
    t.prefill(torch.tensor([[1, 2, 3]]), state, row=1)
    assert state.positions == [0, 3, 0] and not state.uniform
    with pytest.raises(TierInputError, match=re.escape("different positions [0, 3, 0]") + ".*read state.positions"):
        state.seq_len  # noqa: B018
    t.prefill(torch.tensor([[4, 5, 6]]), state, row=0)
    t.prefill(torch.tensor([[7, 8, 9]]), state, row=2)
    assert state.seq_len == 3 and state.uniform
    t.decode(torch.tensor([1, 2, 3]), state)
    assert state.seq_len == 4 and state.positions == [4, 4, 4]
    t.reset_row(state, 2)
    assert state.positions == [4, 4, 0]
    with pytest.raises(TierInputError, match="different positions"):
        state.seq_len  # noqa: B018


@pytest.mark.parametrize("variant", ("reference-fp32", "hf"))
def test_clone_state_positions_are_its_own(variant):
    if variant == "hf" and unavailable_reason("hf", "cpu") is not None:
        pytest.skip(unavailable_reason("hf", "cpu"))
    t = tier(variant)
    state = t.new_state(2, 16)
    t.prefill(torch.tensor([[1, 2, 3], [4, 5, 6]]), state)
    if t.per_row_positions:
        t.prefill(torch.tensor([[7]]), state, row=0)
    want = list(state.positions)
    copy = t.clone_state(state)
    assert copy.positions == want and copy.positions is not state.positions
    if t.per_row_positions:
        t.prefill(torch.tensor([[8, 9]]), copy, row=1)
        t.reset_row(copy, 0)
        t.prefill(torch.tensor([[1]]), copy, row=0)
    t.decode(torch.tensor([10, 11]), copy)
    assert state.positions == want, "stepping the clone moved the original's positions"
    before = snapshot(copy)
    t.decode(torch.tensor([12, 13]), state)
    assert not snapshot_diff(before, snapshot(copy)), "stepping the original changed the clone"


def test_max_batch_refused_with_the_supported_range():
    class ThreeRows(ReferenceTier):
        max_batch = 3

    t = ThreeRows(*model())
    assert t.new_state(3, 8).batch_size == 3
    for B in (4, 9):
        with pytest.raises(TierInputError, match=rf"batch_size={B}: tier 'reference' decodes 1 to 3 sequences per state "
                                                 r"\(expected 1 <= batch_size <= 3\)"):
            t.new_state(B, 8)
    assert tier("reference-fp32").max_batch is None
    assert tier("reference-fp32").new_state(16, 8).positions == [0] * 16


def test_megakernel_declares_its_max_batch():
    """The megakernel's declared max_batch, refused above (the check runs before the tier needs a GPU)."""
    cls = tier_class("megakernel")
    if cls.max_batch is None:  # (the GPU tests check it: tests/test_batch_gpu.py)
        pytest.skip("the megakernel sets max_batch when it loads (from what fits the GPU): no class value to check here")
    mb = cls.max_batch
    assert mb == 8, f"the megakernel declares max_batch={mb}; issue 19 builds it for 1..8"
    t = cls.__new__(cls)  # no GPU here: Tier.new_state refuses the batch before it touches the device
    t.config = ModelConfig.qwen3_5_0_8b()
    with pytest.raises(TierInputError, match=rf"batch_size={mb + 1}: tier 'megakernel' decodes 1 to {mb} sequences"):
        t.new_state(mb + 1, 64)


# ---- the hf tier: one position for the whole batch ------------------------------------------------
@pytest.fixture(scope="module")
def hf():
    reason = unavailable_reason("hf", "cpu")
    if reason is not None:
        pytest.skip(f"tier 'hf' cannot run on this CPU: {reason}")
    t = tier("hf")
    assert t.per_row_positions is False
    return t


@pytest.mark.parametrize("call", ("row prefill", "reset_row"))
@pytest.mark.parametrize("B", (1, 3))
def test_hf_refuses_row_calls(hf, call, B):
    state = hf.new_state(B, 16)
    hf.prefill(ids_of(7, (B, 4), hf.config.vocab_size), state)
    do = (lambda: hf.prefill(torch.tensor([[1, 2]]), state, row=0)) if call == "row prefill" else \
        (lambda: hf.reset_row(state, B - 1))
    what = "prefill" if call == "row prefill" else "reset_row"
    refuse(do, rf"tier 'hf' keeps one position for the whole batch: {what} of one row is not supported "
               r"\(per_row_positions is False\)", state, f"hf {call}")
    assert state.positions == [4] * B
    hf.decode(torch.arange(B), state)  # and the state goes on
    assert state.positions == [5] * B


@pytest.mark.parametrize("entry", ("decode", "decode_argmax"))
def test_hf_refuses_rows_at_different_positions(hf, entry):
    """A state whose rows disagree (set by hand: no call of a tier without per-row positions makes
    one) is refused by a decode, not run at one position for all."""
    state = hf.new_state(2, 16)
    hf.prefill(torch.tensor([[1, 2, 3], [4, 5, 6]]), state)
    state.positions = [3, 2]
    call = (lambda: hf.decode(torch.tensor([7, 8]), state)) if entry == "decode" else \
        (lambda: hf.decode_argmax(torch.tensor([7, 8]), state))
    refuse(call, r"different positions \[3, 2\]", state, f"hf {entry} of rows at different positions")


def test_hf_batch_at_one_position_decodes_as_the_reference(hf):
    ref = oracle()
    B, V = 3, hf.config.vocab_size
    prompt_ = ids_of(8, (B, 7), V)
    s_hf, s_ref = hf.new_state(B, 32), ref.new_state(B, 32)
    got, want = hf.prefill(prompt_, s_hf), ref.prefill(prompt_, s_ref)
    for step in range(6):
        for r in range(B):
            assert_row_close(got[r], want[r], bound(torch.float32), f"hf step {step}, row {r}")
        ids = want.argmax(-1)
        if step % 2:
            nxt = hf.decode_argmax(ids, s_hf)
            hf.check(s_hf)
            want = ref.decode(ids, s_ref)
            for r in range(B):
                assert_greedy(nxt[r], want[r], bound(torch.float32) * float(want[r].norm()), f"hf decode_argmax row {r}")
            got = hf.decode(nxt, s_hf)
            want = ref.decode(nxt, s_ref)
        else:
            got, want = hf.decode(ids, s_hf), ref.decode(ids, s_ref)
    assert s_hf.positions == s_ref.positions == [7 + 3 * 1 + 3 * 2] * B
