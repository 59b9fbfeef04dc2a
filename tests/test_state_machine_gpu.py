"""The stateful property machine of tests/test_state_machine.py on a GPU: the megakernel and triton
tiers at the 0.8B shapes (bf16, seeded random weights with the norms moved: the `model` fixture)
against the fp32 reference on cuda (`ref32`), bounded (PROFILE: examples x steps, max_seq_len
<= 160) so that both run in minutes. The same rules and invariants; besides, accepted ids live on
the GPU or on the CPU (the tier moves them), the logits' bound is bf16's
(reference.tolerances.bound). Batch states of 1 to 3 rows (within the tier's max_batch; one
above max_batch must be refused): rows prefilled one by one, reset and refilled, decoded at their
own positions against the oracle's rows (issue 19), where the tier declares per_row_positions.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import strategies as st
from test_state_machine import CHUNK, Profile, Stats, machine_class, run_machine

from compare import load_tier, unavailable_reason
from reference.tolerances import bound, rel_err

pytestmark = pytest.mark.gpu

GPU_TIERS = ("megakernel", "triton")
OTHER_NAME = "qwen3.5-0.8b-other"  # a config that differs from the model's in its name and max positions


def gpu_profile(tier):
    mb = tier.max_batch  # the megakernel: 1..8 rows per launch where the ring fits
    return Profile(
        batches=tuple(b for b in (1, 2, 3) if mb is None or b <= mb),
        refused_batches=(mb + 1,) if mb is not None else (),
        max_seq_len=st.sampled_from([12, 72, 160]),  # a few shapes: the triton tier captures graphs per shape
        lengths=(1, CHUNK - 1, CHUNK, CHUNK + 1), random_len=16, fill_up_to=160, max_seqs=3,
        id_devices=("cuda", "cpu"), layouts=("contiguous", "strided"),
        tolerance=bound(torch.bfloat16), max_examples=8, steps=12)


@pytest.fixture(scope="module")
def gpu_tier(model):
    """name → the tier at the 0.8B shapes on cuda, built once per module."""
    built = {}

    def get(name):
        if name not in built:
            built[name] = load_tier(name, *model, device="cuda", dtype=torch.bfloat16)
        return built[name]

    return get


def _others(name):
    return [o for o in GPU_TIERS if o != name and unavailable_reason(o, "cuda") is None]


def gpu_foreign(name, tier, ref32, gpu_tier):
    """States `tier` must refuse: the oracle's (prefilled), the other GPU tier's, one of another config, none."""
    state = ref32.new_state(1, 16)
    ref32.prefill(torch.tensor([[5, 6, 7]], device=ref32.device), state)
    belongs = r"state belongs to tier '{}'; expected a state of tier '" + name + "'"
    out = [("a state of tier 'reference'", state, belongs.format("reference"))]
    for other in _others(name):
        out.append((f"a state of tier {other!r}", gpu_tier(other).new_state(1, 16), belongs.format(other)))
    config = tier.config.replace(name=OTHER_NAME, max_position_embeddings=2 * tier.config.max_position_embeddings)
    out.append((f"a state of config {OTHER_NAME!r}", dataclasses.replace(tier.new_state(1, 16), config=config),
                rf"state was made for config '{OTHER_NAME}'; this tier runs config '{tier.config.name}'"))
    out.append(("a dict", {"seq_len": 0, "batch_size": 1}, r"state must come from"))
    out.append(("None", None, r"state must come from"))
    return out


def gpu_donees(name, ref32, gpu_tier):
    """Tiers that must refuse a state of `name`: the oracle and the other GPU tier (the megakernel
    may first refuse a batch of 2: its batch check comes before the state's kind in decode_argmax)."""
    belongs = r"state belongs to tier '" + name + r"'; expected a state of tier '{}'"
    out = [("the reference oracle", ref32, belongs.format("reference"))]
    for other in _others(name):
        out.append((f"the {other} tier", gpu_tier(other), belongs.format(other) + "|batch 1 only"))
    return out


@pytest.mark.parametrize("name", GPU_TIERS)
def test_state_machine_gpu(name, ref32, gpu_tier, capsys, record_property):
    reason = unavailable_reason(name, "cuda")
    if reason is not None:
        pytest.skip(f"tier {name!r} cannot run on this GPU: {reason}")
    tier = gpu_tier(name)
    machine = machine_class(tier, ref32, gpu_profile(tier), lambda: gpu_foreign(name, tier, ref32, gpu_tier),
                            lambda: gpu_donees(name, ref32, gpu_tier), Stats())
    stats = run_machine(f"{name} on {torch.cuda.get_device_name()}", machine, capsys, record_property)
    assert stats.examples >= 1 and stats.steps >= stats.examples


def test_triton_decode_of_a_strided_ids_view_gpu(ref32, gpu_tier):
    """The regression test of a bug the machine found (step_check read a strided [B] view as contiguous)."""
    reason = unavailable_reason("triton", "cuda")
    if reason is not None:
        pytest.skip(reason)
    prompt = torch.tensor([[3, 4, 5, 6], [7, 8, 9, 10]], device=ref32.device)
    logits = {}
    for key, tier in (("triton", gpu_tier("triton")), ("reference", ref32)):
        state = tier.new_state(2, 8)
        tier.prefill(prompt[:, :3], state)
        logits[key] = tier.decode(prompt[:, 3], state)  # a view with stride 4
    err = max(rel_err(logits["triton"][r], logits["reference"][r]) for r in range(2))
    assert err <= bound(torch.bfloat16), f"row error {err:.3g}"
