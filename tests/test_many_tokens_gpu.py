"""Many tokens per launch (issue 20, part 1) on the GPU: the megakernel tier's `decode_greedy`
runs its steps in ONE persistent launch (each step's ids the last step's argmax on the device,
written to pinned host memory as the step ends), at the 0.8B shapes (conftest's `model`).

- the same ids and the same state bits (recurrent state, conv inputs, K/V caches, positions) as
  one launch a step (decode_argmax), at B = 1, 3, 8 with rows at different positions, with the
  attention split-K changing inside the launch (6 positions a split: a new split every 6 steps);
- stop ids end the launch after the step where every row has produced one, mid-launch: the ids
  and the state those steps leave, nothing after them;
- NaN-poisoned workspace and unwritten cache rows (before the launch) change no bit; repeated
  launches are bitwise equal;
- the ids reach on_step while the launch runs (the first long before the last); a consumer that
  raises loses nothing (the state counts every step the launch ran);
- an id outside the vocabulary: refused on the device, raised as a TierInputError, the state as
  before (bits and positions), and the state then decodes normally.
"""

from __future__ import annotations

import time

import pytest
import torch
from helpers import debug_poisoned, random_ids, variant_restored

from compare import load_tier, unavailable_reason
from reference import TierInputError

pytestmark = pytest.mark.gpu
STATE_TENSORS = ("dn_state", "conv_ring", "k_cache", "v_cache")


@pytest.fixture(scope="module")
def mk(model):
    reason = unavailable_reason("megakernel", "cuda")
    if reason is not None:
        pytest.skip(f"the megakernel cannot run here: {reason}")
    return load_tier("megakernel", *model, device="cuda", dtype=torch.bfloat16)


def prefilled(mk, B, max_seq_len=160):
    """B rows prefilled one by one with 16..40-token prompts → (state, the first ids [B] on the device)."""
    state = mk.new_state(B, max_seq_len)
    first = []
    for r in range(B):
        first.append(mk.prefill(random_ids(16 + (11 * r) % 25, seed=70 + r), state, row=r).argmax(-1))
    return state, torch.cat(first)


def one_launch_a_step(mk, ids, state, steps):
    out = []
    for _ in range(steps):
        ids = mk.decode_argmax(ids, state)
        out.append(ids)
    return torch.stack(out).cpu()


def assert_same_state(a, b):
    """The same positions and the same bits in every tensor of the state, the K/V caches up to each
    row's position (past it: rows no step wrote, NaN where debug_poison filled them)."""
    assert a.positions == b.positions
    bits = lambda t: t.view(torch.int16) if t.dtype == torch.bfloat16 else t.view(torch.int32)  # noqa: E731
    for name in STATE_TENSORS:
        x, y = getattr(a, name), getattr(b, name)
        if name in ("k_cache", "v_cache"):
            for r, p in enumerate(a.positions):
                assert torch.equal(bits(x[r, :, :, :p]), bits(y[r, :, :, :p])), f"{name} row {r}"
        else:
            assert torch.equal(bits(x), bits(y)), name


@pytest.mark.parametrize("B", [1, 3, 8])
@pytest.mark.parametrize("per_split", [32, 6])
def test_one_launch_equals_a_launch_a_step(mk, B, per_split):
    if B > mk.max_batch:
        pytest.skip(f"B={B} above this GPU's max_batch {mk.max_batch}")
    with variant_restored(mk):
        mk.positions_per_split = per_split
        state, first = prefilled(mk, B)
        ref = mk.clone_state(state)
        want = one_launch_a_step(mk, first, ref, 40)
        seen = []
        got = mk.decode_greedy(first, state, 40, on_step=lambda i, ids: seen.append(ids))
        assert torch.equal(got, want)
        assert seen == want.tolist()
        assert_same_state(state, ref)
        mk.check(ref)


@pytest.mark.parametrize("B", [1, 3])
def test_stop_ids_end_the_launch_mid_way(mk, B):
    state, first = prefilled(mk, B)
    want = one_launch_a_step(mk, first, mk.clone_state(state), 30)
    # each row's stop id: its first id from step 6 on that no row produced before (where there is one)
    w = want.tolist()
    seen_before = lambda j: {x for row in w[:j] for x in row}  # noqa: E731
    stop = tuple(next((w[j][b] for j in range(6, 30) if w[j][b] not in seen_before(j)), w[6][b]) for b in range(B))
    n = next(i + 1 for i in range(30) if all(any(w[j][b] in stop for j in range(i + 1)) for b in range(B)))
    print(f"stop ids {stop}: the launch ends after step {n} of 30")
    ref = mk.clone_state(state)
    one_launch_a_step(mk, first, ref, n)
    got = mk.decode_greedy(first, state, 30, stop_ids=stop)
    assert torch.equal(got, want[:n])
    assert_same_state(state, ref)
    # and the state decodes on from there exactly as the one-launch-a-step copy does
    assert torch.equal(mk.decode_greedy(got[-1].to(mk.device), state, 5), one_launch_a_step(mk, got[-1].to(mk.device), ref, 5))


def test_poisoned_workspace_and_repeats_change_no_bit(mk):
    state, first = prefilled(mk, 3)
    copies = [mk.clone_state(state) for _ in range(2)]
    plain = mk.decode_greedy(first, state, 24)
    again = mk.decode_greedy(first, copies[0], 24)
    with debug_poisoned(mk):
        poisoned = mk.decode_greedy(first, copies[1], 24)
    assert torch.equal(plain, again) and torch.equal(plain, poisoned)
    assert_same_state(state, copies[0])
    assert_same_state(state, copies[1])
    assert torch.isnan(copies[1].k_cache[0, :, :, copies[1].positions[0]:].float()).all()  # (the poison was there)


