"""The whole Triton tier on the tiny config against the fp32 reference tier: prefill and a
few decode steps, every traced layer boundary and the carried state.

fp32: on a CPU under TRITON_INTERPRET=1 (tests/conftest.py sets it when no GPU is
visible), on a GPU natively (eager and CUDA-graph decode both).
"""

from __future__ import annotations


import pytest
import torch

import reference.ops as reference_ops
from reference import HybridModel, ModelConfig, ReferenceTier, TierInputError, new_model_state, perturb_norms, random_weights

from helpers import DEVICE, TRITON_CAN_RUN, TRITON_MARKS

pytestmark = TRITON_MARKS

if TRITON_CAN_RUN:
    import triton_kernels.ops as triton_ops
    from helpers import assert_close, rel_err
    from triton_kernels.tier import TritonTier

# fla's chunk kernel runs its fp32 dots in TF32 on a GPU (exact in the interpreter)
TOL = 1e-4 if DEVICE == "cpu" else 2e-3
CONFIG = ModelConfig.tiny()


@pytest.fixture(scope="module")
def weights():
    return perturb_norms(random_weights(CONFIG, seed=7, dtype=torch.float32))


def _compare(trace, ref_trace, what):
    assert set(trace) == set(ref_trace), f"{what}: trace keys {sorted(trace)} != {sorted(ref_trace)}"
    for key in ref_trace:
        assert_close(trace[key], ref_trace[key], TOL, f"{what} {key}")


@pytest.mark.parametrize("cuda_graph", [False, True] if DEVICE == "cuda" else [False])
def test_tier_matches_reference(weights, cuda_graph):
    ref = ReferenceTier(CONFIG, weights, device=DEVICE, dtype=torch.float32)
    tier = TritonTier(CONFIG, weights, device=DEVICE, dtype=torch.float32, cuda_graph=cuda_graph)
    ids = torch.randint(0, CONFIG.vocab_size, (2, 11), generator=torch.Generator().manual_seed(3))
    ref_state, state = ref.new_state(2, 40), tier.new_state(2, 40)
    ref_trace, trace = {}, {}
    ref_logits = ref.prefill(ids, ref_state, ref_trace)
    tier.prefill(ids, state, trace)
    _compare(trace, ref_trace, "prefill")
    token = ref_logits.argmax(-1)
    for step in range(3):
        ref_trace, trace = {}, {}
        fork = _fork(tier, state)
        ref_logits = ref.decode(token, ref_state, ref_trace)
        tier.decode(token, state, trace)
        _compare(trace, ref_trace, f"decode {step}")
        assert_close(tier.decode(token, fork), ref_logits, TOL, f"decode {step} untraced")
        token = ref_logits.argmax(-1)
    for name in ("conv", "recurrent", "k_cache", "v_cache"):
        assert_close(getattr(state, name), getattr(ref_state, name), TOL, f"state.{name}")
    assert state.pos.tolist() == state.positions == ref_state.positions
    expected = ref.decode(token, ref_state).argmax(-1)
    assert torch.equal(tier.decode_argmax(token, state).cpu(), expected.cpu())


def test_an_untied_head(weights):
    """A config whose lm_head is its own matrix (as 9B and 27B have): the tier's logits follow the
    reference's, which reads that matrix (tests/test_family_configs.py)."""
    config = CONFIG.replace(name="tiny-untied", tie_word_embeddings=False)
    head = torch.randn(config.vocab_size, config.hidden_size, generator=torch.Generator().manual_seed(5)) * 0.02
    untied = weights | {"lm_head.weight": head}
    ref = ReferenceTier(config, untied, device=DEVICE, dtype=torch.float32)
    tier = TritonTier(config, untied, device=DEVICE, dtype=torch.float32)
    ids = torch.randint(0, config.vocab_size, (1, 9), generator=torch.Generator().manual_seed(6))
    ref_state, state = ref.new_state(1, 20), tier.new_state(1, 20)
    ref_logits, logits = ref.prefill(ids, ref_state), tier.prefill(ids, state)
    assert_close(logits, ref_logits, TOL, "prefill logits")
    token = ref_logits.argmax(-1)
    assert_close(tier.decode(token, state), ref.decode(token, ref_state), TOL, "decode logits")
    tied_ref = ReferenceTier(CONFIG, weights, device=DEVICE, dtype=torch.float32)
    tied = tied_ref.prefill(ids, tied_ref.new_state(1, 20))
    assert rel_err(ref_logits, tied) > 0.5, "the untied head's logits should not be the embedding's"


