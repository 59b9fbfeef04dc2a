"""Every Triton-tier op against its reference op, on fresh random inputs of drawn shapes.

fp32, tiny shapes: on a CPU under TRITON_INTERPRET=1 (tests/conftest.py sets it when no
GPU is visible), on a GPU natively. Outputs are allocated NaN-poisoned, so an element a
kernel forgets to write fails. fla's kernels run on the CPU through
`triton_kernels.fla_interpreter` (first autotune config only, a `range` with `.to`).
"""

from __future__ import annotations


import torch
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st

import reference.ops as ref

from helpers import DEVICE, TRITON_CAN_RUN, TRITON_MARKS

pytestmark = TRITON_MARKS

if TRITON_CAN_RUN:
    import triton_kernels.ops as tri
    from triton_kernels import conv1d, gemv, qk_norm_rope
    from triton_kernels.attention_decode import gated_attention_decode
    from triton_kernels.delta_rule import recurrent_step_
    from helpers import assert_close, poisoned_allocations

TOL = 1e-5
# fla's chunk kernel runs its dots in TF32 on a GPU (exact in the interpreter)
TOL_FLA_CHUNK = 1e-5 if DEVICE == "cpu" else 5e-3
FEW = settings(max_examples=8, deadline=None)
FEWER = settings(max_examples=4, deadline=None)


def rand(*shape, seed, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=gen) * scale).to(DEVICE)


def wider(shape, extra, seed):
    """A [..., n] view into a [..., n + extra] tensor: strided rows, as a fused projection gives."""
    *lead, n = shape
    return rand(*lead, n + extra, seed=seed)[..., extra:]


seeds = st.integers(0, 2**31 - 1)


# ---- norms -----------------------------------------------------------------------

@FEW
@given(B=st.integers(1, 3), T=st.integers(1, 20), D=st.sampled_from([16, 40, 64, 100]),
       with_residual=st.booleans(), seed=seeds)
@example(B=1, T=1, D=64, with_residual=True, seed=0)
def test_add_rms_norm(B, T, D, with_residual, seed):
    x = wider((B, T, D), 8, seed)
    residual = rand(B, T, D, seed=seed + 1) if with_residual else None
    w = rand(D, seed=seed + 2, scale=0.1)
    with poisoned_allocations():
        out, res = tri.add_rms_norm(x=x, residual=residual, weight=w, eps=1e-6)
    ref_out, ref_res = ref.add_rms_norm(x=x, residual=residual, weight=w, eps=1e-6)
    assert_close(out, ref_out, TOL, "normed")
    assert_close(res, ref_res, TOL, "residual")
    assert_close(tri.rms_norm(x=x, weight=w, eps=1e-6), ref.rms_norm(x=x, weight=w, eps=1e-6), TOL, "rms_norm")


@FEW
@given(B=st.integers(1, 2), T=st.integers(1, 9), H=st.integers(1, 5), d=st.sampled_from([8, 16, 24]), seed=seeds)
def test_gated_rms_norm(B, T, H, d, seed):
    x = rand(B, T, H, d, seed=seed)
    gate = wider((B, T, H, d), 4, seed + 1)
    w = 1 + rand(d, seed=seed + 2, scale=0.1)
    with poisoned_allocations():
        out = tri.gated_rms_norm(x=x, gate=gate, weight=w, eps=1e-6)
    assert_close(out, ref.gated_rms_norm(x=x, gate=gate, weight=w, eps=1e-6), TOL)


# ---- DeltaNet pieces ---------------------------------------------------------------

@FEW
@given(rows=st.integers(1, 40), d=st.sampled_from([8, 16, 100, 128]), seed=seeds)
def test_l2norm(rows, d, seed):
    x = wider((rows, d), 3, seed)
    with poisoned_allocations():
        out = tri.l2norm(x=x, eps=1e-6)
    assert_close(out, ref.l2norm(x=x, eps=1e-6), TOL)


@FEW
@given(B=st.integers(1, 2), T=st.integers(1, 20), Hk=st.sampled_from([1, 2, 3]), group=st.sampled_from([1, 2, 4]),
       dk=st.sampled_from([8, 16, 32]), seed=seeds)
