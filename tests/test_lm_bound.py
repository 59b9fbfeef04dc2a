"""megakernel/lm_bound.py, batch 1's greedy argmax from the lm_head's int8 copy (the kernel's
lm_head_bounded): the copy's bound holds for every row and any input (so no row it rules out could win),
the selection gives the argmax of the bf16 logits with ties to the lowest index (rows equal, rows one bf16
step apart, inputs of any scale, non-finite rows and inputs), and on the built-in model's lm_head it leaves
only a handful of rows to compute exactly."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from megakernel import lm_bound


def exact_argmax(w, x):
    return lm_bound.first_argmax(lm_bound.bf16_round(w.float() @ x.float()))


def matrix(seed, V, D, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(V, D, generator=g) * 0.02 * spread).to(torch.bfloat16)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), V=st.integers(1, 300), D=st.sampled_from([8, 64, 256, 1024]),
       xscale=st.sampled_from([1e-3, 1.0, 30.0, 1e4]), spread=st.sampled_from([0.1, 1.0, 50.0]))
def test_the_bound_holds_for_every_row(seed, V, D, xscale, spread):
    w = matrix(seed, V, D, spread)
    q, sc = lm_bound.quantize(w)
    assert q.shape == (V + 1, D) and q.dtype == torch.uint8 and sc.shape == (V, 2) and sc.dtype == torch.float32
    assert torch.all(q[-1] == 0) and int(q[:-1].min()) >= 1, "q + 128 in [1, 255]; the pad row zeros"
    x = torch.randn(D, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64) * xscale
    exact = w.double() @ x
    approx = sc[:, 0].double() * ((q[:-1].double() - lm_bound.Q_OFFSET) @ x)
    bound = sc[:, 1].double() * x.norm()
    assert torch.all((exact - approx).abs() <= bound), float(((exact - approx).abs() - bound).max())


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2 ** 31 - 1), V=st.integers(1, 400), D=st.sampled_from([16, 128, 1024]),
       ties=st.integers(0, 6), near=st.integers(0, 6))
def test_the_selection_is_the_bf16_argmax(seed, V, D, ties, near):
    """Rows copied (exact ties: the lowest index wins) and rows one bf16 step off the best: the
    selection must agree with the plain argmax of the bf16 logits."""
    g = torch.Generator().manual_seed(seed)
    w = matrix(seed, V, D)
    x = torch.randn(D, generator=g)
    best = exact_argmax(w, x)
    for _ in range(ties):
        w[int(torch.randint(0, V, (1,), generator=g))] = w[best]
    for _ in range(near):
        r = int(torch.randint(0, V, (1,), generator=g))
        w[r] = w[best]
        k = int(torch.randint(0, D, (1,), generator=g))
        w[r, k] = torch.nextafter(w[r, k].float(), torch.tensor(float("inf"))).to(torch.bfloat16)
    q, sc = lm_bound.quantize(w)
    got, computed = lm_bound.argmax(w, q, sc, x)
    assert got == exact_argmax(w, x)
    assert 1 <= computed <= V


def test_non_finite_rows_and_inputs():
    w = matrix(3, 50, 64)
    x = torch.randn(64, generator=torch.Generator().manual_seed(4))
    w[7, 3] = float("inf")
    w[9, 0] = float("nan")
    q, sc = lm_bound.quantize(w)
    assert sc[7, 0] == 0 and sc[7, 1] == float("inf") and sc[9, 1] == float("inf"), "a non-finite row is never ruled out"
    assert lm_bound.argmax(w, q, sc, x)[0] == exact_argmax(w, x)
    assert lm_bound.argmax(w, q, sc, torch.full((64,), float("nan")))[0] == -1  # all NaN: no argmax
    xi = x.clone()
    xi[5] = float("inf")
    assert lm_bound.argmax(w, q, sc, xi) == (exact_argmax(w, xi), 50)  # no bound: every row exactly
    z = torch.zeros(50, 64, dtype=torch.bfloat16)
    qz, scz = lm_bound.quantize(z)
    assert lm_bound.argmax(z, qz, scz, x)[0] == 0  # all zero logits: the first row


def test_huge_rows_and_tiny_inputs_are_computed_exactly():
    """A finite row of values past HUGE (its fp32 sums could overflow to NaN in the kernel) is never ruled
    out; an input whose squares are subnormal (|x|_2 would come out low) sends every row to the exact pass."""
    w = matrix(5, 40, 64)
    w[3, :16] = 2.0 ** 100
    q, sc = lm_bound.quantize(w)
    assert sc[3, 0] == 0 and sc[3, 1] == float("inf") and torch.isfinite(sc[[0, 1, 2, 4], 1]).all()
    x = torch.randn(64, generator=torch.Generator().manual_seed(6))
    assert lm_bound.argmax(w, q, sc, x)[0] == exact_argmax(w, x)
    tiny = x * 2.0 ** -60
    assert lm_bound.argmax(w, q, sc, tiny) == (exact_argmax(w, tiny), 40)


def test_quantize_refuses_what_it_cannot_copy():
    with pytest.raises(ValueError, match="bfloat16"):
        lm_bound.quantize(torch.zeros(4, 8))
    with pytest.raises(ValueError, match=r"\[V, D\]"):
        lm_bound.quantize(torch.zeros(8, dtype=torch.bfloat16))


@pytest.fixture(scope="module")
def built_in_head():
    """The built-in 0.8B's lm_head (its embedding, seeded random), its int8 copy, and hidden states the size the
    final norm gives (Qwen3.5's RMSNorm: x (1 + w))."""
    from reference import ModelConfig, perturb_norms, random_weights

    config = ModelConfig.qwen3_5_0_8b()
    weights = perturb_norms(random_weights(config, seed=0, dtype=torch.bfloat16))
    w = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])
    q, sc = lm_bound.quantize(w)
    norm = weights["model.norm.weight"].float()
    g = torch.Generator().manual_seed(5)
    xs = []
    for _ in range(4):
        h = torch.randn(config.hidden_size, generator=g)
        xs.append(h * torch.rsqrt(h.pow(2).mean() + 1e-6) * (1 + norm))
    return w, q, sc, xs


