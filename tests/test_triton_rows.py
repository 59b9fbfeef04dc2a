"""Rows of a Triton-tier batch state at their own positions (per_row_positions): each row
prefilled alone, reset and refilled, and decoded together with the others, behaves as that
row run alone, and as the reference tier's row (the meaning, reference/model.py row_view).
A refused step names its row and leaves every row as it was; a NaN stays in its row.

fp32 on the tiny config: on a CPU under TRITON_INTERPRET=1 (tests/conftest.py), on a GPU natively.
"""

from __future__ import annotations

import pytest
import torch

from reference import FAULT_POSITION, FAULT_TOKEN, ModelConfig, ReferenceTier, TierInputError, perturb_norms, random_weights
from reference.model import ROW_TENSORS
from reference.tolerances import FP32_REL

from helpers import DEVICE, TRITON_CAN_RUN, TRITON_MARKS

pytestmark = TRITON_MARKS

if TRITON_CAN_RUN:
    from helpers import assert_close
    from triton_kernels.step_check import step_check
    from triton_kernels.tier import TritonTier

CONFIG = ModelConfig.tiny()
LENGTHS = (5, 9, 2)          # the rows' prompts: three different positions
MAX_SEQ = 260                # 3 splits of the decode attention, the later ones empty


def prompt(n, seed):
    return torch.randint(0, CONFIG.vocab_size, (1, n), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def tiers():
    weights = perturb_norms(random_weights(CONFIG, seed=11, dtype=torch.float32))
    return (TritonTier(CONFIG, weights, device=DEVICE, dtype=torch.float32),
            ReferenceTier(CONFIG, weights, device=DEVICE, dtype=torch.float32))


@pytest.fixture(scope="module")
def rows(tiers):
    """Batch states of both tiers, row r prefilled alone with prompt(LENGTHS[r], r)."""
    tri, ref = tiers
    state, ref_state = tri.new_state(len(LENGTHS), MAX_SEQ), ref.new_state(len(LENGTHS), MAX_SEQ)
    for r, n in enumerate(LENGTHS):
        logits = tri.prefill(prompt(n, r), state, row=r)
        assert_close(logits, ref.prefill(prompt(n, r), ref_state, row=r), FP32_REL, f"row {r} prefill")
    assert state.positions == list(LENGTHS) and state.pos.tolist() == list(LENGTHS)
    return state, ref_state


def test_rows_decode_together_as_alone(tiers, rows):
    tri, ref = tiers
    state, ref_state = tri.clone_state(rows[0]), ref.clone_state(rows[1])
    alone = []
    for r, n in enumerate(LENGTHS):
        s = tri.new_state(1, MAX_SEQ)
        tri.prefill(prompt(n, r), s)
        alone.append(s)
    token = torch.tensor([7, 300, 42])
    for step in range(2):
        logits = tri.decode(token, state)
        assert_close(logits, ref.decode(token, ref_state), FP32_REL, f"step {step}: the reference's batch")
        for r, s in enumerate(alone):
            assert_close(logits[r:r + 1], tri.decode(token[r:r + 1], s), FP32_REL, f"step {step}: row {r} alone")
        token = logits.argmax(-1)
    assert state.positions == [n + 2 for n in LENGTHS] and state.pos.tolist() == state.positions
    for name in ROW_TENSORS:
        assert_close(getattr(state, name), getattr(ref_state, name), FP32_REL, f"state.{name}")
    # decode_argmax (the device-checked path) agrees too
    assert torch.equal(tri.decode_argmax(token, state).cpu(), ref.decode(token, ref_state).argmax(-1).cpu())


def test_reset_row_then_refill(tiers, rows):
    tri, ref = tiers
    state, ref_state = tri.clone_state(rows[0]), ref.clone_state(rows[1])
    others = {name: getattr(state, name)[:, [0, 1]].clone() for name in ROW_TENSORS}
    tri.reset_row(state, 2)
    ref.reset_row(ref_state, 2)
    assert state.positions == [5, 9, 0] and state.pos.tolist() == [5, 9, 0]
    for name in ROW_TENSORS:
        assert not getattr(state, name)[:, 2].any(), f"state.{name} row 2 after reset_row"
        assert torch.equal(getattr(state, name)[:, [0, 1]], others[name]), f"state.{name}: rows 0, 1 touched"
    for row, ids in ((2, prompt(3, 20)), (0, prompt(1, 21))):   # a fresh prompt; one token after row 0's
        logits = tri.prefill(ids, state, row=row)
        assert_close(logits, ref.prefill(ids, ref_state, row=row), FP32_REL, f"row {row} prefill")
    assert state.positions == [6, 9, 3] and state.pos.tolist() == [6, 9, 3]
    token = torch.tensor([1, 2, 3])
    assert_close(tri.decode(token, state), ref.decode(token, ref_state), FP32_REL, "decode after the refill")


def test_refused_id_names_its_row_and_changes_nothing(tiers, rows):
    tri, _ = tiers
    state = tri.clone_state(rows[0])
    before = {name: getattr(state, name).clone() for name in (*ROW_TENSORS, "pos", "fault")}
    bad = CONFIG.vocab_size + 5
    next_ids = tri.decode_argmax(torch.tensor([3, bad, 4]), state)   # row 1 refused (with rows 0 and 2)
    tri.decode_argmax(next_ids, state)                               # queued after it: refused too
    with pytest.raises(TierInputError, match=rf"token id {bad} \(batch row 1\) fed to decode_argmax at "
                                             rf"position {LENGTHS[1]} .* and the 1 step\(s\) queued after it"):
        tri.check(state)
    assert state.positions == list(LENGTHS)
    for name, tensor in before.items():
        assert torch.equal(getattr(state, name), tensor), f"state.{name} changed by a refused step"
    tri.check(state)  # raised once: the state decodes normally again
    assert_close(tri.decode(torch.tensor([3, 5, 4]), state), tri.decode(torch.tensor([3, 5, 4]), tri.clone_state(rows[0])),
                 FP32_REL, "decode after the refusal")


def test_nan_stays_in_its_row(tiers, rows):
    tri, _ = tiers
    state, clean = tri.clone_state(rows[0]), tri.clone_state(rows[0])
    state.recurrent[0, 1] = float("nan")                             # row 1's first DeltaNet layer
    token = torch.tensor([7, 300, 42])
    logits, expected = tri.decode(token, state), tri.decode(token, clean)
    assert torch.isnan(logits[1]).all()
    assert torch.equal(logits[[0, 2]], expected[[0, 2]])
    for name in ROW_TENSORS:
        assert torch.equal(getattr(state, name)[:, [0, 2]], getattr(clean, name)[:, [0, 2]]), f"state.{name}"


@pytest.mark.parametrize("ids, pos, fault", [
    ([1, 2, 3], [4, 9, 2], [0, 0, 0, 0]),                          # every row fine: the step runs
    ([1, 2, 999], [4, 16, 2], [FAULT_POSITION, 16, 16, 1]),        # row 1's position past max_seq_len 16
    ([1, 999, 3], [4, 9, 16], [FAULT_TOKEN, 999, 9, 1]),           # row 1's id, at row 1's position
])
def test_step_check_names_the_first_bad_row(ids, pos, fault):
    fault_words = torch.zeros(4, dtype=torch.int64, device=DEVICE)
    safe, valid = step_check(ids=torch.tensor(ids, device=DEVICE), fault=fault_words,
                             pos=torch.tensor(pos, device=DEVICE), vocab_size=512, max_seq_len=16)
    refused = fault[0] != 0
    assert fault_words.tolist() == fault
    assert valid.tolist() == [0 if refused else 1]
    assert safe.tolist() == ([0, 0, 0] if refused else ids)