def _fork(tier, state):
    """A copy of `state` (so an extra decode leaves the original alone)."""
    copy = tier.new_state(state.batch_size, state.max_seq_len)
    for name in ("conv", "recurrent", "k_cache", "v_cache", "pos"):
        getattr(copy, name).copy_(getattr(state, name))
    copy.seq_len = state.seq_len
    return copy


def test_hybrid_model_runs_on_triton_ops(weights):
    """The reference forward pass itself, over `triton_kernels.ops` (no fusion)."""
    w = {k: v.to(DEVICE) for k, v in weights.items()}
    ids = torch.randint(0, CONFIG.vocab_size, (1, 6), generator=torch.Generator().manual_seed(4), device="cpu").to(DEVICE)
    logits = {}
    for name, ops in (("triton", triton_ops), ("reference", reference_ops)):
        state = new_model_state(name, CONFIG, 1, 16, DEVICE, torch.float32)
        model = HybridModel(CONFIG, w, ops)
        prefill = model.forward(ids, state)
        state.seq_len = ids.shape[1]
        logits[name] = (prefill, model.forward(ids[:, -1:], state))
    for got, expected in zip(logits["triton"], logits["reference"]):
        assert_close(got, expected, TOL)


def test_gemv_backends_agree(weights):
    tier = TritonTier(CONFIG, weights, device=DEVICE, dtype=torch.float32, cuda_graph=False)
    ids = torch.randint(0, CONFIG.vocab_size, (1, 5), generator=torch.Generator().manual_seed(5))
    outputs = {}
    for backend in ("triton", "cublas"):
        tier.gemv = backend
        state = tier.new_state(1, 16)
        tier.prefill(ids, state)
        outputs[backend] = tier.decode(ids[:, -1], state)
    assert rel_err(outputs["triton"], outputs["cublas"]) < TOL
    with pytest.raises(ValueError, match="gemv backend"):
        tier.gemv = "cutlass"


def test_cpu_needs_fp32(weights):
    if DEVICE != "cpu":
        pytest.skip("the fp32-only rule is for the CPU interpreter")
    with pytest.raises(TierInputError, match="fp32"):
        TritonTier(CONFIG, weights, device="cpu", dtype=torch.bfloat16)


def test_unavailable_reason():
    assert TritonTier.unavailable_reason(torch.device(DEVICE)) is None
    if not torch.cuda.is_available():
        assert "no CUDA GPU" in TritonTier.unavailable_reason(torch.device("cuda"))


def test_registry_loads_the_tier(weights):
    from compare.tiers import load_tier

    tier = load_tier("triton", CONFIG, weights, device=DEVICE, dtype=torch.float32)
    assert isinstance(tier, TritonTier) and tier.name == "triton"


def test_static_state_bind_moves_values_not_owners():
    """The graphs' shared state tensors: binding copies a state in, re-points it, and hands
    the previous (still alive) owner copies of its own values."""
    from triton_kernels.graph import STATE_TENSORS, StaticState
    from triton_kernels.model import TritonState

    def make(value):
        return TritonState(tier="triton", config=CONFIG, batch_size=1, max_seq_len=4,
                           **{name: torch.full((2,), float(value)) for name in STATE_TENSORS})

    a, b = make(1), make(2)
    static = StaticState(a)
    held = static.tensors["conv"]
    static.bind(b)
    assert b.conv is held and float(b.conv[0]) == 2 and float(a.conv[0]) == 1 and a.conv is not held
    a.conv.fill_(3)
    static.bind(a)
    assert a.conv is held and float(a.conv[0]) == 3 and float(b.conv[0]) == 2


def test_prefill_graphs_are_bounded(weights, monkeypatch):
    """Captured prefills are kept least-recently-used first, at most MAX_PREFILL_GRAPHS."""
    from triton_kernels import graph, tier as tier_module

    monkeypatch.setattr(graph, "CapturedStep", lambda step, static, state, scratch, ids: ids.shape)
    tier = TritonTier(CONFIG, weights, device=DEVICE, dtype=torch.float32)
    state = tier.new_state(1, 64)
    for T in range(1, tier_module.MAX_PREFILL_GRAPHS + 3):
        tier._captured("prefill", torch.zeros(1, T, dtype=torch.int64), state)
        tier._captured("prefill", torch.zeros(1, 1, dtype=torch.int64), state)     # kept: recently used
    tier._captured("decode", torch.zeros(1, dtype=torch.int64), state)
    prefills = [key[2] for key in tier._graphs if key[0] == "prefill"]
    assert len(prefills) == tier_module.MAX_PREFILL_GRAPHS and (1, 1) in prefills and (1, 2) not in prefills
    assert any(key[0] == "decode" for key in tier._graphs)