def test_few_rows_left_on_the_built_in_head(built_in_head):
    """Against hidden states the size the final norm gives, the int8 copy leaves a few rows of 248,320 to compute
    exactly."""
    w, q, sc, xs = built_in_head
    for x in xs[:3]:
        got, computed = lm_bound.argmax(w, q, sc, x)
        assert got == exact_argmax(w, x)
        assert computed <= 64, computed


def test_a_batch_rows_lists_fit_their_cap_on_the_built_in_head(built_in_head):
    """lm_head_bounded_batch's lists, as the kernel makes them (a block's slice of the vocabulary at 132 blocks, items
    of 128 rows, a row listed when its bf16 upper bound reaches the best lower bound so far, its item's included): on
    the built-in head every block's list fits LM_BATCH_CAP (csrc/shapes.cuh; a list past it sends the block's whole
    slice, ~1,880 rows, to the exact pass: session 35 measured a cap of 40 at -15% at B = 8; here the lists reach 44),
    and the rows kept for the exact pass (those reaching the block's final best lower bound, ~700 of ~1,900 listed)
    hold the argmax."""
    from test_megakernel import shapes_header

    cap = shapes_header()["LM_BATCH_CAP"]
    w, q, sc, xs = built_in_head
    V, G, ITEM = w.shape[0], 132, 128
    qf = q[:-1].float() - lm_bound.Q_OFFSET
    for x in xs:
        approx = sc[:, 0] * (qf @ x)
        e = sc[:, 1] * (x.norm() * (1 + 2.0 ** -12)) + lm_bound.ABS_SLACK
        low, up = approx - e, lm_bound.bf16_round(approx + e)
        exact = lm_bound.bf16_round(w.float() @ x)
        listed, kept = [], []
        for blk in range(G):
            r0, r1 = V * blk // G, V * (blk + 1) // G
            lr, rows = -float("inf"), []
            for i0 in range(r0, r1, ITEM):
                i1 = min(r1, i0 + ITEM)
                lr = max(lr, float(low[i0:i1].max()))
                rows.append(i0 + torch.nonzero(up[i0:i1] >= lm_bound.bf16_round(torch.tensor(lr))).flatten())
            rows = torch.cat(rows)
            listed.append(rows.numel())
            kept.append(rows[up[rows] >= lm_bound.bf16_round(torch.tensor(lr))])
        assert max(listed) <= cap, (max(listed), cap)
        kept = torch.cat(kept)
        assert kept.numel() < sum(listed) / 2  # (the compaction's point: most listed rows cannot win)
        assert int(kept[lm_bound.first_argmax(exact[kept])]) == exact_argmax(w, x)


