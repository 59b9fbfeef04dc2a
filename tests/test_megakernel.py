"""The megakernel tier: CPU checks (compiles for every arch, clear errors) and GPU checks
(bf16 bounds per layer against the fp32 reference, no drift over 128 teacher-forced
steps, prefill → decode = prefill, NaN-poisoned scratch, bitwise repeatability, any grid
size, sanitizers)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
from helpers import assert_layers_within_bf16_bounds
from helpers import random_ids as ids
from helpers import rel_err as rel

import megakernel.tier as tier_mod
from compare import load_tier, unavailable_reason
from megakernel.build import BuildError, compile_check, normalize_arch, nvcc_path
from megakernel.tier import (
    MegakernelTier,
    attention_splits,
    check_batch,
    config_mismatch,
)
from reference import ModelConfig, TierInputError, TierUnavailable, random_weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed (CUDA toolkit missing)")




# ---- CPU ---------------------------------------------------------------------------

@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90a"])
def test_compiles_without_gpu(arch, tmp_path):
    report = compile_check(arch, out_dir=str(tmp_path))
    assert "registers" in report


@needs_nvcc
def test_build_command(tmp_path):
    env = dict(os.environ, QWEN35_MEGAKERNEL_CACHE=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "megakernel", "build", "--arch", "sm_90a"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "sm_90a" in proc.stdout


def test_bad_arch_is_a_clear_error():
    with pytest.raises(BuildError, match="sm_75.*expected one of"):
        normalize_arch("sm_75")
    assert normalize_arch("9.0a") == "sm_90a" and normalize_arch("86") == "sm_86"


def test_unavailable_without_gpu():
    assert "CUDA GPU" in unavailable_reason("megakernel", "cpu")
    if not torch.cuda.is_available():
        assert "no CUDA GPU" in unavailable_reason("megakernel", "cuda")
        config = ModelConfig.tiny()
        with pytest.raises(TierUnavailable, match="megakernel"):
            load_tier("megakernel", config, random_weights(config), device="cuda")


def test_other_config_is_a_clear_error():
    config = ModelConfig.tiny()
    assert any(m.startswith("hidden_size=64") for m in config_mismatch(config))
    with pytest.raises(TierInputError, match=r"qwen3\.5-0\.8b shapes only.*hidden_size=64 \(expected 1024\)"):
        MegakernelTier(config, random_weights(config), device="cuda")
    assert config_mismatch(ModelConfig.qwen3_5_0_8b()) == []


def test_batch_one_only():
    check_batch(1)
    with pytest.raises(TierInputError, match="batch 1 only; got batch_size=2"):
        check_batch(2)


def test_ab_variant_specs():
    from megakernel.ab import parse_variant

    assert parse_variant("base", 544) == ("base", {})
    assert parse_variant("ef:flags=+2048,positions_per_split=16", 544) == ("ef", {"flags": 2592, "positions_per_split": 16})
    assert parse_variant("v8:flags=-2048,ring_inflight=2", 2592) == ("v8", {"flags": 544, "ring_inflight": 2})
    assert parse_variant("x:flags=0x200", 0) == ("x", {"flags": 512})
    for bad, msg in ((":flags=1", "name before ':' is empty"), ("a:foo=1", "'foo=1' is not attr=value"),
                     ("a:flags", "'flags' is not attr=value"), ("a:grid=many", "'many' is not an integer")):
        with pytest.raises(SystemExit, match=msg):
            parse_variant(bad, 0)


def test_ring_only_flags_need_the_ring():
    tier_mod.check_ring_only_flags(tier_mod.RING_SCHEDULE | tier_mod.MKF_STREAM_ONLY | tier_mod.MKF_TWO_PRODUCERS)
    tier_mod.check_ring_only_flags(tier_mod.REGISTER_SCHEDULE)
    for extra, name in ((tier_mod.MKF_STREAM_ONLY, "MKF_STREAM_ONLY"), (tier_mod.MKF_TWO_PRODUCERS, "MKF_TWO_PRODUCERS")):
        with pytest.raises(TierInputError, match=f"{name} work in the ring schedule only; add MKF_RING"):
            tier_mod.check_ring_only_flags(tier_mod.REGISTER_SCHEDULE | extra)


def test_extension_constants_must_match():
    class Ext:
        pass
    ext = Ext()
    for k in ("NPHASES", "NBARRIERS", "NTIMES", "RING_MAX_PRODUCERS", "SYNC_WORDS", "ATT_MAX_SPLIT", "ATT_PART", "NSLOT"):
        setattr(ext, k, getattr(tier_mod, k))
    tier_mod.check_extension_constants(ext)
    ext.NTIMES += 1
    with pytest.raises(RuntimeError, match=r"NTIMES: kernel \d+, tier \d+"):
        tier_mod.check_extension_constants(ext)


def test_attention_splits():
    for pos in (0, 1, 15, 31, 32, 100, 143, 4095, 100000):
        n = attention_splits(pos)
        assert 1 <= n <= min(64, pos + 1)
    assert attention_splits(15) == 1 and attention_splits(143) == 5 and attention_splits(100000) == 64
    assert attention_splits(143, per_split=8) == 18 and attention_splits(15, per_split=16) == 1


# ---- GPU ---------------------------------------------------------------------------



@pytest.fixture(scope="module")
def mk(model):
    return MegakernelTier(*model, device="cuda")








def one_step_trace(tier, prompt, token):
    state = tier.new_state(max_seq_len=512)
    tier.prefill(prompt, state)
    trace = {}
    tier.decode(token, state, trace=trace)
    return trace


@gpu
@needs_gpu
@pytest.mark.parametrize("prompt_len", [16, 300])
def test_every_layer_within_bf16_bounds(mk, ref32, bf16_baseline, prompt_len):
    prompt, token = ids(prompt_len, 1), ids(1, 2)[0]
    oracle = one_step_trace(ref32, prompt, token)
    got = one_step_trace(mk, prompt, token)
    name, base_tier = bf16_baseline
    base = one_step_trace(base_tier, prompt, token)
    keys = ["embed"] + [f"layers.{i}" for i in range(24)] + ["norm", "logits"]
    assert_layers_within_bf16_bounds(got, oracle, base, name, keys)


@gpu
@needs_gpu
def test_teacher_forced_128_steps_no_drift(mk, ref32):
    prompt, forced = ids(16, 3), ids(128, 4)[0]
    s_mk, s_ref = mk.new_state(max_seq_len=160), ref32.new_state(max_seq_len=160)
    mk.prefill(prompt, s_mk)
    ref32.prefill(prompt, s_ref)
    errs, agree = [], 0
    for t in range(128):
        a = mk.decode(forced[t:t + 1], s_mk)
        b = ref32.decode(forced[t:t + 1], s_ref)
        errs.append(rel(a, b))
        agree += int(a.argmax() == b.argmax())
    first, last = sum(errs[:32]) / 32, sum(errs[-32:]) / 32
    assert max(errs) < 0.08, errs
    assert last <= 1.5 * first + 0.01, (first, last)
    assert agree >= 0.75 * 128, agree


@gpu
@needs_gpu
def test_prefill_then_decode_equals_prefill_of_everything(mk):
    seq = ids(24, 5)
    a = mk.new_state(max_seq_len=64)
    mk.prefill(seq[:, :18], a)
    for t in range(18, 24):
        la = mk.decode(seq[0, t:t + 1], a)
    b = mk.new_state(max_seq_len=64)
    lb = mk.prefill(seq, b)
    assert a.seq_len == b.seq_len == 24
    # bf16 paths that round in different places (the reference's own chunked vs whole prefill differ ~3%)
    assert rel(la, lb) < 0.08
    assert rel(a.dn_state, b.dn_state) < 0.08
    assert rel(a.k_cache[:, :, :24], b.k_cache[:, :, :24]) < 0.08
    # and a second prefill continues a decoded state (chunked prefill on the kernel's state)
    c = mk.new_state(max_seq_len=64)
    mk.prefill(seq[:, :10], c)
    mk.decode(seq[0, 10:11], c)
    lc = mk.prefill(seq[:, 11:], c)
    assert rel(lc, lb) < 0.08


@gpu
@needs_gpu
@pytest.mark.parametrize("prompt_len", [16, 70])
def test_fused_argmax_repeatable_and_poison_proof(mk, prompt_len):
    prompt, token = ids(prompt_len, 6), ids(1, 7)[0]
    s0 = mk.new_state(max_seq_len=128)
    mk.prefill(prompt, s0)
    s1, s2, s3, s4 = (mk.clone_state(s0) for _ in range(4))
    t1, t2, t3 = {}, {}, {}
    l1 = mk.decode(token, s1, trace=t1)
    l2 = mk.decode(token, s2, trace=t2)
    mk.debug_poison = True
    try:
        l3 = mk.decode(token, s3, trace=t3)
        nxt = mk.decode_argmax(token, s4)
    finally:
        mk.debug_poison = False
    assert torch.isfinite(l1).all()
    assert torch.equal(l1, l2) and torch.equal(l1, l3), "not bitwise repeatable (a race?) or read unwritten memory"
    for k in t1:
        assert torch.equal(t1[k], t2[k]) and torch.equal(t1[k], t3[k]), k
    assert torch.equal(s1.dn_state, s2.dn_state) and torch.equal(s1.dn_state, s3.dn_state)
    assert torch.equal(s1.k_cache[:, :, :s1.seq_len], s3.k_cache[:, :, :s3.seq_len])
    assert int(nxt) == int(l1.argmax()), "fused argmax differs from argmax of the logits"
    assert torch.equal(s4.dn_state, s1.dn_state)


V5_FLAGS = tier_mod.MKF_GEN_BAR | tier_mod.MKF_DN_FLAGS | tier_mod.MKF_FA_FLAGS
SPLIT_K_FLAGS = tier_mod.MKF_LEAN_MERGE | tier_mod.MKF_OUT_MERGE


@gpu
@needs_gpu
def test_any_grid_and_schedule_gives_the_same_bits(mk):
    prompt, token = ids(40, 8), ids(1, 9)[0]
    s0 = mk.new_state(max_seq_len=64)
    mk.prefill(prompt, s0)
    s1, s2 = mk.clone_state(s0), mk.clone_state(s0)
    full = mk.decode(token, s1)
    mk.grid = 97  # fewer blocks than units: every phase loops
    try:
        small = mk.decode(token, s2)
    finally:
        mk.grid = mk.max_grid
    assert torch.equal(full, small)
    assert torch.equal(s1.dn_state, s2.dn_state)
    E, L, R = tier_mod.MKF_EARLY, tier_mod.MKF_LIGHT_BAR, tier_mod.MKF_RING
    # the schedule variants (register early-issue on/off, L2 prefetch kinds, v5 barriers, the v6
    # ring filled by TMA or by cp.async, with or without v9's evict-first weights) compute the same bits
    saved, saved_inflight = (mk.flags, mk.pf_dist), mk.ring_inflight
    try:
        for flags, pf in ((R | L, 0), (R, 0), (R | L | tier_mod.MKF_RING_TMA, 0), (R | L | tier_mod.MKF_GEN_BAR, 0),
                          (tier_mod.RING_SCHEDULE | tier_mod.MKF_TWO_PRODUCERS, 0),
                          (0, 0), (E, 0), (L, 0), (E | L | tier_mod.MKF_PF_LINES, 2),
                          (tier_mod.MKF_PF_END | tier_mod.MKF_PF_LINES, 1),
                          (E | tier_mod.MKF_PF_SPREAD | tier_mod.MKF_LM_PF, 2),
                          (L | tier_mod.MKF_GEN_BAR, 0), (E | L | tier_mod.MKF_GEN_BAR, 0),
                          (E | L | tier_mod.MKF_DN_FLAGS, 0), (E | L | tier_mod.MKF_FA_FLAGS, 0),
                          (E | L | V5_FLAGS, 0), (E | V5_FLAGS, 0)):
            mk.flags, mk.pf_dist = flags, pf
            assert torch.equal(mk.decode(token, mk.clone_state(s0)), full), (flags, pf)
        mk.flags, mk.ring_inflight = tier_mod.RING_SCHEDULE, 2  # the ring's producer paced (v6-v8's default)
        assert torch.equal(mk.decode(token, mk.clone_state(s0)), full), "ring_inflight=2"
        # the ring's slot and fill-parity counting at the fewest slots and at an odd count, paced or not
        for slots, inflight in ((tier_mod.RING_MIN_SLOTS, 0), (tier_mod.RING_MIN_SLOTS + 1, 0), (tier_mod.RING_MIN_SLOTS + 1, 3)):
            if mk.flags & tier_mod.MKF_RING and slots <= mk.max_ring_slots:
                mk.ring_slots, mk.ring_inflight = slots, inflight
                assert torch.equal(mk.decode(token, mk.clone_state(s0)), full), (slots, inflight)
        mk.ring_slots, mk.ring_inflight = mk.max_ring_slots, saved_inflight
        mk.grid = 97  # several units per block; phases of several ring items
        for flags in (E | L | V5_FLAGS, R | L, R | L | tier_mod.MKF_RING_TMA, tier_mod.REGISTER_SCHEDULE,
                      tier_mod.RING_SCHEDULE | tier_mod.MKF_TWO_PRODUCERS):
            mk.flags = flags
            assert torch.equal(mk.decode(token, mk.clone_state(s0)), full), (flags, 97)
    finally:
        mk.flags, mk.pf_dist = saved
        mk.grid, mk.ring_inflight, mk.ring_slots = mk.max_grid, saved_inflight, mk.max_ring_slots


@gpu
@needs_gpu
@pytest.mark.parametrize("per_split", [2, 6, 32])
def test_split_k_variants_give_the_same_bits(mk, per_split):
    """The attention split-K variants (the count by one release-atomic without fences; the
    out-proj merging 2-8 partials itself) compute the default's bits: 41 positions over 21
    splits (past the out-proj's 8: the units merge), 7 splits, 2 splits, with the ring and the
    register schedules, and with a grid smaller than the units (blocks with two units)."""
    prompt, token = ids(40, 16), ids(1, 17)[0]
    s0 = mk.new_state(max_seq_len=64)
    mk.prefill(prompt, s0)
    saved = mk.flags, mk.positions_per_split
    try:
        mk.positions_per_split = per_split
        ring = tier_mod.RING_SCHEDULE & ~SPLIT_K_FLAGS if mk.max_ring_slots else 0  # v10's default
        mk.flags = ring or tier_mod.REGISTER_SCHEDULE
        ref = mk.clone_state(s0)
        full = mk.decode(token, ref)
        for base in {ring, tier_mod.REGISTER_SCHEDULE}:
            for extra in (0, tier_mod.MKF_LEAN_MERGE, tier_mod.MKF_OUT_MERGE, SPLIT_K_FLAGS):
                for grid in (mk.max_grid, 40):
                    mk.flags, mk.grid = base | extra, grid
                    st = mk.clone_state(s0)
                    assert torch.equal(mk.decode(token, st), full), (base, extra, grid)
                    assert torch.equal(st.k_cache, ref.k_cache) and torch.equal(st.dn_state, ref.dn_state), (base, extra, grid)
    finally:
        mk.flags, mk.positions_per_split = saved
        mk.grid = mk.max_grid


def twin_states(mk, prompt, max_seq_len):
    """Two states, each prefilled with the same prompt."""
    states = mk.new_state(max_seq_len=max_seq_len), mk.new_state(max_seq_len=max_seq_len)
    for st in states:
        mk.prefill(prompt, st)
    return states


@gpu
@needs_gpu
@pytest.mark.parametrize("flags", [tier_mod.MKF_EARLY | tier_mod.MKF_LIGHT_BAR | V5_FLAGS,
                                   tier_mod.MKF_EARLY | tier_mod.MKF_LIGHT_BAR | tier_mod.MKF_DN_FLAGS,
                                   tier_mod.REGISTER_SCHEDULE,
                                   tier_mod.RING_SCHEDULE | tier_mod.MKF_RING_TMA,
                                   tier_mod.RING_SCHEDULE | tier_mod.MKF_TWO_PRODUCERS,
                                   tier_mod.RING_SCHEDULE & ~SPLIT_K_FLAGS])
def test_schedules_over_many_steps(mk, flags):
    """Consecutive launches (the publish / generation words carry over between them, the ring
    starts empty in each), a few positions on each side of an attention split change, against
    the default schedule."""
    forced = ids(12, 13)[0]
    a, b = twin_states(mk, ids(28, 12), max_seq_len=64)
    saved = mk.flags
    try:
        for t in range(12):
            mk.flags = saved
            la = mk.decode(forced[t:t + 1], a)
            mk.flags = flags
            lb = mk.decode(forced[t:t + 1], b)
            assert torch.equal(la, lb), t
        assert torch.equal(a.dn_state, b.dn_state) and torch.equal(a.k_cache, b.k_cache)
    finally:
        mk.flags = saved


@gpu
@needs_gpu
@pytest.mark.parametrize("producers", [1, 2])
def test_stream_only_launch_leaves_the_next_decode_exact(mk, producers):
    """The measurement mode streams the weights and computes nothing: it hands the input id back
    and keeps the barrier counter's epoch, so the real decodes after it (and their state) equal
    those of a state that never saw it."""
    if not mk.max_ring_slots:
        pytest.skip("the ring schedule does not fit this GPU's shared memory (the mode streams through the ring)")
    token = ids(1, 15)[0]
    a, b = twin_states(mk, ids(20, 14), max_seq_len=32)
    saved = mk.flags
    try:
        mk.flags = saved | tier_mod.MKF_STREAM_ONLY | (tier_mod.MKF_TWO_PRODUCERS if producers == 2 else 0)
        scratch = mk.clone_state(b)
        out = mk.decode_argmax(token.to(mk.device), scratch)
        assert int(out) == int(token)  # the input id, untouched
        assert torch.equal(scratch.dn_state, b.dn_state) and torch.equal(scratch.k_cache, b.k_cache)  # nothing written
    finally:
        mk.flags = saved
    for t in range(3):
        la, lb = mk.decode(token, a), mk.decode(token, b)
        assert torch.equal(la, lb), t


@gpu
@needs_gpu
def test_ring_full_time_is_measured(mk):
    """Timing mode: every block's producer reports how long it waited for a free ring slot."""
    if not mk.max_ring_slots:
        pytest.skip("the ring schedule does not fit this GPU's shared memory")
    state = mk.new_state(max_seq_len=32)
    mk.prefill(ids(8, 16), state)
    mk.decode_layer_times(ids(1, 17)[0], state)
    full = mk.last_ring_full_us
    assert full.shape == (mk.grid,) and torch.isfinite(full).all() and (full >= 0).all()
    span_us = (mk.last_phase_stamps[tier_mod.NPHASES] - mk.last_phase_stamps[0]) / 1000.0
    assert float(full.max()) < span_us  # (a wait cannot outlast the launch)


@gpu
@needs_gpu
def test_batch_above_one_is_refused(mk):
    with pytest.raises(TierInputError, match="batch 1 only"):
        mk.new_state(batch_size=2)


@gpu
@needs_gpu
def test_layer_times(mk):
    state = mk.new_state(max_seq_len=32)
    mk.prefill(ids(8, 10), state)
    times = mk.decode_layer_times(ids(1, 11)[0], state)
    assert state.seq_len == 9
    assert list(times) == ["embed"] + [f"layers.{i}" for i in range(24)] + ["norm", "lm_head"]
    assert all(v >= 0 for v in times.values()) and sum(times.values()) > 0


@gpu
@needs_gpu
# racecheck does not follow the ring's mbarrier hand-offs between the producer's asynchronous copies
# (cp.async or TMA) and the compute warps' reads: it reports every read of a slot as a race
# (megakernel/NOTES.md, "v8"). The ring schedule (the default on sm_90) gets memcheck and synccheck;
# racecheck covers the register schedules, whose shared memory is ordered by bar.sync alone.
@pytest.mark.parametrize("tool,flags", [("memcheck", "default"), ("synccheck", "default"),
                                        ("racecheck", "plain"), ("racecheck", "register"),
                                        ("memcheck", "v5"), ("racecheck", "v5")])
def test_compute_sanitizer_clean(tool, flags, tmp_path):
    exe = shutil.which("compute-sanitizer") or (
        os.path.join(os.path.dirname(nvcc_path()), "compute-sanitizer") if nvcc_path() else None)
    if not exe or not os.path.exists(exe):
        pytest.skip("compute-sanitizer is not installed")
    value = {"default": MegakernelTier.flags, "plain": 0, "register": tier_mod.REGISTER_SCHEDULE,
             "v5": tier_mod.MKF_EARLY | tier_mod.MKF_LIGHT_BAR | V5_FLAGS}[flags]
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", CUDA_LAUNCH_BLOCKING="1")
    cmd = [exe, "--tool", tool, "--kernel-name", "kns=mk_decode_kernel", "--error-exitcode", "3",
           sys.executable, "-m", "megakernel", "sanitize-run", "--steps", "2", "--flags", str(value)]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=100)
        out, status = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:  # e.g. a grid barrier that never opens under instrumentation
        text = [x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr)]
        out, status = "TIMEOUT after 100 s\n" + "".join(text), -1
    # every run's whole report, appended to one file ($OUT when set)
    log_dir = os.environ.get("OUT") or str(tmp_path)
    with open(os.path.join(log_dir, "sanitizers.log"), "a") as f:
        f.write(f"\n##### {tool} / {flags} schedule ({value}): exit status {status}\n{' '.join(cmd)}\n{out}")
    # the sanitizer's own report lines ("=========") first: the hazard or bad access is described there
    report = [line for line in out.splitlines() if line.startswith("=========")]
    # memcheck and synccheck end with "ERROR SUMMARY: 0 errors", racecheck with "RACECHECK SUMMARY: n hazards displayed
    # (0 errors, n warnings)" (warnings: same-value writes, benign)
    clean = re.search(r"ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: \d+ hazards? displayed \(0 errors", out)
    assert status == 0 and clean, "\n".join(report[:80]) or out[-4000:]


def test_anatomy_of_a_stream_only_launch_has_no_phase_rows():
    """The stream-only mode stamps no phases: the table says so instead of printing the unset
    stamps' differences, and still reports the ring's full time."""
    from megakernel.bench import anatomy_lines

    lines = anatomy_lines({"ring_full_us": {"min": 23.6, "median": 24.0, "max": 24.3}})
    assert "no phase stamps" in lines[0] and len(lines) == 2
    assert "median 24.0" in lines[1]
    full = anatomy_lines({"DeltaNet in-proj": {"first": 1.0, "median": 2.0, "last": 3.0, "exit": 1.5, "unit_last": 0.5},
                          "ring_full_us": {"min": 1.0, "median": 2.0, "max": 3.0}})
    assert "DeltaNet in-proj" in full[1] and "50%" in full[1]
