"""Rows of a batch state on the GPU (issue 19): the megakernel and triton tiers at the 0.8B shapes
(bf16, seeded random weights with the norms moved: conftest's `model`), at B = 1, 2, 3, 8 (a B
above the tier's max_batch is skipped). Rows get different 16..40-token prompts, prefilled one row
at a time in a shuffled order, so each row decodes at its own position. tests/test_batch_rows.py
holds the same properties on the CPU (reference, triton interpreter).

- the batch against each row alone (a batch-1 state of the same tier, fed the batch's ids):
  64 greedy steps, logits within the bf16 bound of reference/tolerances.py, the same ids but at
  near ties, no more often than twice (+4) the alone run differs from the fp32 reference;
- one step's trace, per row, every layer within the bf16 bounds of the fp32 reference against
  the bf16 baseline (transformers where it has Qwen3.5, else the bf16 reference), as
  tests/test_megakernel.py checks batch 1;
- repeated runs bitwise equal (logits, ids, state); the megakernel: a row's bits do not depend on the
  other rows (reversed order, a batch of 2), and NaN-poisoned workspace, outputs and unwritten cache
  rows change no bit;
- NaN in one row's recurrent state, conv inputs or K cache: that row's logits NaN, every other
  row's bitwise equal to the same batch without the NaN;
- an id outside the vocabulary in one row of decode_argmax (2 steps queued after it): check()
  raises it naming the row and its position, every row's position and tensor is as before the
  step, and the state then decodes as a copy that never saw it;
- new_state above max_batch: a TierInputError naming the supported range.
"""

from __future__ import annotations

import pytest
import torch
from helpers import assert_layers_within_bf16_bounds, debug_poisoned, random_ids, variant_restored

from compare import load_tier, unavailable_reason
from reference import ModelState, TierInputError
from reference.tolerances import bound, rel_err

pytestmark = pytest.mark.gpu

TIERS = ("megakernel", "triton")
BATCHES = (1, 2, 3, 8)
STEPS = 64
MAX_SEQ = 128
BF16 = bound(torch.bfloat16)


@pytest.fixture(scope="module")
def gpu_tier(model):
    """name → the tier at the 0.8B shapes on cuda, built once per module."""
    built = {}

    def get(name):
        reason = unavailable_reason(name, "cuda")
        if reason is not None:
            pytest.skip(f"tier {name!r} cannot run on this GPU: {reason}")
        if name not in built:
            built[name] = load_tier(name, *model, device="cuda", dtype=torch.bfloat16)
        return built[name]

    return get


def rows_tier(gpu_tier, name, B):
    """The tier, where it decodes B rows at their own positions (else skipped: see test_declares_rows)."""
    tier = gpu_tier(name)
    if not tier.per_row_positions:
        pytest.skip(f"tier {name!r} does not declare per_row_positions")
    if tier.max_batch is not None and B > tier.max_batch:
        pytest.skip(f"B={B} is above tier {name!r}'s max_batch {tier.max_batch}")
    return tier


def prompts(B):
    """B prompts of different lengths in 16..40 (0.8B vocabulary), seeded by B."""
    lengths = [16 + (7 * r + 3 * B) % 25 for r in range(B)]
    return [random_ids(n, seed=100 * B + r) for r, n in enumerate(lengths)]


def row_order(B):
    return torch.randperm(B, generator=torch.Generator().manual_seed(B)).tolist()


def prefilled(tier, B, max_seq_len=MAX_SEQ):
    """A batch state with every row prefilled by row in a shuffled order → (state, each row's logits)."""
    state = tier.new_state(B, max_seq_len)
    logits = [None] * B
    for r in row_order(B):
        logits[r] = tier.prefill(prompts(B)[r], state, row=r)
    assert state.positions == [p.shape[1] for p in prompts(B)], state.positions
    return state, torch.cat(logits)


def alone_states(tier, B, max_seq_len=MAX_SEQ):
    out = []
    for p in prompts(B):
        s = tier.new_state(1, max_seq_len)
        out.append((s, tier.prefill(p, s)))
    return out


