"""Prefill of T tokens then N decode steps equals one prefill of T+N (every layer, fp32);
so does prefill in pieces (chunked prefill into a non-empty state)."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import assert_close
from reference import ReferenceTier


def last_position(trace):
    return {k: (v[:, -1] if v.dim() == 3 else v) for k, v in trace.items()}


@settings(max_examples=6)
@given(T=st.integers(1, 70), N=st.integers(1, 4), batch=st.integers(1, 2), seed=st.integers(0, 1000))
def test_prefill_then_decode_equals_whole_prefill(tiny_config, tiny_weights, T, N, batch, seed):
    tier = ReferenceTier(tiny_config, tiny_weights, dtype=torch.float32)
    ids = torch.randint(0, tiny_config.vocab_size, (batch, T + N), generator=torch.Generator().manual_seed(seed))
    whole = {}
    tier.prefill(ids, tier.new_state(batch, 128), whole)
    state = tier.new_state(batch, 128)
    tier.prefill(ids[:, :T], state, {})
    for i in range(N):
        step = {}
        tier.decode(ids[:, T + i], state, step)
        want = {k: (v[:, T + i] if v.dim() == 3 else v) for k, v in whole.items()}
        for name, value in last_position(step).items():
            if name != "logits" or i == N - 1:  # the whole prefill returns logits of its last position only
                assert_close(value, want[name], 1e-5, f"decode {i} {name}")
    assert state.seq_len == T + N


def test_prefill_in_pieces(tiny_config, tiny_weights):
    tier = ReferenceTier(tiny_config, tiny_weights, dtype=torch.float32)
    ids = torch.randint(0, tiny_config.vocab_size, (1, 100), generator=torch.Generator().manual_seed(5))
    whole = {}
    tier.prefill(ids, tier.new_state(1, 128), whole)
    state, part = tier.new_state(1, 128), {}
    tier.prefill(ids[:, :37], state, {})
    tier.prefill(ids[:, 37:], state, part)
    for name in ("layers.0", "layers.3", "norm"):
        assert_close(part[name], whole[name][:, 37:], 1e-5, name)
    assert_close(part["logits"], whole["logits"], 1e-5, "logits")