@example(B=1, T=1, Hk=2, group=2, dk=16, seed=0)
def test_delta_rule_inputs(B, T, Hk, group, dk, seed):
    Hv = Hk * group
    y = rand(B, T, 2 * Hk * dk + 8, seed=seed)                       # q | k inside a wider conv output
    q = y[..., :Hk * dk].unflatten(-1, (Hk, dk))
    k = y[..., Hk * dk:2 * Hk * dk].unflatten(-1, (Hk, dk))
    proj = rand(B, T, 2 * Hv + 4, seed=seed + 1, scale=4.0)          # b | a inside a wider projection
    proj[..., 0] = 25.0                                              # softplus's pass-through branch
    b, a = proj[..., :Hv], proj[..., Hv:2 * Hv]
    A_log = torch.empty(Hv).uniform_(0.01, 16).log().to(DEVICE)
    dt_bias = rand(Hv, seed=seed + 2)
    with poisoned_allocations():
        outs = tri.delta_rule_inputs(q=q, k=k, a=a, b=b, A_log=A_log, dt_bias=dt_bias, eps=1e-6)
    refs = ref.delta_rule_inputs(q=q, k=k, a=a, b=b, A_log=A_log, dt_bias=dt_bias, eps=1e-6)
    for name, o, r in zip(("q", "k", "g", "beta"), outs, refs):
        assert o.dtype == torch.float32
        assert_close(o, r, TOL, name)


@FEW
@given(B=st.integers(1, 2), T=st.integers(1, 40), C=st.sampled_from([8, 24, 40, 136]),
       with_state=st.booleans(), seed=seeds)
@example(B=1, T=2, C=24, with_state=True, seed=0)          # shorter than the state: it shifts through
@example(B=2, T=17, C=136, with_state=True, seed=1)        # a time block and a channel block past full
def test_causal_conv1d(B, T, C, with_state, seed):
    x = wider((B, T, C), 8, seed)
    w = rand(C, 4, seed=seed + 1, scale=0.5)
    state = rand(B, C, 3, seed=seed + 2) if with_state else None
    with poisoned_allocations():
        y, new_state = tri.causal_conv1d(x=x, weight=w, conv_state=state)
    ref_y, ref_state = ref.causal_conv1d(x=x, weight=w, conv_state=state)
    assert_close(y, ref_y, TOL, "y")
    assert_close(new_state, ref_state, TOL, "state")


@FEW
@given(B=st.integers(1, 3), C=st.sampled_from([8, 40, 300]), in_place=st.booleans(), seed=seeds)
def test_causal_conv1d_step(B, C, in_place, seed):
    x = wider((B, C), 4, seed)
    w = rand(C, 4, seed=seed + 1, scale=0.5)
    state = rand(B, C, 3, seed=seed + 2)
    ref_y, ref_state = ref.causal_conv1d_step(x=x, weight=w, conv_state=state)
    with poisoned_allocations():
        if in_place:
            y = conv1d.step(x=x, weight=w, conv_state=state, out_state=state)
            new_state = state
        else:
            y, new_state = tri.causal_conv1d_step(x=x, weight=w, conv_state=state)
    assert_close(y, ref_y, TOL, "y")
    assert_close(new_state, ref_state, TOL, "state")


def _delta_inputs(B, T, Hk, Hv, dk, dv, seed):
    q = ref.l2norm(x=rand(B, T, Hk, dk, seed=seed)) * dk ** -0.5
    k = ref.l2norm(x=rand(B, T, Hk, dk, seed=seed + 1))
    v = rand(B, T, Hv, dv, seed=seed + 2)
    g = F.logsigmoid(rand(B, T, Hv, seed=seed + 3) + 2)
    beta = torch.sigmoid(rand(B, T, Hv, seed=seed + 4))
    state = rand(B, Hv, dk, dv, seed=seed + 5, scale=0.3)
    return q, k, v, g, beta, state


@FEWER
@given(B=st.integers(1, 2), T=st.sampled_from([1, 5, 20, 70]), group=st.sampled_from([1, 2]),
       with_state=st.booleans(), seed=seeds)