def row_tensor(state, which, r):
    """Row r of the state's recurrent state / conv inputs / K cache in the tier's own layout:
    reference.ModelState's layer-major [layers, B, ...] (triton) or rows outermost (the megakernel)."""
    if isinstance(state, ModelState):
        return getattr(state, {"recurrent": "recurrent", "conv": "conv", "k_cache": "k_cache"}[which])[:, r]
    return getattr(state, {"recurrent": "dn_state", "conv": "conv_ring", "k_cache": "k_cache"}[which])[r]


def state_tensors(state):
    return {k: v.clone() for k, v in vars(state).items() if isinstance(v, torch.Tensor)}


def assert_same_tokens(batch_ids, alone_logits, diff, what):
    """The batch's greedy id of a row is the alone run's, or a near tie there (within 2·diff)."""
    want = alone_logits.double().cpu()
    got, top = int(batch_ids), int(want.argmax())
    if got != top:
        gap = float(want[top] - want[got])
        assert gap <= 2 * diff + 1e-6, f"{what}: greedy id {got}, alone {top} ({gap:.3g} below its max; runs differ {diff:.3g})"
    return got != top


# ---- what the tier declares -------------------------------------------------------------------
@pytest.mark.parametrize("name", TIERS)
def test_declares_rows(gpu_tier, name):
    tier = gpu_tier(name)
    assert tier.per_row_positions, f"tier {name!r} does not declare per_row_positions (issue 19)"
    if name == "megakernel" and torch.cuda.get_device_capability() >= (9, 0):
        assert tier.max_batch == 8, f"the megakernel decodes 1..{tier.max_batch} rows here; issue 19 builds 1..8"


@pytest.mark.parametrize("name", TIERS)
def test_batch_above_max_batch_is_refused(gpu_tier, name):
    tier = gpu_tier(name)
    if tier.max_batch is None:
        pytest.skip(f"tier {name!r} takes any batch (max_batch None)")
    mb = tier.max_batch
    with pytest.raises(TierInputError, match=rf"batch_size={mb + 1}: tier '{name}' decodes 1 to {mb} sequences per "
                                             rf"state \(expected 1 <= batch_size <= {mb}\)"):
        tier.new_state(mb + 1, 64)
    assert tier.new_state(mb, 64).batch_size == mb


# ---- the batch equals its rows alone --------------------------------------------------------------
@pytest.mark.parametrize("B", BATCHES)
@pytest.mark.parametrize("name", TIERS)
def test_rows_decode_as_alone(gpu_tier, name, B, ref32):
    """64 steps, the batch's greedy ids fed to every run: each row's logits within the bf16 bound of
    the same row alone (a batch-1 state); its greedy id the alone run's but at near ties, and no
    more often other than bf16 arithmetic itself makes it: at most twice (plus 4) as often as the
    alone run's id differs from the fp32 reference's on the same ids (random weights have many
    near ties: two correct bf16 paths disagree on a few percent of them)."""
    tier = rows_tier(gpu_tier, name, B)
    state, first = prefilled(tier, B)
    alone = alone_states(tier, B)
    exact = ref32.new_state(B, MAX_SEQ)
    for r, p in enumerate(prompts(B)):
        ref32.prefill(p.to(ref32.device), exact, row=r)
    worst, flips, bf16_flips = 0.0, 0, 0
    for r, (_, la) in enumerate(alone):
        worst = max(worst, rel_err(first[r], la[0]))
        assert rel_err(first[r], la[0]) <= BF16, f"row {r}'s prefill: {rel_err(first[r], la[0]):.3g} from alone"
    ids = first.argmax(-1)
    for step in range(STEPS):
        at = list(state.positions)
        logits = tier.decode(ids, state)
        assert logits.shape == (B, tier.config.vocab_size) and torch.isfinite(logits).all(), f"step {step}"
        nxt = logits.argmax(-1)
        want = ref32.decode(ids.to(ref32.device), exact).argmax(-1).cpu()
        for r, (s, _) in enumerate(alone):
            la = tier.decode(ids[r:r + 1], s)[0]  # fed the batch's id: a near-tie flip cannot carry on
            err = rel_err(logits[r], la)
            worst = max(worst, err)
            assert err <= BF16, f"step {step}, row {r} at {at[r]}: logits {err:.3g} from alone > {BF16:g}"
            flips += assert_same_tokens(nxt[r], la, float((logits[r] - la).abs().max()), f"step {step}, row {r}")
            bf16_flips += int(la.argmax()) != int(want[r])
        ids = nxt
    assert state.positions == [p.shape[1] + STEPS for p in prompts(B)]
    assert flips <= 2 * bf16_flips + 4, (f"{flips} near-tie greedy flips against alone in {B * STEPS} row steps, but "
                                         f"alone differs from fp32 in only {bf16_flips} (worst logits {worst:.3g})")


