"""The Triton tier on a GPU: bf16, the real Qwen3.5-0.8B shapes, random weights with
perturbed norms.

- each kernel against its reference op (fp32 on the same bf16 inputs) within bf16 bounds;
- the whole tier against the fp32 reference tier at every layer boundary, and no worse
  than transformers' own bf16 run (HFTier) against that oracle by more than 1.5×;
- CUDA-graph decode equal to eager decode, states rebound between graphs, no host sync
  in the greedy loop, both GEMV backends.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import reference.ops as ref
from reference import ModelConfig, ReferenceTier, perturb_norms, random_weights

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

if torch.cuda.is_available():
    import triton_kernels.ops as tri
    from triton_kernels import gemv
    from triton_kernels.delta_rule import recurrent_step_
    from helpers import assert_close, poisoned_allocations, rel_err
    from triton_kernels.tier import TritonTier

CONFIG = ModelConfig.qwen3_5_0_8b()
BF16 = 1e-2            # relative error of a bf16 kernel against the fp32 op on the same inputs
DEV = "cuda"


def rand(*shape, seed, scale=1.0, dtype=torch.bfloat16):
    gen = torch.Generator(device=DEV).manual_seed(seed)
    return (torch.randn(*shape, generator=gen, device=DEV) * scale).to(dtype)


def f32(*tensors):
    return [None if t is None else t.float() for t in tensors]


# ---- kernels at real shapes -------------------------------------------------------------

@pytest.mark.parametrize("T", [1, 520])
def test_norms(T):
    D, H, dv = CONFIG.hidden_size, CONFIG.linear_num_value_heads, CONFIG.linear_value_head_dim
    x, r, w = rand(1, T, D, seed=1), rand(1, T, D, seed=2), rand(D, seed=3, scale=0.1)
    with poisoned_allocations():
        out, res = tri.add_rms_norm(x=x, residual=r, weight=w, eps=1e-6)
    ref_out, ref_res = ref.add_rms_norm(x=x.float(), residual=r.float(), weight=w.float(), eps=1e-6)
    assert_close(out, ref_out, BF16, "add_rms_norm")
    assert_close(res, ref_res, BF16, "residual")
    o = rand(1, T, H, dv, seed=4)
    z = rand(1, T, 8224, seed=5)[..., 6144:8192].unflatten(-1, (H, dv))
    gw = 1 + rand(dv, seed=6, scale=0.1)
    with poisoned_allocations():
        out = tri.gated_rms_norm(x=o, gate=z, weight=gw, eps=1e-6)
    assert_close(out, ref.gated_rms_norm(x=o.float(), gate=z.float(), weight=gw.float(), eps=1e-6), BF16, "gated")


@pytest.mark.parametrize("T,start", [(1, 3000), (520, 0), (100, 300)])
def test_qk_norm_rope(T, start):
    c = CONFIG
    qg = rand(1, T, c.num_attention_heads, 2 * c.head_dim, seed=7)
    q, k = qg[..., :c.head_dim], rand(1, T, c.num_key_value_heads, c.head_dim, seed=8)
    kw = dict(q_weight=rand(c.head_dim, seed=9, scale=0.1), k_weight=rand(c.head_dim, seed=10, scale=0.1),
              rotary_dim=c.rotary_dim, theta=c.rope_theta, eps=1e-6,
              positions=torch.arange(start, start + T, device=DEV))
    with poisoned_allocations():
        q_out, k_out = tri.qk_norm_rope(q=q, k=k, **kw)
    kw32 = dict(kw, q_weight=kw["q_weight"].float(), k_weight=kw["k_weight"].float())
    ref_q, ref_k = ref.qk_norm_rope(q=q.float(), k=k.float(), **kw32)
    assert_close(q_out, ref_q, BF16, "q")
    assert_close(k_out, ref_k, BF16, "k")


@pytest.mark.parametrize("T", [1, 520])
def test_conv_and_delta_inputs(T):
    c = CONFIG
    proj = rand(1, T, 8224, seed=11)
    x = proj[..., :c.conv_dim]
    w, state = rand(c.conv_dim, 4, seed=12, scale=0.3), rand(1, c.conv_dim, 3, seed=13)
    with poisoned_allocations():
        if T == 1:
            y, new_state = tri.causal_conv1d_step(x=x[:, 0], weight=w, conv_state=state)
            ref_y, ref_state = ref.causal_conv1d_step(x=x[:, 0].float(), weight=w.float(), conv_state=state.float())
        else:
            y, new_state = tri.causal_conv1d(x=x, weight=w, conv_state=state)
            ref_y, ref_state = ref.causal_conv1d(x=x.float(), weight=w.float(), conv_state=state.float())
    assert_close(y, ref_y, BF16, "conv y")
    assert_close(new_state, ref_state, 0, "conv state")
    Hk, dk, Hv = c.linear_num_key_heads, c.linear_key_head_dim, c.linear_num_value_heads
    q, k = x[..., :Hk * dk].unflatten(-1, (Hk, dk)), x[..., Hk * dk:2 * Hk * dk].unflatten(-1, (Hk, dk))
    b, a = proj[..., 8192:8208] * 3, proj[..., 8208:8224] * 3
    A_log, dt_bias = torch.empty(Hv, device=DEV).uniform_(0.01, 16).log(), rand(Hv, seed=14, dtype=torch.float32)
    with poisoned_allocations():
        outs = tri.delta_rule_inputs(q=q, k=k, a=a, b=b, A_log=A_log, dt_bias=dt_bias, eps=1e-6)
    refs = ref.delta_rule_inputs(q=q.float(), k=k.float(), a=a.float(), b=b, A_log=A_log, dt_bias=dt_bias, eps=1e-6)
    for name, o, r, tol in zip(("q", "k", "g", "beta"), outs, refs, (1e-5, 1e-5, 1e-5, BF16)):
        assert_close(o, r, tol, name)                   # β is σ rounded to bf16: a 1-ulp flip is allowed


def test_delta_rule():
    c = CONFIG
    B, T, H, d = 1, 520, c.linear_num_value_heads, c.linear_key_head_dim
    q = ref.l2norm(x=rand(B, T, H, d, seed=15, dtype=torch.float32)) * d ** -0.5
    k = ref.l2norm(x=rand(B, T, H, d, seed=16, dtype=torch.float32))
    v = rand(B, T, H, d, seed=17)
    g = F.logsigmoid(rand(B, T, H, seed=18, dtype=torch.float32) + 3)
    beta = torch.sigmoid(rand(B, T, H, seed=19, dtype=torch.float32))
    h0 = rand(B, H, d, d, seed=20, scale=0.1, dtype=torch.float32)
    ref_o, ref_s = ref.gated_delta_rule_chunked(q=q, k=k, v=v.float(), g=g, beta=beta, initial_state=h0)
    o, s = tri.gated_delta_rule_chunked(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0)
    assert_close(o, ref_o, 5e-3, "chunk o")            # fla's fp32 dots run in TF32
    assert_close(s, ref_s, 5e-3, "chunk state")
    step = [t[:, :1] for t in (q, k, v, g, beta)]
    ref_o, ref_s = ref.gated_delta_rule_recurrent(q=step[0], k=step[1], v=step[2].float(), g=step[3], beta=step[4],
                                                  initial_state=h0)
    state = h0.clone()
    o = recurrent_step_(q=step[0], k=step[1], v=step[2], g=step[3], beta=step[4], state=state)
    assert_close(o, ref_o, BF16, "step o")
    assert_close(state, ref_s, 1e-5, "step state")


@pytest.mark.parametrize("N,K", [(8224, 1024), (7168, 1024), (5120, 1024), (1024, 2048), (1024, 3584),
                                 (248320, 1024)])
def test_gemv(N, K):
    x, w = rand(1, 1, K, seed=21), rand(N, K, seed=22, scale=0.02)
    with poisoned_allocations():
        out = gemv.gemv(x, w)
    expected = F.linear(x.float(), w.float())
    assert_close(out, expected, BF16, "gemv")
    assert rel_err(out, expected) <= 1.5 * rel_err(F.linear(x, w), expected) + 1e-4, "worse than cuBLAS"
    if K == 3584:
        gate_up = rand(1, 1, 2 * K, seed=23)
        with poisoned_allocations():
            out = gemv.gemv(gate_up, w, swiglu_input=True)
        act = ref.swiglu(gate=gate_up[..., :K], up=gate_up[..., K:])
        assert_close(out, F.linear(act.float(), w.float()), BF16, "swiglu gemv")


def test_lm_head_argmax():
    x, E = rand(1, CONFIG.hidden_size, seed=24), rand(CONFIG.vocab_size, CONFIG.hidden_size, seed=25, scale=0.02)
    with poisoned_allocations():
        logits = tri.lm_head(x=x, weight=E)
    assert_close(logits, F.linear(x.float(), E.float()), BF16, "logits")
    for t in (logits, rand(3, CONFIG.vocab_size, seed=26, dtype=torch.float32)):
        assert torch.equal(tri.argmax(t), t.argmax(-1))


@pytest.mark.parametrize("T,start", [(1, 0), (1, 600), (1, 4095), (520, 0), (100, 300)])
def test_gated_attention(T, start):
    c = CONFIG
    qg = rand(1, T, c.num_attention_heads, 2 * c.head_dim, seed=27)
    q, gate = qg[..., :c.head_dim], qg[..., c.head_dim:]
    S = 4096
    kc, vc = rand(1, c.num_key_value_heads, S, c.head_dim, seed=28), rand(1, c.num_key_value_heads, S, c.head_dim, seed=29)
    kc[:, :, start + T:] = float("nan")
    vc[:, :, start + T:] = float("nan")
    with poisoned_allocations():
        out = tri.gated_attention(q=q, gate=gate, k_cache=kc, v_cache=vc, start_pos=start)
    expected = ref.gated_attention(q=q.float(), gate=gate.float(), k_cache=kc.float(), v_cache=vc.float(),
                                   start_pos=start)
    assert_close(out, expected, BF16, "attention")


# ---- the whole tier ------------------------------------------------------------------

@pytest.fixture(scope="module")
def weights():
    return perturb_norms(random_weights(CONFIG, seed=0, dtype=torch.bfloat16))


@pytest.fixture(scope="module")
def tier(weights):
    return TritonTier(CONFIG, weights, device=DEV, dtype=torch.bfloat16)


PROMPT = torch.randint(0, CONFIG.vocab_size, (1, 16), generator=torch.Generator().manual_seed(1))


def _traces(t, steps=3):
    """Prefill the prompt, then `steps` decode steps fed a fixed token sequence → traces."""
    state = t.new_state(1, 64)
    traces = [{}]
    t.prefill(PROMPT, state, traces[0])
    for i in range(steps):
        traces.append({})
        t.decode(PROMPT[:, i], state, traces[-1])
    return traces


def test_tier_bf16_layers_vs_fp32_reference_and_hf(weights, tier):
    from compare.hf_tier import HFTier

    oracle = _traces(ReferenceTier(CONFIG, weights, device=DEV, dtype=torch.float32))
    hf = _traces(HFTier(CONFIG, weights, device=DEV, dtype=torch.bfloat16))
    mine = _traces(tier)
    torch.cuda.empty_cache()
    report, failures = [], []
    for call, (o, h, m) in enumerate(zip(oracle, hf, mine)):
        for key in o:
            e_mine, e_hf = rel_err(m[key], o[key]), rel_err(h[key], o[key])
            report.append(f"call {call} {key}: triton {e_mine:.2e} hf {e_hf:.2e}")
            if not (e_mine <= 0.1 and e_mine <= 1.5 * e_hf + 1e-4):
                failures.append(report[-1])
    print("\n".join(report))
    assert not failures, "worse than bf16 bounds or 1.5x transformers' bf16 error:\n" + "\n".join(failures)


def test_graphs_equal_eager_and_states_rebind(tier):
    runs = {}
    for use_graph in (False, True):
        tier.cuda_graph = tier.prefill_graph = use_graph
        a, b = tier.new_state(1, 256), tier.new_state(1, 256)
        out = [(tier.prefill(PROMPT, a), tier.prefill(PROMPT[:, :9], b))]
        ta, tb = PROMPT[:, 0], PROMPT[:, 1]
        for _ in range(4):                       # alternate two live states through the graphs
            out.append((tier.decode(ta, a), tier.decode(tb, b)))
            ta, tb = out[-1][0].argmax(-1), out[-1][1].argmax(-1)
        runs[use_graph] = out + [(a.recurrent, b.recurrent), (a.k_cache, b.k_cache)]
    tier.cuda_graph, tier.prefill_graph = True, True
    for (ea, eb), (ga, gb) in zip(runs[False], runs[True]):      # cuBLAS may pick other kernels under capture
        assert rel_err(ga, ea) < 1e-2 and rel_err(gb, eb) < 1e-2


@pytest.mark.parametrize("use_graph", [False, True])
def test_greedy_loop_has_no_host_sync(tier, use_graph):
    tier.cuda_graph = use_graph
    state = tier.new_state(1, 256)
    token = tier.prefill(PROMPT, state).argmax(-1)
    token = tier.decode_argmax(token, state)                # warm-up (and capture)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(4):
            token = tier.decode_argmax(token, state)
    finally:
        torch.cuda.set_sync_debug_mode("default")
        tier.cuda_graph = True
    assert token.device.type == "cuda" and token.dtype == torch.int64


@pytest.mark.parametrize("use_graph", [False, True])
@pytest.mark.parametrize("bad_id", [248320, 248320 + 5_000_000, -1])
def test_an_id_out_of_range_is_refused_on_the_device(tier, use_graph, bad_id):
    """decode_argmax's ids are checked by a kernel of the step (no host sync): the refused step
    and the ones fed back after it write nothing, the next check raises and rolls back, and
    the state then decodes as a copy that never saw the bad id."""
    from reference import TierInputError

    tier.cuda_graph = use_graph
    try:
        base = tier.new_state(1, 64)
        tier.prefill(PROMPT, base)
        state, twin = tier.clone_state(base), tier.clone_state(base)
        before = {k: v.clone() for k, v in vars(state).items() if isinstance(v, torch.Tensor)}
        nxt = tier.decode_argmax(torch.tensor([bad_id], device="cuda"), state)
        nxt = tier.decode_argmax(nxt, state)
        with pytest.raises(TierInputError, match=rf"token id {bad_id} .* at position 16 is outside the vocabulary"):
            tier.check(state)
        assert int(nxt) == bad_id and state.seq_len == 16
        for name, value in vars(state).items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, before[name]), name
        token = torch.tensor([7], device="cuda")
        assert torch.equal(tier.decode(token, state), tier.decode(token, twin))
    finally:
        tier.cuda_graph = True


def test_gemv_backends(tier):
    logits = {}
    for backend in ("triton", "cublas"):
        tier.gemv = backend
        state = tier.new_state(1, 64)
        tier.prefill(PROMPT, state)
        logits[backend] = tier.decode(PROMPT[:, 0], state)
    tier.gemv = "triton"
    # two bf16 runs that round differently differ about as much as either does from fp32 (~4%)
    assert rel_err(logits["triton"], logits["cublas"]) < 6e-2


def test_timed_step_from_the_graph_replay(tier):
    """decode_timed with CUDA graphs times one profiled replay of the graph decode_argmax runs
    (graph_timing.py): every part of the step has a time, the layers' above zero, and the step's
    next ids and state are decode_argmax's."""
    from compare.layer_times import Marks, parts

    tier.cuda_graph = True
    state = tier.new_state(1, 64)
    ids = tier.prefill(PROMPT, state).argmax(-1).to(DEV)
    copy = tier.clone_state(state)
    for step in range(2):  # the second step reuses the graph's map of kernels to parts
        marks = Marks(DEV)
        got, want = tier.decode_timed(ids, state, marks), tier.decode_argmax(ids, copy)
        assert torch.equal(got, want) and state.positions == copy.positions, step
        times = marks.durations()
        assert set(times) == set(parts(CONFIG)), sorted(times)
        assert all(t >= 0 for t in times.values()) and all(times[f"layers.{i}"] > 0 for i in range(CONFIG.num_layers)), times
        assert torch.equal(state.recurrent, copy.recurrent)
        ids = got