@example(B=1, T=70, group=2, with_state=True, seed=0)      # two chunks, the second partial
def test_gated_delta_rule_chunked(B, T, group, with_state, seed):
    q, k, v, g, beta, state = _delta_inputs(B, T, 2, 2 * group, 16, 16, seed)
    state = state if with_state else None
    o, final = tri.gated_delta_rule_chunked(q=q, k=k, v=v, g=g, beta=beta, initial_state=state)
    ref_o, ref_final = ref.gated_delta_rule_recurrent(q=q, k=k, v=v, g=g, beta=beta, initial_state=state)
    assert_close(o, ref_o, TOL_FLA_CHUNK, "o")
    assert_close(final, ref_final, TOL_FLA_CHUNK, "state")


@FEWER
@given(B=st.integers(1, 2), T=st.integers(1, 6), group=st.sampled_from([1, 2]), seed=seeds)
def test_gated_delta_rule_recurrent(B, T, group, seed):
    q, k, v, g, beta, state = _delta_inputs(B, T, 2, 2 * group, 16, 16, seed)
    o, final = tri.gated_delta_rule_recurrent(q=q, k=k, v=v, g=g, beta=beta, initial_state=state)
    ref_o, ref_final = ref.gated_delta_rule_recurrent(q=q, k=k, v=v, g=g, beta=beta, initial_state=state)
    assert_close(o, ref_o, TOL, "o")
    assert_close(final, ref_final, TOL, "state")


@FEWER
@given(B=st.integers(1, 2), group=st.sampled_from([1, 2]), seed=seeds)
def test_recurrent_step_in_place(B, group, seed):
    q, k, v, g, beta, state = _delta_inputs(B, 1, 2, 2 * group, 16, 16, seed)
    ref_o, ref_final = ref.gated_delta_rule_recurrent(q=q, k=k, v=v, g=g, beta=beta, initial_state=state)
    o = recurrent_step_(q=q, k=k, v=v, g=g, beta=beta, state=state)
    assert_close(o, ref_o, TOL, "o")
    assert_close(state, ref_final, TOL, "state")


# ---- MLP and matrix products ------------------------------------------------------------

@FEW
@given(rows=st.integers(1, 12), I=st.sampled_from([8, 50, 1030]), seed=seeds)
def test_swiglu(rows, I, seed):
    gate_up = rand(rows, 2 * I, seed=seed)
    gate, up = gate_up[:, :I], gate_up[:, I:]
    with poisoned_allocations():
        out = tri.swiglu(gate=gate, up=up)
    assert_close(out, ref.swiglu(gate=gate, up=up), TOL)


gemv_configs = st.sampled_from([None, (4, 32, 4), (1, 16, 1), (8, 64, 2), (2, 256, 4)])


def assert_dot_close(out, expected, x, w, name="output"):
    """out ≈ x @ wᵀ (expected: the reference's) within TOL of the terms' magnitudes |x| @ |w|ᵀ, no
    NaN: a dot product whose terms cancel keeps the absolute error of its summation, not its
    relative one (CI, 2026-11-26: N = 1, I = 136 gave 1.0e-4 relative of a 4.4e-4 output, 1.7e-8 of
    its terms' magnitude), so a relative bound alone fails on a well-summed dot."""
    assert_close(out, expected, TOL, name, scale=ref.linear(x=x.abs(), weight=w.abs()))


@FEW
@given(N=st.integers(1, 200), K=st.sampled_from([8, 24, 64, 136, 300]), config=gemv_configs, seed=seeds)
@example(N=64, K=64, config=(4, 32, 4), seed=0)            # no masks at all
def test_gemv(N, K, config, seed):
    x = rand(1, 1, K, seed=seed)
    w = rand(N, K, seed=seed + 1, scale=K ** -0.5)
    with poisoned_allocations():
        out = gemv.gemv(x, w, config=config)
        linear_out = tri.linear(x=x, weight=w)
    assert_dot_close(out, ref.linear(x=x, weight=w), x, w, "gemv")
    assert_dot_close(linear_out, ref.linear(x=x, weight=w), x, w, "linear")