@pytest.mark.parametrize("B", BATCHES)
@pytest.mark.parametrize("name", TIERS)
def test_rows_traces_within_bf16_bounds(gpu_tier, name, B, ref32, bf16_baseline):
    """One decode step of the batch (rows at their own positions), traced; per row every layer
    against the fp32 reference's run of that row alone, as test_megakernel checks batch 1."""
    tier = rows_tier(gpu_tier, name, B)
    state, first = prefilled(tier, B)
    tokens = random_ids(B, seed=7 + B)[0]
    trace = {}
    tier.decode(tokens, state, trace=trace)
    base_name, base_tier = bf16_baseline
    keys = ["embed"] + [f"layers.{i}" for i in range(tier.config.num_layers)] + ["norm", "logits"]
    for r, p in enumerate(prompts(B)):
        runs = []
        for t in (ref32, base_tier):
            s = t.new_state(1, MAX_SEQ)
            t.prefill(p.to(t.device), s)
            tr = {}
            t.decode(tokens[r:r + 1].to(t.device), s, trace=tr)
            runs.append(tr)
        got = {k: trace[k][r:r + 1] for k in keys}
        assert_layers_within_bf16_bounds(got, runs[0], runs[1], base_name, keys, tier=f"{name} B={B} row {r}")


@pytest.mark.parametrize("B", BATCHES)
@pytest.mark.parametrize("name", TIERS)
def test_rows_repeatable(gpu_tier, name, B):
    """The same row prefills and 32 steps twice: the same bits (logits, ids, every state tensor)."""
    tier = rows_tier(gpu_tier, name, B)
    (a, la), (b, lb) = prefilled(tier, B), prefilled(tier, B)
    assert torch.equal(la, lb)
    ids_a = ids_b = la.argmax(-1)
    for step in range(32):
        if step % 2:  # decode_argmax too (the tiers' fused argmax)
            ids_a, ids_b = tier.decode_argmax(ids_a, a), tier.decode_argmax(ids_b, b)
        else:
            la, lb = tier.decode(ids_a, a), tier.decode(ids_b, b)
            assert torch.equal(la, lb), f"step {step}: logits differ between two identical runs"
            ids_a, ids_b = la.argmax(-1), lb.argmax(-1)
        assert torch.equal(ids_a, ids_b), f"step {step}"
    tier.check(a)
    tier.check(b)
    ta, tb = state_tensors(a), state_tensors(b)
    for k in ta:
        assert torch.equal(ta[k], tb[k]), f"state tensor {k} differs between two identical runs"


