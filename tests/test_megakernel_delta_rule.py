"""The fast prefill's chunked gated delta rule (megakernel/delta_rule_chunked.py) against the
fp32 recurrent definition (reference/delta_rule.py): on the CPU under the Triton interpreter at
small head sizes, every length, carried state, padding row and NaN-poisoned intermediate; on the
GPU at the 0.8B shapes, against fla's `chunk_gated_delta_rule` on the same bf16 inputs (the
kernel it replaced, kept as the oracle): no worse than fla's error against the fp32 rule."""

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from helpers import DEVICE, TRITON_MARKS, assert_close, rel_err
from megakernel.delta_rule_chunked import CHUNK, ChunkedDeltaRule
from reference.delta_rule import gated_delta_rule_chunked, gated_delta_rule_recurrent
from reference.ops import l2norm

pytestmark = [m for m in TRITON_MARKS if m.name != "triton_cpu"]  # (the CPU test carries triton_cpu itself)

ST_DN = 0  # the state table's slot of the DeltaNet state pointer (csrc/prefill.cuh ST_DN)
CPU_TOL = 2e-2  # bf16 inputs, W, P, Q and Sᵀ in the dots, bf16 output: measured 6e-3 (o), 3e-3 (state)


def inputs(seed, T, H, dk, dv, layers, decay=3.0, pad=0, device="cpu"):
    """bf16 q, k (L2-normalised), v; fp32 g, beta [T, H]; a random fp32 state [layers, H, dv, dk]
    and its table; the last `pad` rows padding (g = beta = 0), as the prefill's dn_prep writes them."""
    gen = torch.Generator().manual_seed(seed)
    q = l2norm(x=torch.randn(T, H, dk, generator=gen)).bfloat16()
    k = l2norm(x=torch.randn(T, H, dk, generator=gen)).bfloat16()
    v = torch.randn(T, H, dv, generator=gen).bfloat16()
    g = torch.nn.functional.logsigmoid(torch.randn(T, H, generator=gen) + decay)
    beta = torch.rand(T, H, generator=gen)
    if pad:
        g[T - pad:], beta[T - pad:] = 0.0, 0.0
    state = torch.randn(layers, H, dv, dk, generator=gen) * 0.5
    x = dict(q=q, k=k, v=v, g=g, beta=beta)
    x = {n: t.to(device) for n, t in x.items()}
    state = state.to(device)
    table = torch.zeros(7, dtype=torch.int64, device=device)
    table[ST_DN] = state.data_ptr()
    return x, state, table


def expected(x, state, layer, valid, scale):
    """The fp32 rule over the first `valid` rows, from the layer's state: (o [valid, H, dv], state [H, dv, dk])."""
    q, k, v, g, beta = (x[n][:valid].float()[None] for n in ("q", "k", "v", "g", "beta"))
    o, s = gated_delta_rule_recurrent(q=q * scale, k=k, v=v, g=g, beta=beta,
                                      initial_state=state[layer].transpose(-1, -2)[None].float())
    return o[0], s[0].transpose(-1, -2)


def run(x, state, table, layer, scale, poison=True):
    T, H, dk = x["q"].shape
    dv = x["v"].shape[-1]
    rule = ChunkedDeltaRule(T, H, dk, dv, x["q"].device, ST_DN)
    o = torch.empty(T, H, dv, dtype=torch.bfloat16, device=x["q"].device)
    if poison:  # an intermediate or output row the kernels forget to write fails the comparison
        for t in (o, *rule.buffers()):
            t.fill_(float("nan"))
    rule(x["q"], x["k"], x["v"], x["g"], x["beta"], table, layer, o, scale)
    return o


@given(seed=st.integers(0, 2**31 - 1), T=st.integers(1, 140), pad=st.integers(0, 20), strong_decay=st.booleans())
@example(seed=0, T=1, pad=0, strong_decay=False)
@example(seed=1, T=63, pad=0, strong_decay=False)
@example(seed=2, T=65, pad=0, strong_decay=True)
@example(seed=3, T=128, pad=40, strong_decay=False)
@pytest.mark.triton_cpu
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_chunked_rule_equals_the_recurrent_definition(seed, T, pad, strong_decay):
    """Any length (partial chunks, several chunks), a carried state, padding rows at the end (they
    leave the state as the valid rows left it), the state of one layer of three updated in place."""
    pad = min(pad, T - 1)
    dk = dv = 32
    scale = dk ** -0.5
    x, state, table = inputs(seed, T, 2, dk, dv, 3, decay=-2.0 if strong_decay else 3.0, pad=pad)
    before = state.clone()
    o_ref, s_ref = expected(x, before, 1, T - pad, scale)
    o = run(x, state, table, 1, scale)
    assert_close(o[:T - pad].float(), o_ref, CPU_TOL, "output")
    assert_close(state[1], s_ref, CPU_TOL, "final state")
    assert torch.equal(state[0], before[0]) and torch.equal(state[2], before[2]), "another layer's state changed"
    if pad:
        assert torch.isfinite(o[T - pad:].float()).all(), "a padding row's output is not finite"


def test_refuses_shapes_the_kernels_do_not_take():
    with pytest.raises(ValueError, match="dk=24: the chunked delta rule's kernels take a power of two of at least 16"):
        ChunkedDeltaRule(10, 2, 24, 32, "cpu", ST_DN)
    with pytest.raises(ValueError, match="T=0: expected at least one token"):
        ChunkedDeltaRule(0, 2, 32, 32, "cpu", ST_DN)


# ---- GPU: the 0.8B shapes against fla's chunked kernel, the oracle ----------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("T", [1, 63, 65, 520, 4097, 32768])
@pytest.mark.parametrize("carried", [False, True])
def test_chunked_rule_against_fla_at_the_model_shapes(T, carried):
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    H, d, scale = 16, 128, 128 ** -0.5
    x, state, table = inputs(T + 7 * carried, T, H, d, d, 2, device="cuda")
    if not carried:
        state.zero_()
    before = state.clone()
    # truth: the fp32 chunked rule (the recurrent one is too slow at 32k tokens; they agree to 1e-5)
    q, k, v, g, beta = (x[n].float()[None] for n in ("q", "k", "v", "g", "beta"))
    o_ref, s_ref = gated_delta_rule_chunked(q=q * scale, k=k, v=v, g=g, beta=beta,
                                            initial_state=before[1].transpose(-1, -2)[None])
    o_fla, s_fla = chunk_gated_delta_rule(x["q"][None], x["k"][None], x["v"][None], x["g"][None], x["beta"][None],
                                          scale=scale, initial_state=before[1:2].clone(), output_final_state=True,
                                          state_v_first=True)
    o = run(x, state, table, 1, scale)
    torch.cuda.synchronize()
    e_o, e_s = rel_err(o[None].float(), o_ref), rel_err(state[1], s_ref[0].transpose(-1, -2))
    f_o, f_s = rel_err(o_fla.float(), o_ref), rel_err(s_fla[0], s_ref[0].transpose(-1, -2))
    print(f"T={T} carried={carried}: output {e_o:.2e} (fla {f_o:.2e}), state {e_s:.2e} (fla {f_s:.2e})")
    assert torch.isfinite(o.float()).all() and torch.isfinite(state[1]).all()
    assert e_o <= 1.25 * f_o + 1e-3, f"output error {e_o:.3g} against fla's {f_o:.3g}"
    assert e_s <= 1.25 * f_s + 1e-3, f"state error {e_s:.3g} against fla's {f_s:.3g}"
    assert torch.equal(state[0], before[0]), "another layer's state changed"