@FEW
@given(N=st.integers(1, 100), I=st.sampled_from([8, 40, 136]), config=gemv_configs, seed=seeds)
@example(N=1, I=136, config=None, seed=882068)  # one output whose terms cancel (CI 2026-11-26)
def test_gemv_swiglu_input(N, I, config, seed):
    gate_up = rand(1, 1, 2 * I, seed=seed)
    w = rand(N, I, seed=seed + 1, scale=I ** -0.5)
    with poisoned_allocations():
        out = gemv.gemv(gate_up, w, swiglu_input=True, config=config)
    act = ref.swiglu(gate=gate_up[..., :I], up=gate_up[..., I:])
    expected = ref.linear(x=act, weight=w)
    assert_dot_close(out, expected, act, w)
    assert_dot_close(gemv.swiglu_linear(gate_up=gate_up, weight=w, backend="cublas"), expected, act, w, "cublas path")


@FEW
@given(rows=st.integers(2, 9), N=st.integers(1, 64), K=st.sampled_from([8, 40]), seed=seeds)
def test_linear_several_rows(rows, N, K, seed):
    x = rand(rows, K, seed=seed)
    w = rand(N, K, seed=seed + 1)
    assert_dot_close(tri.linear(x=x, weight=w), ref.linear(x=x, weight=w), x, w)


