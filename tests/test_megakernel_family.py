"""The megakernel built for other Qwen3.5 sizes (issue 22): tiny-megakernel (the smallest config
the kernels build: 5 layers in an irregular order, value heads over key heads, an untied head; its
tests run in seconds), the 2B (other widths), the 4B (hidden 2560: whole-row pieces, 3 norm pairs on
some threads) and the 9B (more DeltaNet value heads than key heads, an untied lm_head, 32 layers,
hidden 4096) against the fp32 reference on the GPU, by the 0.8B's
bounds (tests/test_megakernel.py): every layer within the bf16 bounds, 128 teacher-forced steps,
NaN-poisoned buffers, repeatability, prefill then decode, both schedules and any grid to the same
bits, many tokens in one launch equal to a launch a step, and compute-sanitizer memcheck. CPU tests: the build's defines, namespaces, cache folders and
compile checks per size (megakernel/family.py).

The weights are drawn on the GPU (megakernel.sanitize.gpu_random_weights: seeded, the norms off
their init values) and kept on the CPU; each test builds the tiers it needs and frees them, so the
9B (18 GB of bf16 weights, 36 GB as the fp32 reference) fits an 80 GB GPU.
"""

import gc
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from megakernel.build import cache_dir, compile_check, nvcc_path
from megakernel.family import config_refusal, kernel_defines, nvcc_defines, ops_namespace, shape_tag
from reference import ModelConfig, ReferenceTier

from helpers import assert_layers_within_bf16_bounds, bf16_baseline_tier, debug_poisoned, random_ids, variant_restored

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = ("tiny-megakernel", "qwen3.5-2b", "qwen3.5-4b", "qwen3.5-9b")
gpu = pytest.mark.gpu
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed (CUDA toolkit missing)")


# ---- CPU ---------------------------------------------------------------------------

def test_each_size_gets_its_own_build_and_namespace():
    small, big = ModelConfig.named("qwen3.5-2b"), ModelConfig.named("qwen3.5-9b")
    assert nvcc_defines(ModelConfig.qwen3_5_0_8b()) == [] and ops_namespace(ModelConfig.qwen3_5_0_8b()) == "qwen35_megakernel"
    assert shape_tag(small) != shape_tag(big) and len(shape_tag(small)) == 8
    assert ops_namespace(big) == f"qwen35_megakernel_{shape_tag(big)}"
    assert f"-DMK_OPS_NAMESPACE={ops_namespace(big)}" in nvcc_defines(big)
    assert kernel_defines(big) == {"MK_D": 4096, "MK_INTER": 12288, "MK_VOCAB": 248320, "MK_NLAYER": 32, "MK_DN_HK": 16,
                                   "MK_DN_HV": 32, "MK_FA_HQ": 16, "MK_FA_HKV": 4, "MK_TIED": 0,
                                   "MK_FULL_MASK": sum(1 << l for l in range(3, 32, 4))}
    tiny = ModelConfig.named("tiny-megakernel")  # (an irregular layer order: L, F, L, L, F)
    assert kernel_defines(tiny)["MK_FULL_MASK"] == 0b10010 and "-DMK_FULL_MASK=0x12ull" in nvcc_defines(tiny)
    folders = {cache_dir(["sm_90a"], c) for c in (None, small, big)}
    assert len(folders) == 3 and cache_dir(["sm_90a"], big).endswith(f"-sm_90a-{shape_tag(big)}")
    assert cache_dir(["sm_90a"], ModelConfig.qwen3_5_0_8b()) == cache_dir(["sm_90a"])  # the 0.8B: the sources' defaults


def test_every_refused_field_is_named_with_its_constraint():
    bad = ModelConfig.qwen3_5_0_8b().replace(num_key_value_heads=4, intermediate_size=3000, hidden_size=1000)
    why = config_refusal(bad)
    for part in ("hidden_size=1000: must be a multiple of 256 from 1024 to 4096", "intermediate_size=3000: must split",
                 "num_attention_heads=8: must be 4 x num_key_value_heads=4"):
        assert part in why, why
    with pytest.raises(ValueError, match="cannot be built"):
        kernel_defines(bad)
    linear_only = ModelConfig.qwen3_5_0_8b().replace(layer_types=("linear_attention",) * 4)
    assert "layer_types (4 layers, kinds ['linear_attention'], the first linear_attention): must be at most 64 layers" in \
        config_refusal(linear_only)
    attention_first = ModelConfig.qwen3_5_0_8b().replace(layer_types=("full_attention",) + ("linear_attention",) * 3)
    assert "the first full_attention): must be" in config_refusal(attention_first)  # (found by a review: hidden unset)


@needs_nvcc
@pytest.mark.parametrize("name", SIZES)
def test_compiles_for_each_size_without_gpu(name, tmp_path):
    """nvcc for sm_90a with the size's defines: every static_assert of the work maps holds, and only
    batch 1 is compiled (the batch kernels are the 0.8B widths')."""
    report = compile_check("sm_90a", out_dir=str(tmp_path), config=ModelConfig.named(name))
    assert "registers" in report
    assert "mk_decode_kernelILb1ELi1E" in report and "mk_decode_kernelILb1ELi2E" not in report


