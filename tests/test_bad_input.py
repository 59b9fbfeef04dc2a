"""Bad input raises an error that names the problem and the expected value, and leaves
the state as it was. Run against every tier this machine can run."""

import pytest
import torch

from compare import available_tiers, load_tier
from reference import ModelConfig, TierInputError, WeightsError, random_weights

CPU_TIERS = [t for t in available_tiers("cpu") if t in ("reference", "hf")]


@pytest.fixture(scope="module", params=CPU_TIERS)
def tier(request, tiny_config, tiny_weights):
    return load_tier(request.param, tiny_config, tiny_weights, dtype=torch.float32)


def snapshot(state):
    return {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in vars(state).items() if k != "cache"}


def assert_unchanged(state, before):
    for k, v in snapshot(state).items():
        assert (torch.equal(v, before[k]) if isinstance(v, torch.Tensor) else v == before[k]), k


def prefilled(tier, n=5, batch=1, max_seq_len=8):
    state = tier.new_state(batch, max_seq_len)
    tier.prefill(torch.arange(n).repeat(batch, 1), state)
    return state


@pytest.mark.parametrize("ids, match", [
    (torch.tensor([[1, 512]]), r"token id 512, outside the vocabulary \[0, 512\)"),
    (torch.tensor([[-1, 3]]), r"token id -1, outside the vocabulary"),
    (torch.zeros(1, 0, dtype=torch.int64), "empty prompt"),
    (torch.tensor([[1.0, 2.0]]), "dtype torch.float32; expected torch.int64"),
    (torch.tensor([1, 2]), r"expected \[B, T\]"),
    (torch.tensor([[1, 2], [3, 4]]), "batch size 2 of the ids does not match the state's batch size 1"),
    (torch.arange(4)[None], r"4 more token\(s\) after 5 exceed the state's max_seq_len=8"),
])
def test_bad_prefill(tier, ids, match):
    state = prefilled(tier)
    before = snapshot(state)
    with pytest.raises(TierInputError, match=match):
        tier.prefill(ids, state)
    assert_unchanged(state, before)


@pytest.mark.parametrize("ids, match", [
    (torch.tensor([600]), "outside the vocabulary"),
    (torch.tensor([[3]]), r"expected \[B\]"),
    (torch.tensor([1, 2]), "batch size 2"),
])
def test_bad_decode(tier, ids, match):
    state = prefilled(tier)
    before = snapshot(state)
    with pytest.raises(TierInputError, match=match):
        tier.decode(ids, state)
    assert_unchanged(state, before)


def test_decode_past_max_seq_len(tier):
    state = prefilled(tier, n=8)
    with pytest.raises(TierInputError, match="exceed the state's max_seq_len=8"):
        tier.decode(torch.tensor([1]), state)
    assert state.seq_len == 8


def test_decode_before_prefill(tier):
    with pytest.raises(TierInputError, match="prefill of at least one token first"):
        tier.decode(torch.tensor([1]), tier.new_state())


def test_state_from_another_tier(tier, tiny_config, tiny_weights):
    other = "hf" if tier.name != "hf" else "reference"
    state = load_tier(other, tiny_config, tiny_weights, dtype=torch.float32).new_state()
    with pytest.raises(TierInputError, match=f"state belongs to tier '{other}'; expected a state of tier '{tier.name}'"):
        tier.prefill(torch.tensor([[1]]), state)


def test_state_from_another_config(tier, tiny_config):
    small = tiny_config.replace(name="tiny-2", intermediate_size=32)
    other = load_tier(tier.name, small, random_weights(small), dtype=torch.float32)
    with pytest.raises(TierInputError, match="state was made for config 'tiny-2'; this tier runs config 'tiny'"):
        tier.prefill(torch.tensor([[1]]), other.new_state())


def test_not_a_state(tier):
    with pytest.raises(TierInputError, match="state must come from"):
        tier.prefill(torch.tensor([[1]]), {"seq_len": 0})


@pytest.mark.parametrize("kwargs, match", [
    (dict(batch_size=0), "batch_size must be a positive int, got 0"),
    (dict(max_seq_len=10**7), "exceeds the model's max_position_embeddings=4096"),
])
def test_bad_new_state(tier, kwargs, match):
    with pytest.raises(TierInputError, match=match):
        tier.new_state(**kwargs)


@pytest.mark.parametrize("name", CPU_TIERS)
def test_bad_weights(name, tiny_config, tiny_weights):
    w = dict(tiny_weights)
    w["model.norm.weight"] = torch.zeros(3)
    w["model.layers.0.mlp.up_proj.weight"] = w["model.layers.0.mlp.up_proj.weight"].to(torch.int32)
    del w["model.layers.2.linear_attn.A_log"]
    with pytest.raises(WeightsError) as info:
        load_tier(name, tiny_config, w)
    msg = str(info.value)
    assert "model.norm.weight has shape (3,), expected (64,)" in msg
    assert "up_proj.weight has dtype torch.int32, expected a floating-point dtype" in msg
    assert "1 missing: model.layers.2.linear_attn.A_log" in msg


def test_unknown_config_name():
    from reference import ConfigError

    with pytest.raises(ConfigError, match="unknown config 'qwen9'"):
        ModelConfig.named("qwen9")


@pytest.mark.parametrize("name", available_tiers("cpu"))
@pytest.mark.parametrize("bad_id", [512, 512 + 5_000_000, -1])
def test_decode_argmax_out_of_range_then_the_state_decodes_normally(name, bad_id, tiny_config, tiny_weights):
    """The fed-back path: a tier with device checks refuses the step in its kernels and raises at
    the next check; one without raises at once. Either way a TierInputError names the id, the
    state is as it was, and it then decodes as a copy that never saw the bad id."""
    tier = load_tier(name, tiny_config, tiny_weights, dtype=torch.float32)
    state = prefilled(tier)
    twin = tier.clone_state(state)
    before = snapshot(state)
    with pytest.raises(TierInputError, match=rf"token id {bad_id}\b.*outside the vocabulary \[0, 512\)"):
        tier.decode_argmax(torch.tensor([bad_id]), state)
        tier.check(state)
    assert_unchanged(state, before)
    tier.check(state)  # nothing left to raise
    token = torch.tensor([3])
    torch.testing.assert_close(tier.decode(token, state), tier.decode(token, twin), rtol=0, atol=0)