def f32_fma(a, b, c):
    """fmaf in float32 (the product exact in float64, one rounding of the sum: at most a double rounding off)."""
    import numpy as np

    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def warp_sum(lanes):
    """device_common.cuh warp_sum: the xor butterfly over 32 lanes (axis 0), in float32."""
    v = lanes.copy()
    for o in (16, 8, 4, 2, 1):
        v = (v + v[[l ^ o for l in range(32)]]).astype(v.dtype)
    return v[0]


@pytest.mark.parametrize("case", ["gaussian", "spiky x", "wide rows", "tiny x"])
def test_the_bound_holds_in_the_kernels_fp32_order(case):
    """Both of batch 1's sums as the kernel orders them in fp32 (lm_head_bounded: lane l's 16 k of each half,
    16 l .. and 512 + 16 l .., fma after fma, then the butterfly, times the scale; the bf16 pass: lane l's 8 k
    of each quarter, 8 (32 c + l) .., dot8's fmas, the butterfly) against the bound the kernel uses: err_r |x|_2
    (1 + 2^-12) + 2^-120. The float64 test above checks the rounding's part; this the fp32 sums' allowance."""
    import numpy as np

    D, V = 1024, 600
    g = torch.Generator().manual_seed({"gaussian": 1, "spiky x": 2, "wide rows": 3, "tiny x": 4}[case])
    w = matrix(7, V, D, spread=30.0 if case == "wide rows" else 1.0)
    if case == "wide rows":
        w[:, :8] *= 15
    x = torch.randn(D, generator=g)
    if case == "spiky x":
        x[:3] *= 300
    if case == "tiny x":
        x *= 2.0 ** -40
    q, sc = lm_bound.quantize(w)
    W, X = w.float().numpy(), x.numpy().astype(np.float32)
    Q = (q[:-1].numpy().astype(np.float32) - lm_bound.Q_OFFSET)
    # the bf16 pass: lane l, c = 0..3, j = 0..7: k = 8 (32 c + l) + j
    acc = np.zeros((32, V), np.float32)
    for c in range(4):
        for j in range(8):
            k = 8 * (32 * c + np.arange(32)) + j
            acc = f32_fma(W[:, k].T, X[k][:, None], acc)
    exact = warp_sum(acc)
    # the int8 pass: lane l, h = 0, 1, j = 0..15: k = 512 h + 16 l + j
    acc = np.zeros((32, V), np.float32)
    for h in range(2):
        for j in range(16):
            k = 512 * h + 16 * np.arange(32) + j
            acc = f32_fma(Q[:, k].T, X[k][:, None], acc)
    approx = (sc[:, 0].numpy() * warp_sum(acc)).astype(np.float32)
    ss = np.zeros(32, np.float32)  # |x|_2^2 as the kernel sums it: lane l's 32 x in the same order, then the butterfly
    for h in range(2):
        for j in range(16):
            k = 512 * h + 16 * np.arange(32) + j
            ss = f32_fma(X[k], X[k], ss)
    ss = warp_sum(ss)
    if not ss >= lm_bound.SMALL:
        return  # (the kernel takes every row exactly)
    xn = np.float32(np.sqrt(ss) * np.float32(1 + 2.0 ** -12))
    e = f32_fma(sc[:, 1].numpy(), np.full(V, xn, np.float32), np.full(V, 2.0 ** -120, np.float32))
    gap = np.abs(exact.astype(np.float64) - approx.astype(np.float64))
    assert np.all(gap <= e), float((gap - e).max())