@pytest.mark.parametrize("B", [b for b in BATCHES if b > 1])
def test_megakernel_row_bits_do_not_depend_on_other_rows(gpu_tier, B):
    """The megakernel's batch kernels (B >= 2: every matrix phase on the tensor cores, each row's
    sums in a fixed order of its own) give a row the same bits whoever its neighbours are and
    wherever it sits: the rows in the reverse order, and row 0 beside one other row (B = 2)."""
    tier = rows_tier(gpu_tier, "megakernel", B)
    state, first = prefilled(tier, B)
    rev, pair = tier.new_state(B, MAX_SEQ), tier.new_state(2, MAX_SEQ)
    for r, p in enumerate(prompts(B)):
        tier.prefill(p, rev, row=B - 1 - r)
    tier.prefill(prompts(B)[0], pair, row=0)
    tier.prefill(random_ids(9, seed=3), pair, row=1)
    ids = first.argmax(-1)
    for step in range(8):
        lb = tier.decode(ids, state)
        lr = tier.decode(ids.flip(0), rev).flip(0)
        lp = tier.decode(torch.stack([ids[0], ids[-1]]), pair)
        for r in range(B):
            assert torch.equal(lb[r], lr[r]), f"step {step}: row {r} differs where the rows are reversed"
        assert torch.equal(lb[0], lp[0]), f"step {step}: row 0 of B={B} differs from the same row in a batch of 2"
        ids = lb.argmax(-1)


@pytest.mark.parametrize("B", [b for b in BATCHES if b > 1])
def test_megakernel_batch_bits_on_any_grid(gpu_tier, B):
    """A batch on fewer blocks than its units (97; 40: blocks with several DeltaNet (row, head) units,
    whose inputs then load after the barrier, and several attention units), with the ring at its
    fewest slots, and with small attention splits (every row's context over several split-K units,
    merged in the core): the same logits and state bits as one block per SM."""
    tier = rows_tier(gpu_tier, "megakernel", B)
    grid0, slots0 = tier.grid, tier.ring_slots
    with variant_restored(tier):
        for per_split in (32, 6):
            tier.positions_per_split = per_split
            state, first = prefilled(tier, B)
            ids = first.argmax(-1)
            ref = tier.clone_state(state)
            full = tier.decode(ids, ref)
            for grid, slots in ((97, slots0), (40, slots0), (tier.max_grid, tier.k.RING_MIN_SLOTS)):
                tier.grid, tier.ring_slots = grid, slots
                st = tier.clone_state(state)
                assert torch.equal(tier.decode(ids, st), full), (per_split, grid, slots)
                for k, v in state_tensors(ref).items():
                    assert torch.equal(v, state_tensors(st)[k]), (k, per_split, grid, slots)
            tier.grid, tier.ring_slots = grid0, slots0


@pytest.mark.parametrize("B", [b for b in BATCHES if b > 1])
def test_megakernel_int8_argmax_of_a_batch(gpu_tier, B):
    """A batch's greedy argmax from the lm_head's int8 copy (lm_head.cuh lm_head_bounded_batch) gives the
    bf16 rows' argmax for every row: 40 steps a launch each and in one many-token launch, against
    lm_argmax="bf16", on 132 and 96 blocks; each step's ids are the argmax of that step's logits (every
    bf16 row); then with the copy's scales negated and its bounds zero the ids change (the int8 pass ran)."""
    tier = rows_tier(gpu_tier, "megakernel", B)
    if tier.lm_q is None:
        pytest.skip("this build has no int8 lm_head pass")
    with variant_restored(tier):
        state, first = prefilled(tier, B)
        ids0 = first.argmax(-1)
        runs = {}
        for grid in (tier.max_grid, 96):
            tier.grid = grid
            for mode in ("int8", "bf16"):
                tier.lm_argmax = mode
                st, ids, got = tier.clone_state(state), ids0, []
                for _ in range(40):
                    ids = tier.decode_argmax(ids, st)
                    got.append(ids.tolist())
                runs[(grid, mode)] = got
                runs[(grid, mode, "one launch")] = tier.decode_greedy(ids0, tier.clone_state(state), 40).tolist()
        want = runs[(tier.max_grid, "bf16")]
        for key, got in runs.items():
            assert got == want, key
        tier.grid, tier.lm_argmax = tier.max_grid, "int8"
        st, ids = tier.clone_state(state), ids0
        for step in range(6):
            logits = tier.decode(ids, tier.clone_state(st))
            ids = tier.decode_argmax(ids, st)
            assert ids.tolist() == logits.argmax(-1).tolist(), step
        if torch.cuda.get_device_capability(tier.device)[0] < 9:
            return  # (a batch's int8 pass is compiled for Hopper only: schedule.cuh LM_I8_BATCH; elsewhere every bf16 row)
        saved = tier.lm_qs.clone()
        try:
            tier.lm_qs[:, 0].neg_()
            tier.lm_qs[:, 1].zero_()
            assert tier.decode_argmax(ids0, tier.clone_state(state)).tolist() != want[0]
        finally:
            tier.lm_qs.copy_(saved)


