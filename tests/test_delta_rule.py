"""The chunked (WY) form of the gated delta rule equals the recurrent definition."""

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from helpers import assert_close
from reference.delta_rule import gated_delta_rule_chunked, gated_delta_rule_recurrent
from reference.ops import l2norm


def random_inputs(seed, B, T, Hk, group, dk, dv, with_state):
    g = torch.Generator().manual_seed(seed)
    Hv = Hk * group
    q = l2norm(x=torch.randn(B, T, Hk, dk, generator=g)) * dk ** -0.5
    k = l2norm(x=torch.randn(B, T, Hk, dk, generator=g))
    v = torch.randn(B, T, Hv, dv, generator=g)
    gate = torch.nn.functional.logsigmoid(torch.randn(B, T, Hv, generator=g) + 3)  # decays near 1, like the model
    beta = torch.rand(B, T, Hv, generator=g)
    state = torch.randn(B, Hv, dk, dv, generator=g) * 0.5 if with_state else None
    return dict(q=q, k=k, v=v, g=gate, beta=beta, initial_state=state)


@given(
    seed=st.integers(0, 2**31 - 1),
    T=st.integers(1, 140),
    chunk=st.sampled_from([16, 32, 64]),
    Hk=st.integers(1, 3),
    group=st.sampled_from([1, 2]),
    dk=st.sampled_from([8, 16]),
    dv=st.sampled_from([8, 24]),
    B=st.integers(1, 2),
    with_state=st.booleans(),
)
@example(seed=0, T=1, chunk=64, Hk=2, group=1, dk=16, dv=16, B=1, with_state=False)
@example(seed=1, T=63, chunk=64, Hk=2, group=2, dk=16, dv=16, B=1, with_state=True)
@example(seed=2, T=65, chunk=64, Hk=1, group=1, dk=16, dv=8, B=2, with_state=True)
@example(seed=333733462, T=1, chunk=16, Hk=1, group=1, dk=8, dv=8, B=1, with_state=False)  # (q . k ~ 1e-3: CI, s45)
def test_chunked_equals_recurrent(seed, T, chunk, Hk, group, dk, dv, B, with_state):
    """Each output row is a sum of v rows (and the state's columns) times q . k-sized coefficients (|q| |k| = dk^-0.5),
    so its error is measured against |o| + dk^-0.5 |v|: where q . k nearly cancels (a tiny output) the chunked and
    recurrent forms' roundings of it differ relatively but not against the terms' size."""
    x = random_inputs(seed, B, T, Hk, group, dk, dv, with_state)
    o_ref, s_ref = gated_delta_rule_recurrent(**x)
    o, s = gated_delta_rule_chunked(**x, chunk_size=chunk)
    assert_close(o, o_ref, 1e-5, "output", scale=o_ref.abs() + dk ** -0.5 * x["v"].abs())
    assert_close(s, s_ref, 1e-5, "final state")


def test_chunked_matches_transformers_torch_path():
    """An outside check: transformers' own chunked torch function on the same inputs."""
    from transformers.models.qwen3_5 import modeling_qwen3_5 as m

    hf_chunk = getattr(m.torch_chunk_gated_delta_rule, "__wrapped__", m.torch_chunk_gated_delta_rule)
    x = random_inputs(3, 1, 70, 2, 2, 16, 16, True)
    # transformers applies l2norm and the 1/sqrt(dk) scale itself: give it raw q, k
    q_raw, k_raw = x["q"] * 16 ** 0.5 * 3.0, x["k"] * 2.0
    o_hf, s_hf = hf_chunk(q_raw, k_raw, x["v"], g=x["g"], beta=x["beta"], initial_state=x["initial_state"],
                          output_final_state=True, use_qk_l2norm_in_kernel=True)
    o, s = gated_delta_rule_chunked(**x)
    assert_close(o, o_hf, 1e-5, "output")
    assert_close(s, s_hf, 1e-5, "state")


def test_state_is_not_modified_in_place():
    x = random_inputs(4, 1, 10, 1, 1, 8, 8, True)
    before = x["initial_state"].clone()
    gated_delta_rule_chunked(**x)
    gated_delta_rule_recurrent(**x)
    assert torch.equal(x["initial_state"], before)


@given(seed=st.integers(0, 2**31 - 1), T=st.integers(1, 140), pad=st.integers(1, 70), chunk=st.sampled_from([16, 64]),
       with_state=st.booleans())
@example(seed=0, T=520 % 64, pad=64 - 520 % 64, chunk=64, with_state=True)  # (pp520's last chunk: 8 rows, 56 padding)
def test_padding_rows_leave_the_rows_before_and_the_state_as_they_were(seed, T, pad, chunk, with_state):
    """Rows with q = k = v = 0, beta = 0 and g = 0 (no decay) after a prompt — what the prefill's dn_prep writes past
    the prompt up to the rule's chunk (megakernel/prefill.py rule_rows) — change neither the prompt's outputs nor
    the final state, in the recurrent definition and the chunked form, and output zeros themselves."""
    x = random_inputs(seed, 1, T, 2, 2, 16, 8, with_state)
    padded = {n: torch.cat([t, torch.zeros((1, pad) + t.shape[2:])], 1) if n != "initial_state" else t for n, t in x.items()}
    for rule, kw in ((gated_delta_rule_recurrent, {}), (gated_delta_rule_chunked, {"chunk_size": chunk})):
        o, s = rule(**x, **kw)
        o_p, s_p = rule(**padded, **kw)
        assert_close(o_p[:, :T], o, 1e-5, f"{rule.__name__}: the prompt's rows", scale=o.abs() + 16 ** -0.5 * x["v"].abs())
        assert_close(s_p, s, 1e-5, f"{rule.__name__}: the final state")
        assert (o_p[:, T:] == 0).all(), rule.__name__