def test_ids_stream_while_the_launch_runs(mk):
    state, first = prefilled(mk, 1, max_seq_len=400)
    t0, stamps = time.perf_counter(), []
    mk.decode_greedy(first, state, 256, on_step=lambda i, ids: stamps.append(time.perf_counter() - t0))
    total = time.perf_counter() - t0
    assert len(stamps) == 256
    assert stamps[0] < 0.25 * total, (stamps[0], total)  # the first id long before the launch ends
    assert stamps[127] < 0.75 * total, (stamps[127], total)


def test_a_consumer_that_raises_loses_no_step(mk):
    state, first = prefilled(mk, 1)
    ref = mk.clone_state(state)
    start = state.positions[0]

    def stop_reading(i, ids):
        if i == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        mk.decode_greedy(first, state, 20, on_step=stop_reading)
    assert state.positions == [start + 20]  # the launch ran all 20 steps
    assert info.value.decoded_ids.shape == (20, 1)  # and the caller gets their ids (the last: where to go on from)
    one_launch_a_step(mk, first, ref, 20)
    assert_same_state(state, ref)


def test_an_id_outside_the_vocabulary_is_refused_on_the_device(mk):
    state, first = prefilled(mk, 3)
    ref = mk.clone_state(state)
    bad = first.clone()
    bad[1] = mk.config.vocab_size + 5
    with pytest.raises(TierInputError, match=r"token id 248325 \(batch row 1\).*did not run"):
        mk.decode_greedy(bad, state, 10)  # (a device tensor: checked by the kernel, not the host)
    assert_same_state(state, ref)
    assert torch.equal(mk.decode_greedy(first, state, 10), one_launch_a_step(mk, first, ref, 10))


def test_a_row_with_nan_logits_ends_the_launch(mk):
    """NaN in one row's recurrent state: that row's logits have no maximum, its id is outside the
    vocabulary (2^31 - 1, as a one-step launch gives it), and the launch ends after that step rather
    than feed that id's embedding row to the next; the other rows' ids are the one-step launch's."""
    state, first = prefilled(mk, 3)
    state.dn_state[1].fill_(float("nan"))
    ref = mk.clone_state(state)
    want = mk.decode_argmax(first, ref).cpu()
    got = mk.decode_greedy(first, state, 10)
    assert got.shape == (1, 3) and int(got[0, 1]) == 2 ** 31 - 1
    assert torch.equal(got[0], want)
    assert state.positions == ref.positions


# ---- sampling on the device (reference/sampling.py: the Gumbel-max draw inside the argmax) ----

def test_sampled_launch_is_the_specs_draw_at_every_step(mk):
    """decode_sample in one launch: replayed a launch a step with the same ids fed in, every step's
    ids are reference/sampling.py's draw from the one-step kernel's logits (at most one near-tie of
    48 apart: the device's logf against torch's log), and the state ends in the same bits."""
    from reference import sampling

    state, first = prefilled(mk, 3)
    replay = mk.clone_state(state)
    got = mk.decode_sample(first, state, 16, temperature=1.0, seed=7)
    assert got.shape == (16, 3)
    cur, apart = first, 0
    for i in range(16):
        positions = list(replay.positions)
        want = sampling.sample(mk.decode(cur, replay), 1.0, 7, positions)
        apart += int((want != got[i]).sum())
        cur = got[i].to(mk.device)  # (the launch's ids go on, as the launch fed them)
    assert apart <= 1, apart
    assert_same_state(state, replay)
    again = mk.decode_sample(first, prefilled(mk, 3)[0], 16, temperature=1.0, seed=7)
    assert torch.equal(got, again)  # a seed repeats a run


def test_sampled_ids_follow_the_softmax(mk):
    """2,000 draws of one step from one state (8 copies of a row per launch, each row its own
    noise): the counts of the likeliest ids and of the rest against softmax(logits / T) from the
    one-step kernel's logits, T set so the likeliest id has ~30% (a chi-square test)."""
    state1, first1 = prefilled(mk, 1)
    logits = mk.decode(first1, mk.clone_state(state1))[0].float()
    lo, hi = 1e-3, 1e3  # T where the top probability is 0.3
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if float(torch.softmax(logits / mid, -1).max()) > 0.3 else (lo, mid)
    T = (lo * hi) ** 0.5
    p = torch.softmax(logits / T, -1).cpu()
    top = torch.argsort(p, descending=True)[:12]
    top = top[p[top] * 2000 >= 5]
    state = mk.new_state(8, 64)
    for r in range(8):
        mk.prefill(random_ids(16, seed=70), state, row=r)  # 8 copies of prefilled(mk, 1)'s row
    ids = torch.full((8,), int(first1[0]), dtype=torch.int64)
    counts = torch.zeros(p.numel())
    for seed in range(250):
        counts += torch.bincount(mk.decode_sample(ids, mk.clone_state(state), 1, temperature=T, seed=seed)[0],
                                 minlength=p.numel()).float()
    expect = torch.cat([p[top] * 2000, (1 - p[top].sum()).view(1) * 2000])
    seen = torch.cat([counts[top], (2000 - counts[top].sum()).view(1)])
    chi2 = float(((seen - expect) ** 2 / expect.clamp_min(1e-9)).sum())
    df = len(expect) - 1
    assert chi2 < df + 6 * (2 * df) ** 0.5, (chi2, df, seen.tolist(), expect.tolist())  # ~6 sigma of chi2(df)