@pytest.mark.parametrize("B", [b for b in BATCHES if b > 1])
def test_megakernel_batch_poison_proof(gpu_tier, B):
    """The batch kernels with NaN in the whole workspace, the outputs and the cache rows past every
    row's position before each step (debug_poison): the same logits, trace, state and fused argmax
    bits as without (an unwritten read or output would show as NaN or a difference)."""
    tier = rows_tier(gpu_tier, "megakernel", B)
    state, first = prefilled(tier, B)
    clean, poisoned, fused = (tier.clone_state(state) for _ in range(3))
    tokens = first.argmax(-1)
    tc, tp = {}, {}
    lc = tier.decode(tokens, clean, trace=tc)
    with debug_poisoned(tier):
        lp = tier.decode(tokens, poisoned, trace=tp)
        nxt = tier.decode_argmax(tokens, fused)
    assert torch.isfinite(lc).all() and torch.equal(lc, lp), "a poisoned buffer reached the logits"
    for k in tc:
        assert torch.equal(tc[k], tp[k]), f"trace part {k} differs with the buffers poisoned"
    got = state_tensors(poisoned)
    for k, v in state_tensors(clean).items():
        if k in ("k_cache", "v_cache"):  # the rows past each position stay poisoned: compare what was written
            for r, pos in enumerate(clean.positions):
                assert torch.equal(v[r, ..., :pos, :], got[k][r, ..., :pos, :]), f"{k} row {r}"
        else:  # (the poisoned conv column is the one the step writes)
            assert torch.equal(v, got[k]), f"state tensor {k} differs with the buffers poisoned"
    assert torch.equal(nxt, lc.argmax(-1)), "the fused argmax differs from the logits' argmax"