@FEW
@given(B=st.integers(1, 3), V=st.integers(1, 5000), seed=seeds)
@example(B=2, V=3000, seed=0)
def test_lm_head_and_argmax(B, V, seed):
    x = rand(B, 32, seed=seed)
    E = rand(V, 32, seed=seed + 1)
    with poisoned_allocations():
        logits = tri.lm_head(x=x, weight=E)
    assert logits.dtype == torch.float32
    assert_close(logits, ref.lm_head(x=x, weight=E), TOL)
    planted = rand(B, V, seed=seed + 2)
    planted[:, V // 2] = planted[:, -1] = 100.0                      # a tie: the first index wins
    for t in (logits, planted):
        with poisoned_allocations():
            ids = tri.argmax(t)
        assert torch.equal(ids.cpu(), t.argmax(-1).cpu())


# ---- gated attention ---------------------------------------------------------------

@FEW
@given(B=st.integers(1, 2), T=st.integers(1, 12), Hkv=st.sampled_from([1, 2]), group=st.sampled_from([1, 2, 4]),
       d=st.sampled_from([16, 32]), rot=st.sampled_from([4, 8, 16]), start=st.integers(0, 5000), seed=seeds)
def test_qk_norm_rope(B, T, Hkv, group, d, rot, start, seed):
    Hq = Hkv * group
    qg = rand(B, T, Hq, 2 * d, seed=seed)                           # per head [q | gate], as q_proj gives
    q = qg[..., :d]
    k = wider((B, T, Hkv, d), 4, seed + 1)
    qw, kw = rand(d, seed=seed + 2, scale=0.1), rand(d, seed=seed + 3, scale=0.1)
    positions = torch.arange(start, start + T, device=DEVICE)
    kwargs = dict(q_weight=qw, k_weight=kw, positions=positions, rotary_dim=rot, theta=1e7, eps=1e-6)
    with poisoned_allocations():
        q_out, k_out = tri.qk_norm_rope(q=q, k=k, **kwargs)
    ref_q, ref_k = ref.qk_norm_rope(q=q, k=k, **kwargs)
    assert_close(q_out, ref_q, TOL, "q")
    assert_close(k_out, ref_k, TOL, "k")


@FEW
@given(B=st.integers(1, 2), T=st.integers(1, 6), start=st.integers(0, 20), seed=seeds)
def test_qk_norm_rope_writes_cache(B, T, start, seed):
    Hq, Hkv, d, S = 4, 2, 16, 32
    q, k, v = rand(B, T, Hq, d, seed=seed), rand(B, T, Hkv, d, seed=seed + 1), rand(B, T, Hkv, d, seed=seed + 2)
    qw, kw = rand(d, seed=seed + 3, scale=0.1), rand(d, seed=seed + 4, scale=0.1)
    positions = torch.arange(start, start + T, device=DEVICE)
    kwargs = dict(q_weight=qw, k_weight=kw, positions=positions, rotary_dim=8, theta=1e7, eps=1e-6)
    k_cache, v_cache = rand(B, Hkv, S, d, seed=seed + 5), rand(B, Hkv, S, d, seed=seed + 6)
    ref_kc, ref_vc = k_cache.clone(), v_cache.clone()
    ref_q, ref_k = ref.qk_norm_rope(q=q, k=k, **kwargs)
    ref_kc[:, :, start:start + T] = ref_k.transpose(1, 2)
    ref_vc[:, :, start:start + T] = v.transpose(1, 2)
    q_out = qk_norm_rope.launch(q=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache, **kwargs)
    assert_close(q_out, ref_q, TOL, "q")
    assert torch.equal(k_cache[:, :, :start], ref_kc[:, :, :start]) and torch.equal(v_cache, ref_vc)
    assert_close(k_cache, ref_kc, TOL, "k cache")


def _cache(B, Hkv, S, d, n_ctx, seed):
    """A KV cache whose positions past n_ctx hold NaN: reading them would fail the test."""
    k, v = rand(B, Hkv, S, d, seed=seed), rand(B, Hkv, S, d, seed=seed + 1)
    k[:, :, n_ctx:] = float("nan")
    v[:, :, n_ctx:] = float("nan")
    return k, v


@FEW
@given(B=st.integers(1, 2), Hkv=st.sampled_from([1, 2]), group=st.sampled_from([1, 2, 4]),
       d=st.sampled_from([16, 32]), S=st.integers(1, 300), where=st.floats(0, 1),
       splits=st.sampled_from([None, 1, 3, 7]), seed=seeds)
@example(B=1, Hkv=2, group=4, d=32, S=1, where=0.0, splits=None, seed=0)
@example(B=2, Hkv=1, group=2, d=16, S=300, where=1.0, splits=7, seed=1)
def test_gated_attention_decode(B, Hkv, group, d, S, where, splits, seed):
    start = round(where * (S - 1))                                   # the new token's position
    Hq = Hkv * group
    qg = rand(B, 1, Hq, 2 * d, seed=seed)
    q, gate = qg[..., :d], qg[..., d:]
    k_cache, v_cache = _cache(B, Hkv, S, d, start + 1, seed + 1)
    expected = ref.gated_attention(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, start_pos=start)
    with poisoned_allocations():
        out = tri.gated_attention(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, start_pos=start)
        pos = torch.full((1,), start, dtype=torch.int64, device=DEVICE)
        split_out = gated_attention_decode(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, pos=pos, splits=splits)
    assert_close(out, expected, TOL)
    assert_close(split_out, expected, TOL, f"{splits} splits")


@FEW
@given(B=st.integers(1, 2), T=st.integers(2, 40), start=st.integers(0, 30), Hkv=st.sampled_from([1, 2]),
       group=st.sampled_from([1, 4]), d=st.sampled_from([16, 32]), seed=seeds)
@example(B=1, T=33, start=0, Hkv=2, group=4, d=32, seed=0)
def test_gated_attention_prefill(B, T, start, Hkv, group, d, seed):
    Hq = Hkv * group
    qg = rand(B, T, Hq, 2 * d, seed=seed)
    q, gate = qg[..., :d], qg[..., d:]
    k_cache, v_cache = _cache(B, Hkv, start + T + 3, d, start + T, seed + 1)
    with poisoned_allocations():
        out = tri.gated_attention(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, start_pos=start)
    assert_close(out, ref.gated_attention(q=q, gate=gate, k_cache=k_cache, v_cache=v_cache, start_pos=start), TOL)


def test_embedding():
    E = rand(50, 8, seed=0)
    ids = torch.randint(0, 50, (2, 7), device=DEVICE)
    assert torch.equal(tri.embedding(ids=ids, weight=E), ref.embedding(ids=ids, weight=E))