def test_build_command_refuses_a_size_by_its_field():
    proc = subprocess.run([sys.executable, "-m", "megakernel", "build", "--config", "qwen3.5-27b"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "hidden_size=5120: must be a multiple of 256 from 1024 to 4096" in proc.stderr


# ---- GPU ---------------------------------------------------------------------------

def free():
    gc.collect()
    torch.cuda.empty_cache()


@pytest.fixture(scope="module", params=SIZES)
def family(request):
    """(config, weights on the CPU) of one size; the GPU holds only what a test builds."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from megakernel.sanitize import gpu_random_weights

    config = ModelConfig.named(request.param)
    weights = {k: v.cpu() for k, v in gpu_random_weights(config, seed=0).items()}
    free()
    yield config, weights
    free()


def trace_of(tier, prompt, token):
    """Every traced part of one decode step after `prompt` (fp32 on the CPU)."""
    state = tier.new_state(max_seq_len=prompt.shape[1] + 8)
    tier.prefill(prompt, state)
    trace = {}
    logits = tier.decode(token.view(1), state, trace=trace)
    out = {k: v.float().cpu() for k, v in trace.items()}
    out["logits"] = logits.float().cpu()
    return out


@gpu
@pytest.mark.parametrize("prompt_len", [16, 300])
def test_every_layer_within_bf16_bounds(family, prompt_len):
    from megakernel.tier import MegakernelTier

    config, weights = family
    prompt, token = random_ids(prompt_len, 1, config.vocab_size), random_ids(1, 2, config.vocab_size)[0]
    traces = {}
    for name, make in (("megakernel", lambda: MegakernelTier(config, weights, device="cuda")),
                       ("fp32", lambda: ReferenceTier(config, weights, device="cuda", dtype=torch.float32)),
                       ("base", lambda: bf16_baseline_tier(config, weights))):
        tier = make()
        base_name = None
        if name == "base":
            base_name, tier = tier
        traces[name] = trace_of(tier, prompt, token)
        del tier
        free()
    keys = ["embed"] + [f"layers.{i}" for i in range(config.num_layers)] + ["norm", "logits"]
    assert_layers_within_bf16_bounds(traces["megakernel"], traces["fp32"], traces["base"], base_name, keys)


def forced_logits(tier, prompt, forced):
    """The logits of `prompt` then each of `forced` fed in turn (fp32, on the CPU) [len(forced), vocab]."""
    state = tier.new_state(max_seq_len=prompt.shape[1] + len(forced) + 8)
    tier.prefill(prompt, state)
    return torch.stack([tier.decode(forced[t:t + 1], state).float().view(-1).cpu() for t in range(len(forced))])


@gpu
def test_teacher_forced_128_steps_no_drift(family):
    """128 teacher-forced steps against the fp32 reference: every step's logits within 1.5x (+0.005)
    the bf16 baseline's own error on the same step (transformers' where it runs; the 0.8B's per-layer
    rule: at the 9B the logits of a bf16 model sit 5-8% off fp32, past the 0.8B test's absolute 8%),
    no drift (the last 32 steps' mean within 1.5x the first 32's + 0.01), the same argmax as the
    reference on >= 75% of the steps."""
    from megakernel.tier import MegakernelTier

    config, weights = family
    prompt, forced = random_ids(16, 3, config.vocab_size), random_ids(128, 4, config.vocab_size)[0]
    logits = {}
    for name, make in (("base", lambda: bf16_baseline_tier(config, weights)[1]),
                       ("fp32", lambda: ReferenceTier(config, weights, device="cuda", dtype=torch.float32)),
                       ("megakernel", lambda: MegakernelTier(config, weights, device="cuda"))):
        tier = make()
        logits[name] = forced_logits(tier, prompt, forced)
        del tier
        free()
    ref = logits["fp32"]
    err = {k: ((logits[k] - ref).norm(dim=1) / ref.norm(dim=1)).tolist() for k in ("megakernel", "base")}
    report = [f"step {t}: megakernel {e:.3e}, base {b:.3e}" for t, (e, b) in enumerate(zip(err["megakernel"], err["base"]))]
    if os.environ.get("OUT"):  # (a GPU run keeps the per-step errors: docs/results)
        with open(os.path.join(os.environ["OUT"], f"teacher_forced_{config.name}.json"), "w") as f:
            json.dump(err, f)
    assert all(e <= 1.5 * b + 5e-3 for e, b in zip(err["megakernel"], err["base"])), "\n".join(report)
    e = err["megakernel"]
    first, last = sum(e[:32]) / 32, sum(e[-32:]) / 32
    assert last <= 1.5 * first + 0.01, (first, last)
    agree = int((logits["megakernel"].argmax(1) == ref.argmax(1)).sum())
    assert agree >= 0.75 * 128, agree


@gpu
def test_repeatable_poison_proof_and_prefill_then_decode(family):
    """NaN in every workspace and prefill buffer before each launch changes nothing (no unwritten
    read), two runs are bitwise equal, and prefill of 18 then 6 decode steps gives the logits of a
    prefill of all 24 within 8% (the 0.8B's bound: the prefill and the decode kernel are two bf16
    implementations, each within the bf16 bounds of the fp32 reference; measured 4.5% at the 2B)."""
    from megakernel.tier import MegakernelTier

    config, weights = family
    mk = MegakernelTier(config, weights, device="cuda")
    seq = random_ids(24, 5, config.vocab_size)
    runs = []
    for poisoned in (False, True, False):
        state = mk.new_state(max_seq_len=64)
        if poisoned:
            with debug_poisoned(mk):
                mk.prefill(seq[:, :18], state)
                out = [mk.decode(seq[0, i:i + 1], state) for i in range(18, 24)]
        else:
            mk.prefill(seq[:, :18], state)
            out = [mk.decode(seq[0, i:i + 1], state) for i in range(18, 24)]
        runs.append(torch.stack(out))
    assert torch.isfinite(runs[1]).all()
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0], runs[2])
    whole = mk.prefill(seq, mk.new_state(max_seq_len=64))
    step = runs[0][-1].float().view(-1)
    assert ((step - whole.float().view(-1)).norm() / whole.float().norm()).item() < 0.08  # (the 0.8B's bound)
    del mk
    free()


@gpu
def test_schedules_and_grids_give_the_same_bits(family):
    """The ring and the register schedule, one block per SM and fewer blocks than units (97, 40):
    the same logits and state bits (both loaders hand each warp the same pieces in the same order)."""
    from megakernel.tier import MegakernelTier

    config, weights = family
    mk = MegakernelTier(config, weights, device="cuda")
    prompt, token = random_ids(40, 8, config.vocab_size), random_ids(1, 9, config.vocab_size)[0]
    s0 = mk.new_state(max_seq_len=64)
    mk.prefill(prompt, s0)
    ref_state = mk.clone_state(s0)
    full = mk.decode(token, ref_state)
    with variant_restored(mk):
        for schedule in (["ring", "register"] if mk.max_ring_slots else ["register"]):
            for grid in (mk.max_grid, 97, 40):
                mk.schedule, mk.grid = schedule, grid
                st = mk.clone_state(s0)
                assert torch.equal(mk.decode(token, st), full), (schedule, grid)
                assert torch.equal(st.dn_state, ref_state.dn_state) and torch.equal(st.k_cache, ref_state.k_cache)
    del mk
    free()


@gpu
def test_many_tokens_in_one_launch_equal_a_launch_a_step(family):
    from megakernel.tier import MegakernelTier

    config, weights = family
    mk = MegakernelTier(config, weights, device="cuda")
    prompt, token = random_ids(20, 10, config.vocab_size), random_ids(1, 11, config.vocab_size)[0]
    a, b = mk.new_state(max_seq_len=64), mk.new_state(max_seq_len=64)
    mk.prefill(prompt, a)
    mk.prefill(prompt, b)
    one = mk.decode_greedy(token.view(1), a, 12)
    ids, steps = token.view(1).to(mk.device), []
    for _ in range(12):
        ids = mk.decode_argmax(ids, b)
        steps.append(ids.cpu())
    assert torch.equal(one, torch.stack(steps)), (one.view(-1).tolist(), torch.stack(steps).view(-1).tolist())
    assert torch.equal(a.dn_state, b.dn_state) and torch.equal(a.k_cache, b.k_cache)
    del mk
    free()


@gpu
def test_compute_sanitizer_memcheck_clean(family):
    """compute-sanitizer memcheck of the size's decode kernels: logits and trace steps, the fused
    argmax, split-K at 40 and 300 tokens, a refused id, many-token launches (megakernel/sanitize.py)."""
    config, _ = family
    exe = shutil.which("compute-sanitizer") or (
        os.path.join(os.path.dirname(nvcc_path()), "compute-sanitizer") if nvcc_path() else None)
    if not exe or not os.path.exists(exe):
        pytest.skip("compute-sanitizer is not installed")
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    cmd = [exe, "--tool", "memcheck", "--kernel-name", "kns=mk_decode_kernel", "--error-exitcode", "3", sys.executable,
           "-m", "megakernel", "sanitize-run", "--steps", "2", "--config", config.name]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    log_dir = os.environ.get("OUT")
    if log_dir:
        with open(os.path.join(log_dir, "sanitizers_family.log"), "a") as f:
            f.write(f"\n##### memcheck / {config.name}: exit status {proc.returncode}\n{' '.join(cmd)}\n{out}")
    assert proc.returncode == 0 and "ERROR SUMMARY: 0 errors" in out, out[-4000:]
    assert "refused step: token id" in out, out[-4000:]