@pytest.mark.parametrize("where", ("recurrent", "conv", "k_cache"))
@pytest.mark.parametrize("B", [b for b in BATCHES if b > 1])
@pytest.mark.parametrize("name", TIERS)
def test_nan_in_one_row_stays_there(gpu_tier, name, B, where):
    tier = rows_tier(gpu_tier, name, B)
    clean, first = prefilled(tier, B)
    poisoned = tier.clone_state(clean)
    p = B // 2
    target = row_tensor(poisoned, where, p)
    if where == "k_cache":  # a position the row has written (every later step reads it)
        target = target[..., : poisoned.positions[p] // 2, :]
    if where == "conv" and not isinstance(poisoned, ModelState):  # the ring's newest column (live for 3 steps)
        target = target[:, (poisoned.positions[p] - 1) % target.shape[1]]
    target[tuple(n // 3 for n in target.shape)] = float("nan")  # one element
    assert not torch.isfinite(row_tensor(poisoned, where, p)).all(), "the poison did not land"
    ids = first.argmax(-1)
    for step in range(4):
        lc, lp = tier.decode(ids, clean), tier.decode(ids, poisoned)
        assert torch.isnan(lp[p]).any(), f"step {step}: NaN in row {p}'s {where}, but its logits are finite"
        for r in range(B):
            if r != p:
                assert torch.isfinite(lp[r]).all(), f"step {step}: NaN in row {p}'s {where} reached row {r}"
                assert torch.equal(lp[r], lc[r]), f"step {step}: NaN in row {p}'s {where} changed row {r}'s logits"
        ids = lc.argmax(-1)
    ids = tier.decode_argmax(ids, poisoned)  # and the fused argmax of the other rows: the clean batch's
    want = tier.decode_argmax(lc.argmax(-1), clean)
    tier.check(poisoned)
    others = [r for r in range(B) if r != p]
    assert torch.equal(ids[others], want[others])


@pytest.mark.parametrize("which", ("vocab", "-1"))
@pytest.mark.parametrize("B", BATCHES)
@pytest.mark.parametrize("name", TIERS)
def test_refused_id_in_one_row_leaves_every_row(gpu_tier, name, B, which):
    tier = rows_tier(gpu_tier, name, B)
    V = tier.config.vocab_size
    bad = V if which == "vocab" else -1
    state, first = prefilled(tier, B)
    twin = tier.clone_state(state)
    positions, before = list(state.positions), state_tensors(state)
    r = B - 1
    ids = first.argmax(-1)
    ids[r] = bad
    nxt = tier.decode_argmax(ids, state)
    for _ in range(2):  # fed back, as a generation loop does
        nxt = tier.decode_argmax(nxt, state)
    where = f"position {positions[r]}" if len(set(positions)) == 1 else f"positions {positions}"
    with pytest.raises(TierInputError, match=rf"token id {bad} \(batch row {r}\) fed to decode_argmax at position "
                                             rf"{positions[r]} is outside the vocabulary \[0, {V}\); that step and "
                                             rf"the 2 step\(s\) queued after it did not run: the state is back at "
                                             + where.replace("[", r"\[").replace("]", r"\]")):
        tier.check(state)
    assert state.positions == positions and state.unchecked == 0
    for k, v in state_tensors(state).items():
        assert torch.equal(v, before[k]), f"state tensor {k} changed by a refused step"
    tier.check(state)  # cleared
    good = first.argmax(-1)
    for step in range(3):
        a, b = tier.decode(good, state), tier.decode(good, twin)
        assert torch.equal(a, b), f"step {step} after the refusal differs from a copy that never saw it"
        good = a.argmax(-1)
    assert state.positions == twin.positions


def test_megakernel_anatomy_of_a_batch(gpu_tier):
    """`python -m megakernel anatomy --batch 8`'s numbers: every kind of phase stamped, each block's
    arrival at a phase after the barrier before it opened (after every block's arrival at the phase
    before: a block with no unit in a core may arrive before block 0 has left that barrier, so the
    mean first arrival may be slightly negative, s36 call 2) and before block 0 left the phase's own
    barrier, the attention core's last block counted against the units of all 8 rows."""
    from megakernel.anatomy import DN_UNIT_STEPS, PHASE_NAMES, anatomy_lines, phase_anatomy

    tier = rows_tier(gpu_tier, "megakernel", 8)
    an = phase_anatomy(tier, prompt_len=40, steps=2, batch=8)
    kinds = {f"{mixer} {name}" for mixer in ("DeltaNet", "attention") for name in PHASE_NAMES}
    assert kinds <= set(an), sorted(an)
    for kind in kinds:
        r = an[kind]
        assert r["first"] <= r["median"] <= r["last"] and 0 < r["median"] and r["exit"] >= 0 and 0 <= r["unit_last"] <= 1, (kind, r)
    assert an["ring_full_us"]["min"] >= 0
    state = tier.new_state(8, max_seq_len=48)
    tier.prefill(torch.randint(0, tier.config.vocab_size, (8, 40), generator=torch.Generator().manual_seed(3)), state)
    _, st = tier.decode_step_times(torch.arange(1, 9, device=tier.device), state)
    for q in range(1, tier.k.NBARRIERS):  # (one clock for every SM: globaltimer)
        assert int(st.arrivals[:, q].min()) >= int(st.arrivals[:, q - 1].max()), f"a block arrived at phase {q} before barrier {q - 1} opened"
    # Hopper's ring kernels stamp the DeltaNet core's unit too (dn_stamp), with its own line
    dn_steps = tier.schedule == "ring" and torch.cuda.get_device_capability(tier.device)[0] >= 9
    if dn_steps:
        steps = [an["DeltaNet core"][k] for k in DN_UNIT_STEPS]
        assert 0 < steps[0] <= steps[1] <= steps[2], steps
    assert len(anatomy_lines(an)) == len(kinds) + 4 + dn_steps
