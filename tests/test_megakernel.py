"""The megakernel tier: CPU checks (compiles for every arch, the shapes header is the 0.8B config,
clear errors, the stamps' parsing) and GPU checks (bf16 bounds per layer against the fp32
reference, phase by phase against the reference's intermediates, no drift over 128
teacher-forced steps, prefill → decode = prefill, NaN-poisoned workspace, bitwise repeatability
over grid sizes × {ring, register} schedules, the torch ops under opcheck and torch.compile,
sanitizers)."""

from __future__ import annotations

import math
import os
import re
import shutil
import statistics
import subprocess
import sys

import pytest
import torch
from helpers import assert_layers_within_bf16_bounds, bf16_baseline_tier, debug_poisoned, variant_restored
from helpers import random_ids as ids
from helpers import rel_err as rel

import megakernel.tier as tier_mod
from compare import load_tier, unavailable_reason
from megakernel.build import CSRC, BuildError, compile_check, cuda_include_dirs, normalize_arch, nvcc_path
from megakernel.family import config_problems
from megakernel.tier import MegakernelTier, StepTimes, attention_splits, kernel_shape_mismatch
from reference import ModelConfig, TierInputError, TierUnavailable, random_weights

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc is not installed (CUDA toolkit missing)")


# ---- CPU ---------------------------------------------------------------------------

def test_a_spilling_function_is_named_with_its_bytes():
    """_spilling_functions: the functions of a ptxas -v report that spill (the prefill's kernels may not, at any size:
    build.NO_SPILL_SOURCES), by name, with their store and load bytes; the warning line's repeat not counted twice."""
    from megakernel.build import NO_SPILL_SOURCES, _spilling_functions
    report = ("ptxas info    : Compiling entry function '_ZN3mkp4dn_prepEv' for 'sm_90a'\n"
              "ptxas info    : Function properties for _ZN3mkp4dn_prepEv\n"
              "    24 bytes stack frame, 20 bytes spill stores, 24 bytes spill loads\n"
              "ptxas warning : Registers are spilled to local memory in function '_ZN3mkp4dn_prepEv', 20 bytes spill "
              "stores, 24 bytes spill loads\n"
              "ptxas info    : Compiling entry function '_ZN3mkp7silu_mulEv' for 'sm_90a'\n"
              "ptxas info    : Function properties for _ZN3mkp7silu_mulEv\n"
              "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
    assert _spilling_functions(report) == [("_ZN3mkp4dn_prepEv", 20, 24)]
    assert _spilling_functions(report.replace("20 bytes spill stores, 24", "0 bytes spill stores, 0")) == []
    assert "prefill.cu" in NO_SPILL_SOURCES


def test_spill_report_names_each_kernels_batch_and_kind():
    """The compile check's parse of ptxas -v: each decode kernel's batch and whether it is a
    many-token kernel (their own spill bound), other functions batch 1, one step."""
    from megakernel.build import _spills_by_kernel

    def entry(ring, nb, many, st, ld):
        name = f"_ZN2mk46_GLOBAL__N__0_13_megakernel_cu_016mk_decode_kernelILb{ring}ELi{nb}ELb{many}EEEvNS_4ArgsE"
        return (f"ptxas info    : Compiling entry function '{name}' for 'sm_90a'\n"
                f"ptxas info    : Function properties for {name}\n"
                f"    8 bytes stack frame, {st} bytes spill stores, {ld} bytes spill loads\n")
    report = (entry(1, 8, 0, 0, 0) + entry(1, 8, 1, 100, 164) + entry(0, 1, 0, 36, 60)
              + "ptxas info    : Function properties for _Z6helperv\n    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n")
    assert _spills_by_kernel(report) == [(8, False, 0, 0), (8, True, 100, 164), (1, False, 36, 60), (1, False, 4, 4)]


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90a"])
def test_compiles_without_gpu(arch, tmp_path):
    report = compile_check(arch, out_dir=str(tmp_path))
    assert "registers" in report


def mbarrier_waits_with_memory_before_their_branch(ptx: str) -> list[str]:
    """Each mbarrier try_wait / test_wait in `ptx` followed by a memory access (ld, st, atom, red)
    before the first branch after it (the branch on the wait's result), as 'line N: instruction'."""
    lines, found = ptx.splitlines(), []
    for i, line in enumerate(lines):
        if "mbarrier.try_wait" not in line and "mbarrier.test_wait" not in line:
            continue
        for j in range(i + 1, len(lines)):
            text = lines[j].split("//")[0].strip()
            if re.search(r"\bbra(\.uni)?\b", text):
                break
            if re.match(r"(@!?%p\w+\s+)?(ld|st|atom|red)\.", text):
                found.append(f"line {j + 1}: {text}")
    return found


def test_the_wait_check_finds_a_load_beside_a_wait():
    """The check below on session 31's hang (the pollers' end-flag reads, merged by nvcc into one load
    issued beside try_wait, before the branch on its result) and on the fixed shape (the load after it)."""
    wait = ("\t{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%r4796], %r957; selp.u32 %r4795, 1, 0, p; }\n"
            "\tsetp.eq.s32 \t%p890, %r4795, 0;\n")
    hung = wait + "\tld.volatile.shared.u32 \t%r958, [sm+1188];\n\t@%p890 bra \t$L__BB9_587;\n"
    fixed = wait + "\t@%p890 bra \t$L__BB9_587;\n\tld.volatile.shared.u64 \t%rd193, [sm+1176];\n"
    assert mbarrier_waits_with_memory_before_their_branch(hung) == ["line 3: ld.volatile.shared.u32 \t%r958, [sm+1188];"]
    assert mbarrier_waits_with_memory_before_their_branch(fixed) == []


@needs_nvcc
def test_every_mbarrier_wait_branches_before_any_memory_access(tmp_path):
    """What a thread reads after an mbarrier wait must be read after the branch on the wait's result:
    a load the compiler issues beside try_wait can complete before the phase it waits for (NOTES v29:
    the grid barrier's pollers read the end flag that way and every refused launch hung). The decode
    kernels' PTX for sm_90a, every wait of every kernel."""
    from megakernel.build import NVCC_FLAGS, TORCH_LIKE_FLAGS

    out = str(tmp_path / "megakernel.ptx")
    cmd = [nvcc_path(), "-ptx", os.path.join(CSRC, "megakernel.cu"), "-o", out, *NVCC_FLAGS, *TORCH_LIKE_FLAGS,
           "-arch=sm_90a", f"-I{CSRC}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ptx = open(out).read()
    assert ptx.count("mbarrier.try_wait") > 100  # (the ring's, the pollers' and the compute warps' waits, every kernel)
    assert mbarrier_waits_with_memory_before_their_branch(ptx) == []


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
    """A config outside the kernels' constraints is refused before anything is built, naming each
    field and what it must be (megakernel/family.py)."""
    config = ModelConfig.tiny()
    assert any(m.startswith("hidden_size=64: must be a multiple of 256 from 1024 to 4096") for m in config_problems(config))
    with pytest.raises(TierInputError, match=r"cannot be built for config 'tiny': linear_key_head_dim=16: must be 128"):
        MegakernelTier(config, random_weights(config), device="cuda")
    assert config_problems(ModelConfig.qwen3_5_0_8b()) == []



def test_attention_splits():
    for pos in (0, 1, 15, 31, 32, 100, 143, 4095, 100000):
        n = attention_splits(pos)
        assert 1 <= n <= min(64, pos + 1)
    assert attention_splits(15) == 1 and attention_splits(143) == 5 and attention_splits(100000) == 64
    assert attention_splits(143, per_split=8) == 18 and attention_splits(15, per_split=16) == 1
    assert attention_splits(100000, max_split=16) == 16


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_attention_splits_is_the_kernels_formula(tmp_path):
    """The kernel computes every step's split-K units with shapes.cuh's attention_splits (the
    binding the first step's, a many-token launch the later ones'); the tier's Python function,
    which the tests and the anatomy predict with, gives the same number everywhere."""
    src = tmp_path / "splits.cpp"
    src.write_text('#include <cstdio>\n#include <initializer_list>\n#include "shapes.cuh"\nint main() { for (int per : {1, 2, 6, 32, 1000})'
                   ' for (int p = 0; p < 70000; p += (p < 3000 ? 1 : 97)) std::printf("%d %d %d\\n", per, p, '
                   'mk::attention_splits(p, per)); }\n')
    exe = tmp_path / "splits"
    subprocess.run(["g++", "-std=c++17", f"-I{CSRC}", str(src), "-o", str(exe)], check=True, capture_output=True)
    rows = [tuple(map(int, line.split())) for line in subprocess.run([str(exe)], check=True, capture_output=True,
                                                                     text=True).stdout.splitlines()]
    assert len(rows) > 10000
    wrong = [(per, p, n) for per, p, n in rows if attention_splits(p, per, 64) != n]
    assert not wrong, wrong[:5]


def shapes_header() -> dict:
    """csrc/shapes.cuh's `constexpr int NAME = <integer>;` lines and its `#define MK_* <integer>`
    defaults (the model's primary numbers)."""
    text = open(os.path.join(CSRC, "shapes.cuh")).read()
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"constexpr int (\w+) = (\d+);", text)} | {
        m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+) = (\d+)[,;]", text)} | {
        m.group(1): int(m.group(2), 0) for m in re.finditer(r"#define (MK_\w+) (0x[0-9a-f]+|\d+)", text)}


def test_shapes_header_is_the_0_8b_config():
    """The one header of the kernel's numbers says what the model's config says: its defaults are the
    0.8B's defines (megakernel/family.py), its fixed numbers every buildable config's (no GPU needed:
    the tier checks the built extension's numbers against the config again at load time)."""
    from megakernel.family import FIXED, kernel_defines

    h, c = shapes_header(), ModelConfig.qwen3_5_0_8b()
    assert {k: v for k, v in h.items() if k.startswith("MK_")} == kernel_defines(c)
    assert (h["DN_DK"], h["DN_DV"], h["CONV_K"], h["FA_HD"], h["FA_ROT"]) == (
        c.linear_key_head_dim, c.linear_value_head_dim, c.linear_conv_kernel_dim, c.head_dim, c.rotary_dim)
    assert {f: v for f, v, _ in FIXED if f != "rms_norm_eps"} == {
        "linear_key_head_dim": h["DN_DK"], "linear_value_head_dim": h["DN_DV"], "linear_conv_kernel_dim": h["CONV_K"],
        "head_dim": h["FA_HD"], "rotary_dim": h["FA_ROT"], "linear_num_key_heads": h["MK_DN_HK"]}
    assert all((t == "full_attention") == bool(h["MK_FULL_MASK"] >> i & 1) for i, t in enumerate(c.layer_types))


class FakeConstants:
    """The numbers the built extension would report for the 0.8B (kernel_shape_mismatch's view)."""
    D, INTER, VOCAB, FA_HQ, FA_HKV, FA_HD, FA_ROT, DN_HK, DN_HV, DN_DK, DN_DV, CONV_K = (
        1024, 3584, 248320, 8, 2, 256, 64, 16, 16, 128, 128, 4)
    TIED = True
    LAYER_TYPES = ["linear_attention"] * 3 + ["full_attention"]
    LAYER_TYPES = LAYER_TYPES * 6
    RMS_EPS = 1e-6


def test_kernel_shapes_checked_against_the_config():
    k = FakeConstants()
    assert kernel_shape_mismatch(ModelConfig.qwen3_5_0_8b(), k) == []
    k.D = 2048
    assert kernel_shape_mismatch(ModelConfig.qwen3_5_0_8b(), k) == ["hidden_size: config 1024, kernel 2048"]
    tiny = kernel_shape_mismatch(ModelConfig.tiny(), FakeConstants())
    assert any(m.startswith("layer_types:") for m in tiny) and any(m.startswith("hidden_size:") for m in tiny)


def test_no_rejected_schedule_variant_is_left():
    """The kernel holds what the ring, register and stream-only schedules run: no MKF_* flags,
    no L2-prefetch distance, no pacing, no partial barriers (megakernel/NOTES.md, "Measured, not kept")."""
    pattern = re.compile(r"MKF_|pf_dist|ring_inflight|TWO_PRODUCERS|GEN_BAR|SYNC_PUB|RING_TMA|bar_base")
    hits = []
    for folder in (CSRC, os.path.join(ROOT, "megakernel")):
        for name in sorted(os.listdir(folder)):
            if name.endswith((".cu", ".cuh", ".cpp", ".py")):
                for i, line in enumerate(open(os.path.join(folder, name)), 1):
                    if pattern.search(line):
                        hits.append(f"{name}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)


class StampLayout:
    """A two-layer kernel's timing layout (csrc/shapes.cuh) for the StepTimes tests (no GPU)."""
    NPHASES, NBARRIERS, NFA, NDN, UNIT_STAMPS, DN_STAMPS, NLAYER, PHASES_PER_LAYER = 11, 10, 1, 1, 4, 3, 2, 5
    LAYER_TYPES, FA_HKV, ATT_MAX_SPLIT = ("linear_attention", "full_attention"), 2, 8
    DN_STAMPS_AT = NPHASES + 3 + NFA * UNIT_STAMPS
    NTIMES = DN_STAMPS_AT + NDN * DN_STAMPS


def test_stamps_keep_their_nanoseconds_at_globaltimers_magnitude():
    """globaltimer's stamps are ~1.7e18 ns: StepTimes keeps the per-block ones as int64 and the anatomy subtracts
    before it turns them into floats, so a 1 ns offset and a 517 ns fence survive (as float64 they rounded to 256 ns,
    before session 36). No GPU: a fake tier hands phase_anatomy synthetic steps."""
    from megakernel.anatomy import phase_anatomy

    k, grid, base = StampLayout(), 3, 1_764_000_000_123_456_789
    words = [0] * (k.NTIMES + grid * (2 * k.NBARRIERS + k.NPHASES))
    words[0], words[k.NPHASES + 2] = base, base + 2000                       # start, embedding row normed
    for q in range(k.NBARRIERS):
        words[1 + q] = base + 10_000 * (q + 1)                               # block 0 leaves barrier q
    words[k.NPHASES + 1], words[k.NPHASES] = base + 110_000, base + 120_000
    words[k.NPHASES + 3:k.NPHASES + 7] = [base + 60_000 + i for i in range(1, 5)]
    words[k.DN_STAMPS_AT:k.DN_STAMPS_AT + 3] = [base + 10_000 + i for i in range(1, 4)]
    at_arr, at_full, at_made, _ = StepTimes.sections(k, grid)
    for b in range(grid):
        for q in range(k.NBARRIERS):
            arrival = (base if q == 0 else words[q]) + 1000 * (b + 1) + 1     # 1.001, 2.001, 3.001 µs into the phase
            words[at_arr + b * k.NBARRIERS + q] = arrival
            words[at_made + b * k.NBARRIERS + q] = arrival + 517               # its fence: 0.517 µs
    st = StepTimes.parse(words, k, grid)
    assert st.arrivals.dtype == torch.int64 and int(st.arrivals[2, 3]) - st.phase_start(3) == 3001
    assert int(st.arrived[1, 4] - st.arrivals[1, 4]) == 517

    class Tier:  # what phase_anatomy asks of a tier
        config = ModelConfig.tiny()
        grid, schedule, positions_per_split, device = 3, "ring", 32, torch.device("cpu")

        def __init__(self):
            self.k = k

        def new_state(self, batch, max_seq_len):
            return type("State", (), {"positions": [5] * batch})()

        def prefill(self, ids, state):
            return torch.zeros(ids.shape[0], 8)

        def decode_argmax(self, ids, state):
            return ids

        def decode_step_times(self, ids, state):
            return ids, st

    an = phase_anatomy(Tier(), prompt_len=4, steps=2)
    for kind in ("DeltaNet in-proj", "attention down"):
        r = an[kind]
        assert (r["first"], r["median"], r["last"]) == pytest.approx((1.001, 2.001, 3.001), abs=1e-9), (kind, r)
        assert r["fence"] == pytest.approx(0.517, abs=1e-9) and r["fence_mean"] == pytest.approx(0.517, abs=1e-9)
        assert r["exit"] == pytest.approx(10.0 - 3.001, abs=1e-9), (kind, r)  # (phase 0 starts at the launch: base)
    assert an["DeltaNet core"]["unit0 convolved"] == pytest.approx(0.001, abs=1e-9)


def test_step_times_parse_the_stamp_layout():
    """The timing mode's words (csrc/shapes.cuh) → StepTimes → µs per part (no GPU)."""
    k, grid = StampLayout(), 3
    words = [0] * (k.NTIMES + grid * (2 * k.NBARRIERS + k.NPHASES))
    words[0], words[k.NPHASES + 2] = 1000, 3000                            # start, embedding row normed
    for q in range(k.NBARRIERS):
        words[1 + q] = 3000 + 1000 * (q + 1)                                 # barrier exits
    words[k.NPHASES + 1], words[k.NPHASES] = 15000, 20000                    # lm_head start, argmax done
    words[k.NPHASES + 3:k.NPHASES + 7] = [5100, 5200, 5300, 5400]            # the attention unit's steps
    words[k.DN_STAMPS_AT:k.DN_STAMPS_AT + 3] = [4100, 4200, 4300]            # the DeltaNet unit's steps
    for b in range(grid):
        words[k.NTIMES + b * k.NBARRIERS] = 3500 + b
        full = k.NTIMES + grid * k.NBARRIERS + b * k.NPHASES                  # ring full by phase, ns:
        words[full + 0], words[full + 4] = 500 * (b + 1), 1500 * (b + 1)      # layers (phases 0 and 4)
        words[full + k.NPHASES - 1] = 7000                                    # the lm_head's (not the layers')
        words[k.NTIMES + grid * (k.NBARRIERS + k.NPHASES) + b * k.NBARRIERS + 1] = 4700 + b  # arrival at barrier 1 made
    words[-1] = 99                                                            # (the last word: block 2, barrier 9)
    st = StepTimes.parse(words, k, grid)
    assert st.phase_start(0) == 1000 and st.phase_start(3) == 6000 and st.arrivals.shape == (grid, k.NBARRIERS)
    assert st.unit_stamps == [[5100, 5200, 5300, 5400]] and st.dn_unit_stamps == [[4100, 4200, 4300]]
    assert st.arrivals[2, 0] == 3502 and st.ring_full_us.tolist() == [2.0, 4.0, 6.0]
    assert st.ring_full_by_phase.shape == (grid, k.NPHASES) and st.ring_full_by_phase[1].tolist() == [1.0, 0, 0, 0, 3.0] + [0] * 5 + [7.0]
    assert st.arrived.shape == (grid, k.NBARRIERS) and st.arrived[:, 1].tolist() == [4700, 4701, 4702]
    assert st.arrived[2, 9] == 99 and st.arrived.sum() == 4700 + 4701 + 4702 + 99
    assert st.parts_us(k.NLAYER, k.PHASES_PER_LAYER) == {"embed": 2.0, "layers.0": 5.0, "layers.1": 5.0, "norm": 2.0,
                                                         "lm_head": 5.0}


@needs_nvcc
def test_binding_compiles_against_the_installed_torch(tmp_path):
    """binding.cpp (the torch.library ops) and the other C++ sources (gemm_lt.cpp) against this torch's headers,
    syntax only (no GPU): a schema or signature error shows here, not first on the GPU machine."""
    import sysconfig

    from torch.utils.cpp_extension import include_paths

    gxx = shutil.which("g++")
    cuda = [d for d in cuda_include_dirs() if os.path.exists(os.path.join(d, "cuda_runtime.h"))]
    if gxx is None or not cuda:
        pytest.skip("g++ or the CUDA headers are missing")
    # the CPU build of torch ships c10/cuda's headers without this generated one
    (tmp_path / "c10" / "cuda" / "impl").mkdir(parents=True)
    (tmp_path / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").write_text("#pragma once\n")
    from megakernel.build import CPP_SOURCES

    for source in CPP_SOURCES:
        cmd = [gxx, "-std=c++17", "-fsyntax-only", f"-I{tmp_path}", *(f"-I{p}" for p in include_paths()),
               f"-I{sysconfig.get_paths()['include']}", f"-I{cuda[0]}", f"-I{CSRC}", "-DTORCH_EXTENSION_NAME=mk_check",
               os.path.join(CSRC, source)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        errors = [line for line in proc.stderr.splitlines() if "error" in line]
        assert proc.returncode == 0 and not errors, (source, "\n".join(errors[:20]) or proc.stderr[-3000:])


def test_binding_formats_its_refusals_without_iostreams():
    """binding.cpp refuses through MK_CHECK, which formats into a std::string: a TORCH_CHECK with
    arguments formats through an ostringstream that another library's static libstdc++ can
    interpose (FlashQLA's tvm_ffi: a refusal crashed the process, docs/results/2026-11-26-h100-s24)."""
    code = "\n".join(line.split("//")[0] for line in open(os.path.join(CSRC, "binding.cpp")))
    assert code.count("TORCH_CHECK") == 0 and "ostringstream" not in code and "c10::str(" not in code
    assert code.count("MK_CHECK(") > 30  # (every argument check of the ops)


# ---- GPU ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mk(model):
    return MegakernelTier(*model, device="cuda")


def one_step_trace(tier, prompt, token):
    state = tier.new_state(max_seq_len=max(512, prompt.shape[1] + 8))
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


_HAZARD_TRACES, _HAZARD_TIERS = {}, []
HAZARD_PROMPTS = {3: 8, 1100: 3}  # prompts a length for the logits' test (the layers' test: the first)


def hazard_traces(model, prompt_len, prompt=0):
    """(megakernel, fp32 reference, bf16 baseline name, its trace) of one decode step after a
    `prompt_len`-token prompt on reference.hazard_weights: prompt n has ids seed 5 + n and the step's
    token seed 6 + n (prompt 0 is the one these tests took alone up to session 51). The tiers are made
    once, each trace computed once."""
    if not _HAZARD_TIERS:
        from reference import ReferenceTier, hazard_weights

        config, weights = model[0], hazard_weights(model[1])
        _HAZARD_TIERS.extend([MegakernelTier(config, weights, device="cuda"),
                              ReferenceTier(config, weights, device="cuda", dtype=torch.float32),
                              *bf16_baseline_tier(config, weights)])
    key = prompt_len, prompt
    if key not in _HAZARD_TRACES:
        mk, ref32, name, base_tier = _HAZARD_TIERS
        prompt_ids, token = ids(prompt_len, 5 + prompt), ids(1, 6 + prompt)[0]
        _HAZARD_TRACES[key] = (one_step_trace(mk, prompt_ids, token), one_step_trace(ref32, prompt_ids, token), name,
                               one_step_trace(base_tier, prompt_ids, token))
    return _HAZARD_TRACES[key]


@gpu
@needs_gpu
@pytest.mark.parametrize("prompt_len", [3, 1100])
def test_every_layer_within_bf16_bounds_on_hazard_weights(model, prompt_len):
    """The cases random weights do not stress (issue 20, part 5): reference.hazard_weights (4
    embedding channels 32x larger, DeltaNet decays near 0 and near 1) after a 3- and a 1,100-token
    prompt: every layer and the final norm within 1.5x (+0.005) transformers' bf16 error against the
    fp32 reference on the same weights. (No 8% bound here: transformers' own error passes it at
    layer 18 after 1,100 tokens, measured 2026-11-25.)"""
    got, oracle, name, base = hazard_traces(model, prompt_len)
    keys = ["embed"] + [f"layers.{i}" for i in range(model[0].num_layers)] + ["norm"]
    assert_layers_within_bf16_bounds(got, oracle, base, name, keys, abs_bound=None)


def hazard_logits_report(errors, base_errors, base_name):
    """(passed, report) of the hazard logits' check over several prompts: the megakernel's median
    error within 1.5x (+0.005) of the baseline's median, and no prompt's beyond 1.5x (+0.005) the
    baseline's worst; the report lists every prompt's two errors."""
    med, base_med = statistics.median(errors), statistics.median(base_errors)
    report = [f"prompt {n}: megakernel {e:.2e}, {base_name} {b:.2e}" for n, (e, b) in enumerate(zip(errors, base_errors))]
    report.append(f"median: megakernel {med:.2e}, {base_name} {base_med:.2e}")
    ok = all(math.isfinite(e) for e in errors) and med <= 1.5 * base_med + 5e-3 and \
        max(errors) <= 1.5 * max(base_errors) + 5e-3
    return ok, "\n".join(report)


def test_hazard_logits_report_takes_the_median_and_the_worst():
    """The check's arithmetic (CPU): a prompt above the baseline's on one prompt passes where the
    medians hold; a median above 1.5x fails; one prompt far out fails; NaN fails."""
    base = [0.030, 0.024, 0.037, 0.033, 0.024, 0.032, 0.035, 0.058]  # (transformers on the CPU, s51)
    assert hazard_logits_report([0.050, 0.030, 0.030, 0.030, 0.030, 0.030, 0.030, 0.030], base, "hf")[0]
    assert not hazard_logits_report([0.060] * 8, base, "hf")[0]
    assert not hazard_logits_report([0.030] * 7 + [0.095], base, "hf")[0]
    assert not hazard_logits_report([0.030] * 7 + [float("nan")], base, "hf")[0]
    assert "prompt 7: megakernel 9.50e-02, hf 5.80e-02" in hazard_logits_report([0.030] * 7 + [0.095], base, "hf")[1]


@gpu
@needs_gpu
@pytest.mark.parametrize("prompt_len", [3, 1100])
def test_logits_within_bf16_bounds_on_hazard_weights(model, prompt_len):
    """The logits on the same cases against transformers' bf16 error, over several prompts (HAZARD_PROMPTS):
    the 4 large embedding channels dominate every logit (the lm_head is the tied embedding), so the
    logits' error is those channels' rounding in the residual stream, a walk of a few values whose
    outcome differs between two bf16 implementations and from prompt to prompt: on the CPU (session 51,
    docs/results/2026-12-07-s51-cpu-hazard) transformers' error after 3 tokens ranged 2.4e-02 to 5.8e-02
    over 8 prompts and the bf16 reference's was 0.66x to 1.44x it prompt by prompt, while the final
    norm's error stayed 3.7e-02 to 4.2e-02. One prompt's bound of 1.5x transformers' error was a coin's
    throw (the megakernel's 4.98e-02 against 2.93e-02 on prompt 0, s51 call 2), so the median over the
    prompts is bounded, and the worst. With a bf16 residual stream the megakernel's was 2.4x
    transformers' after 3 tokens (7.03e-02 against 2.93e-02, 2026-11-25)."""
    errors, base_errors, name = [], [], None
    for n in range(HAZARD_PROMPTS[prompt_len]):
        got, oracle, name, base = hazard_traces(model, prompt_len, n)
        assert got["logits"].shape == oracle["logits"].shape
        errors.append(rel(got["logits"], oracle["logits"]))
        base_errors.append(rel(base["logits"], oracle["logits"]))
    ok, report = hazard_logits_report(errors, base_errors, name)
    assert ok, report


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
    assert rel(a.k_cache[..., :24, :], b.k_cache[..., :24, :]) < 0.08
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
    with debug_poisoned(mk):
        l3 = mk.decode(token, s3, trace=t3)
        nxt = mk.decode_argmax(token, s4)
    assert torch.isfinite(l1).all()
    assert torch.equal(l1, l2) and torch.equal(l1, l3), "not bitwise repeatable (a race?) or read unwritten memory"
    for k in t1:
        assert torch.equal(t1[k], t2[k]) and torch.equal(t1[k], t3[k]), k
    assert torch.equal(s1.dn_state, s2.dn_state) and torch.equal(s1.dn_state, s3.dn_state)
    assert torch.equal(s1.k_cache[..., :s1.seq_len, :], s3.k_cache[..., :s3.seq_len, :])
    assert int(nxt) == int(l1.argmax()), "fused argmax differs from argmax of the logits"
    assert torch.equal(s4.dn_state, s1.dn_state)


@gpu
@needs_gpu
@pytest.mark.parametrize("grid", [None, 96])
def test_int8_argmax_is_the_bf16_argmax(variant, grid):
    """Batch 1's greedy argmax from the lm_head's int8 copy (megakernel/lm_bound.py, the default where
    built) gives the bf16 rows' argmax: 96 greedy steps one launch a step and in one many-token launch,
    against lm_argmax="bf16" (every row), on the full grid and one of 96 blocks (odd slices, the last one
    too: its last piece's second row is the pad row); each step's id is the argmax of that step's logits
    (which read every bf16 row). Then with the copy's scales negated and its bounds zero the argmax changes:
    the int8 pass is what ran."""
    mk = variant
    if mk.lm_q is None or mk.schedule != "ring":
        pytest.skip("this build has no int8 lm_head pass (hidden size 1024, the ring schedule)")
    mk.grid = grid or mk.max_grid
    prompt, token = ids(24, 31), ids(1, 32)[0]
    s0 = mk.new_state(max_seq_len=160)
    mk.prefill(prompt, s0)
    runs = {}
    for mode in ("int8", "bf16"):
        mk.lm_argmax = mode
        st, t, got = mk.clone_state(s0), token, []
        for _ in range(96):
            t = mk.decode_argmax(t, st)
            got.append(int(t))
        runs[mode] = got
        runs[mode + " one launch"] = mk.decode_greedy(token, mk.clone_state(s0), 96).flatten().tolist()
    assert runs["int8"] == runs["bf16"] == runs["int8 one launch"] == runs["bf16 one launch"]
    mk.lm_argmax = "int8"
    st, t = mk.clone_state(s0), token
    for step in range(8):
        logits = mk.decode(t, mk.clone_state(st))  # (logits asked for: every bf16 row)
        t = mk.decode_argmax(t, st)
        assert int(t) == int(logits.argmax()), step
    saved = mk.lm_qs.clone()
    try:
        mk.lm_qs[:, 0].neg_()
        mk.lm_qs[:, 1].zero_()
        assert int(mk.decode_argmax(token, mk.clone_state(s0))) != runs["int8"][0]
    finally:
        mk.lm_qs.copy_(saved)


@gpu
@needs_gpu
def test_int8_argmax_when_no_row_can_be_ruled_out(model):
    """Every lm_head row equal (the tied embedding's rows all one vector) but two, one element apart in
    either direction, in the middle of a block's slice: every other row ties, no bound rules any out, each
    warp's candidates overflow and it computes all its rows exactly; the argmax is one of the two, as the
    bf16 rows' say, on NaN-poisoned buffers too."""
    config, weights = model
    same = dict(weights)
    emb = weights["model.embed_tokens.weight"][1234].expand_as(weights["model.embed_tokens.weight"]).contiguous()
    for row, d in ((100_005, 0.5), (100_013, -0.5)):
        emb[row, 7] += d
    same["model.embed_tokens.weight"] = emb
    if "lm_head.weight" in same:
        same["lm_head.weight"] = emb
    tier = MegakernelTier(config, same, device="cuda")
    if tier.lm_q is None:
        pytest.skip("this build has no int8 lm_head pass")
    state = tier.new_state(max_seq_len=32)
    tier.prefill(ids(5, 33), state)
    with debug_poisoned(tier):
        got = tier.decode_argmax(ids(1, 34)[0], tier.clone_state(state))
    tier.lm_argmax = "bf16"
    want = int(tier.decode_argmax(ids(1, 34)[0], state))
    assert int(got) == want and want in (100_005, 100_013)


@pytest.fixture
def variant(mk):
    """Restores the tier's variant attributes (grid, schedule, ring slots, positions per split) after a test."""
    with variant_restored(mk):
        yield mk


def schedules(mk):
    return ["ring", "register"] if mk.max_ring_slots else ["register"]


@gpu
@needs_gpu
def test_any_grid_and_schedule_gives_the_same_bits(variant):
    """grid sizes × {ring, register}: one block per SM, fewer blocks than units (97: every phase
    loops; 40: blocks with several attention units), the ring at its fewest and an odd number of
    slots; every one computes the default's bits, logits and state."""
    mk = variant
    prompt, token = ids(40, 8), ids(1, 9)[0]
    s0 = mk.new_state(max_seq_len=64)
    mk.prefill(prompt, s0)
    ref_state = mk.clone_state(s0)
    full = mk.decode(token, ref_state)
    for schedule in schedules(mk):
        for grid in (mk.max_grid, 97, 40):
            mk.schedule, mk.grid = schedule, grid
            st = mk.clone_state(s0)
            assert torch.equal(mk.decode(token, st), full), (schedule, grid)
            assert torch.equal(st.dn_state, ref_state.dn_state) and torch.equal(st.k_cache, ref_state.k_cache), (schedule, grid)
    if mk.max_ring_slots:
        mk.schedule, mk.grid = "ring", mk.max_grid
        for slots in {mk.k.RING_MIN_SLOTS, mk.k.RING_MIN_SLOTS + 1, mk.max_ring_slots}:
            mk.ring_slots = slots
            assert torch.equal(mk.decode(token, mk.clone_state(s0)), full), slots


@gpu
@needs_gpu
@pytest.mark.parametrize("per_split,prompt_len", [(2, 40), (6, 40), (32, 40), (64, 300), (1000, 300)])
def test_split_k_paths_give_the_same_bits_on_any_grid(variant, per_split, prompt_len):
    """41 positions over 21 splits (past OUT_MERGE_MAX: the last unit of a kv head merges), 7 and 2
    splits (the out-proj merges the partials); 301 positions over 5 splits (4 ring chunks of past
    K/V a unit: one item) and in one split (19 chunks: 5 items, the last chunk partial), on both
    schedules (the ring's block's first unit reads its K/V from the ring, the register schedule
    from global memory) and a grid smaller than the units: each path is deterministic whatever the
    grid (the merges run in a fixed order) and both read the same K/V."""
    mk = variant
    prompt, token = ids(prompt_len, 16), ids(1, 17)[0]
    s0 = mk.new_state(max_seq_len=prompt_len + 24)
    mk.prefill(prompt, s0)
    mk.positions_per_split = per_split
    ref = mk.clone_state(s0)
    full = mk.decode(token, ref)
    for schedule in schedules(mk):
        for grid in (mk.max_grid, 40):
            mk.schedule, mk.grid = schedule, grid
            st = mk.clone_state(s0)
            assert torch.equal(mk.decode(token, st), full), (schedule, grid)
            assert torch.equal(st.k_cache, ref.k_cache) and torch.equal(st.dn_state, ref.dn_state), (schedule, grid)


def twin_states(mk, prompt, max_seq_len):
    """Two states, each prefilled with the same prompt."""
    states = mk.new_state(max_seq_len=max_seq_len), mk.new_state(max_seq_len=max_seq_len)
    for st in states:
        mk.prefill(prompt, st)
    return states


@gpu
@needs_gpu
def test_schedules_alternate_over_many_steps(variant):
    """Consecutive launches that alternate the schedule and the grid on one tier (the sync words'
    barrier count and epoch carry over from launch to launch; the ring starts empty in each), a
    few positions on each side of an attention split change, and launches stopped after a phase
    in between (they end with the next launch's epoch too): the same bits as the default's."""
    mk = variant
    forced = ids(12, 13)[0]
    a, b = twin_states(mk, ids(28, 12), max_seq_len=64)
    default = mk.schedule
    others = [(s, g) for s in schedules(mk) for g in (mk.max_grid, 57)]
    for t in range(12):
        mk.schedule, mk.grid = default, mk.max_grid
        la = mk.decode(forced[t:t + 1], a)
        mk.schedule, mk.grid = others[t % len(others)]
        if t % 3 == 1:  # a debug launch stopped after a phase, on a copy
            out = torch.empty(1, dtype=torch.int64, device=mk.device)
            mk._launch(mk.clone_state(b), forced[t:t + 1].to(mk.device), out, stop_after=7 + t)
        lb = mk.decode(forced[t:t + 1], b)
        assert torch.equal(la, lb), (t, mk.schedule, mk.grid)
    assert torch.equal(a.dn_state, b.dn_state) and torch.equal(a.k_cache, b.k_cache)


@gpu
@needs_gpu
def test_stream_only_launch_leaves_the_next_decode_exact(variant):
    """The measurement schedule streams the weights and computes nothing: it hands the input id
    back and keeps the barrier count's epoch, so the real decodes after it (and their state) equal
    those of a state that never saw it."""
    mk = variant
    if not mk.max_ring_slots:
        pytest.skip("the ring does not fit this GPU's shared memory (the mode streams through the ring)")
    token = ids(1, 15)[0]
    a, b = twin_states(mk, ids(20, 14), max_seq_len=32)
    mk.schedule = "stream-only"
    scratch = mk.clone_state(b)
    out = mk.decode_argmax(token.to(mk.device), scratch)
    assert int(out) == int(token)  # the input id, untouched
    assert torch.equal(scratch.dn_state, b.dn_state) and torch.equal(scratch.k_cache, b.k_cache)  # nothing written
    mk.schedule = "ring"
    for t in range(3):
        la, lb = mk.decode(token, a), mk.decode(token, b)
        assert torch.equal(la, lb), t


@gpu
@needs_gpu
def test_launches_stopped_after_any_phase_end_in_every_schedule(variant):
    """Launches stopped after each phase of layers 0-4 (DeltaNet and the first attention layer), four
    times each, back to back, in every schedule, the stream-only one too: every launch ends (the ring
    schedule's poller warps stop on every way out of the compute warps' launch; a poller that fell
    behind by two of its block's arrivals, as after a DeltaNet core, which streams no chunks, must not
    wait for a third: grid_sync.cuh poll_barriers), and the barrier count they leave is right: a
    decode after them equals the same decode made before them on a twin state. (A hang here ends at
    the caller's time limit.)"""
    mk = variant
    token = ids(1, 15)[0]
    a, b = twin_states(mk, ids(20, 14), max_seq_len=32)
    before = mk.decode(token, a)  # (the sync words as no stopped launch left them)
    out = torch.empty(1, dtype=torch.int64, device=mk.device)
    for schedule in (["ring", "stream-only", "register"] if mk.max_ring_slots else ["register"]):
        mk.schedule = schedule
        scratch = mk.clone_state(b)
        for stop in range(5 * mk.k.PHASES_PER_LAYER):
            for _ in range(4):
                mk._launch(scratch, token.to(mk.device).view(1), out, stop_after=stop)
        torch.cuda.synchronize()
    mk.schedule = schedules(mk)[0]
    assert torch.equal(before, mk.decode(token, b))


@gpu
@needs_gpu
def test_anatomy_step_time_of_both_schedules(variant):
    """`python -m megakernel anatomy`'s step line: µs a back-to-back launch by CUDA events, in the
    ring schedule and the stream-only one, which streams the same bytes and computes nothing, so it
    is the faster of the two."""
    from megakernel.anatomy import step_time

    mk = variant
    if not mk.max_ring_slots:
        pytest.skip("the ring does not fit this GPU's shared memory (the mode streams through the ring)")
    ring = step_time(mk, steps=8, prompt_len=20)
    mk.schedule = "stream-only"
    stream = step_time(mk, steps=8, prompt_len=20)
    assert 0 < stream < ring < 1e5, (stream, ring)


@gpu
@needs_gpu
def test_bad_variants_are_clear_errors_and_launch_nothing(variant):
    mk = variant
    state = mk.new_state(max_seq_len=32)
    mk.prefill(ids(8, 18), state)
    before = mk.clone_state(state)
    batch_slots0 = mk.batch_ring_slots
    for attr, value, msg in (("grid", 0, "grid=0"), ("grid", mk.max_grid + 1, "expected an int in"),
                             ("schedule", "tma", "schedule='tma'; expected one of"),
                             ("ring_slots", 3, "ring_slots=3; expected"),
                             ("batch_ring_slots", mk.max_ring_slots + 1, f"batch_ring_slots={mk.max_ring_slots + 1}; expected"),
                             ("positions_per_split", 0, "positions_per_split=0")):
        setattr(mk, attr, value)
        with pytest.raises(TierInputError, match=msg):
            mk.decode(ids(1, 19)[0], state)
        mk.grid, mk.schedule, mk.ring_slots, mk.batch_ring_slots, mk.positions_per_split = (
            mk.max_grid, schedules(mk)[0], mk.max_ring_slots, batch_slots0, tier_mod.ATT_POSITIONS_PER_SPLIT)
    assert state.seq_len == before.seq_len and torch.equal(state.dn_state, before.dn_state)


@gpu
@needs_gpu
def test_the_clock(mk):
    """Timing mode: µs per part, every block's barrier arrivals, every producer's wait for a free slot."""
    state = mk.new_state(max_seq_len=32)
    mk.prefill(ids(8, 16), state)
    nxt, st = mk.decode_step_times(ids(1, 17)[0], state)
    assert state.seq_len == 9 and nxt.shape == (1,)
    parts = st.parts_us(mk.k.NLAYER, mk.k.PHASES_PER_LAYER)
    assert list(parts) == ["embed"] + [f"layers.{i}" for i in range(24)] + ["norm", "lm_head"]
    assert all(v >= 0 for v in parts.values()) and sum(parts.values()) > 0
    assert st.arrivals.shape == (mk.grid, mk.k.NBARRIERS) and (st.arrivals > 0).all()
    assert (st.arrived >= st.arrivals).all()  # (an arrival is made after it starts: its release's fence between)
    assert float((st.arrived - st.arrivals).max()) < (st.argmax_done - st.start)
    full, by_phase = st.ring_full_us, st.ring_full_by_phase
    assert full.shape == (mk.grid,) and torch.isfinite(full).all() and (full >= 0).all()
    assert float(full.max()) < (st.argmax_done - st.start) / 1000.0  # (a wait cannot outlast the launch)
    assert by_phase.shape == (mk.grid, mk.k.NPHASES) and (by_phase >= 0).all()
    dn_cores = [mk.k.PHASES_PER_LAYER * l + 1 for l, t in enumerate(mk.k.LAYER_TYPES) if t != "full_attention"]
    assert (by_phase[:, dn_cores] == 0).all()  # (a DeltaNet core has no ring chunks: no slot can be held by one)
    assert float(by_phase.sum()) > 0 and float(by_phase.sum(1).max()) < (st.argmax_done - st.start) / 1000.0
    if mk.schedule == "ring" and torch.cuda.get_device_capability(mk.device)[0] >= 9:  # (dn_stamp: Hopper's kernels)
        # block 0's first DeltaNet unit: in order, inside its core phase, before the arrival made
        for q, stamps in zip(dn_cores, st.dn_unit_stamps):  # (the arrival's own stamp is another warp's, unordered)
            assert st.phase_start(q) <= stamps[0] <= stamps[1] <= stamps[2] <= st.arrived[0, q], (q, stamps)


@gpu
@needs_gpu
def test_timed_steps_back_to_back(mk):
    """decode_steps_timed: the same ids as untimed decode_argmax steps, the state advanced, and the
    stamps in launch order (each step starts after the previous one's argmax)."""
    a, b = mk.new_state(max_seq_len=40), mk.new_state(max_seq_len=40)
    mk.prefill(ids(8, 16), a)
    mk.prefill(ids(8, 16), b)
    first = ids(1, 17)[0]
    last, steps = mk.decode_steps_timed(first, a, 6)
    want = first
    for _ in range(6):
        want = mk.decode_argmax(want, b)
    assert torch.equal(last, want) and a.seq_len == b.seq_len == 14 and len(steps) == 6
    for prev, st in zip(steps, steps[1:]):
        assert prev.start < prev.argmax_done <= st.start < st.argmax_done
    with pytest.raises(TierInputError, match=r"steps=0; expected an int >= 1"):
        mk.decode_steps_timed(last, a, 0)
    with pytest.raises(TierInputError, match=r"27 more token\(s\) after 14 exceed the state's max_seq_len=40"):
        mk.decode_steps_timed(last, a, 27)  # checked before the first launch: nothing ran
    assert a.seq_len == 14


@gpu
@needs_gpu
def test_every_phase_against_the_reference_intermediates(variant):
    """The kernel stopped after each phase of layers 0 and 3 (workspace NaN-poisoned), every buffer
    it wrote against the bf16 reference's own intermediates (megakernel/phases.py), both schedules."""
    from megakernel.phases import phase_check

    mk = variant
    prompt, token = ids(16, 20), ids(1, 21)[0]
    state = mk.new_state(max_seq_len=32)
    mk.prefill(prompt, state)
    for schedule in schedules(mk):
        mk.schedule = schedule
        rows = phase_check(mk, state, token)
        assert len(rows) >= 15
        bad = [(name, e) for name, e in rows if not e < 0.05]
        assert not bad, (schedule, rows)


def state_tensors(state):
    return {k: v.clone() for k, v in vars(state).items() if isinstance(v, torch.Tensor)}


@gpu
@needs_gpu
@pytest.mark.parametrize("bad_id", [248320, 248320 + 5_000_000, -1])
def test_an_id_out_of_range_is_refused_on_the_device(variant, bad_id):
    """decode_argmax does not check the ids on the host (that would sync): the kernel refuses the
    step before it writes anything, and every step queued after it on that state; the next check
    raises a TierInputError naming the id and rolls the state back; then the same state decodes
    as a copy that never saw the bad id does. On both schedules, and the stream-only one (whose
    producer must stop too, or the launch hangs)."""
    mk = variant
    base = mk.new_state(max_seq_len=64)
    mk.prefill(ids(20, 30), base)
    token = ids(1, 31)[0]
    for schedule in schedules(mk) + (["stream-only"] if mk.max_ring_slots else []):
        mk.schedule = schedule
        state, twin = mk.clone_state(base), mk.clone_state(base)
        before = state_tensors(state)
        nxt = mk.decode_argmax(torch.tensor([bad_id], device=mk.device), state)
        for _ in range(2):  # fed back, as a generation loop does
            nxt = mk.decode_argmax(nxt, state)
        assert state.seq_len == base.seq_len + 3 and state.unchecked == 3
        with pytest.raises(TierInputError, match=rf"token id {bad_id} \(batch row 0\) fed to decode_argmax at "
                                                 rf"position {base.seq_len} is outside the vocabulary \[0, 248320\); "
                                                 r"that step and the 2 step\(s\) queued after it did not run"):
            mk.check(state)
        assert int(nxt) == bad_id  # a refused step hands its input id back
        assert state.seq_len == base.seq_len and state.unchecked == 0
        for name, value in state_tensors(state).items():
            assert torch.equal(value, before[name]), (schedule, name)
        mk.check(state)  # cleared: nothing more to raise
        if schedule == "stream-only":
            continue
        assert torch.equal(mk.decode(token, state), mk.decode(token, twin)), schedule
        a, b = mk.decode_argmax(token.to(mk.device), state), mk.decode_argmax(token.to(mk.device), twin)
        assert torch.equal(a, b) and torch.equal(state.dn_state, twin.dn_state), schedule
        mk.check(state)


@gpu
@needs_gpu
def test_a_pending_refusal_stops_the_next_checked_call(mk):
    """prefill, decode and clone_state check the state first: a refused decode_argmax is raised by
    whichever comes next, and the call itself does not run."""
    base = mk.new_state(max_seq_len=64)
    mk.prefill(ids(10, 32), base)
    for call in (lambda st: mk.decode(ids(1, 33)[0], st), lambda st: mk.prefill(ids(3, 34), st), mk.clone_state):
        state = mk.clone_state(base)
        mk.decode_argmax(torch.tensor([10**9], device=mk.device), state)
        with pytest.raises(TierInputError, match="token id 1000000000"):
            call(state)
        assert state.seq_len == base.seq_len
        assert torch.equal(state.k_cache, base.k_cache) and torch.equal(state.conv_ring, base.conv_ring)


@gpu
@needs_gpu
def test_batch_above_max_batch_is_refused(mk):
    with pytest.raises(TierInputError, match=r"decodes 1 to 8 sequences per state"):
        mk.new_state(batch_size=mk.k.MAX_BATCH + 1)


PROBE_EXTENSION = r"""
#include <torch/extension.h>
void fail(const at::Tensor& t) { TORCH_CHECK(t.dim() == 99, "probe: shape ", t.sizes()); }
TORCH_LIBRARY(qwen35_probe, m) { m.def("fail(Tensor t) -> ()"); }
TORCH_LIBRARY_IMPL(qwen35_probe, CUDA, m) { m.impl("fail", &fail); }
"""


def child_raises(code: str) -> tuple[bool, str]:
    """Runs `code` in a child Python (from the repo root): whether it printed RAISED, and what it said."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    return "RAISED" in done.stdout, f"exit {done.returncode}: {done.stdout[-1000:]}{done.stderr[-2000:]}"


@gpu
@needs_gpu
def test_an_op_given_a_wrong_shape_raises_naming_it():
    """The binding's checks raise a RuntimeError that names the tensor and its shape (in a child
    process: an exception lost on its way out of the extension ends the process). Skipped where a
    minimal extension built the same way loses its exception too: that is the machine's torch and
    compiler, not our binding (the lent H100s until MK_CHECK stopped streaming: SIGSEGV in
    docs/results/2026-11-26-h100-s18; passed there since, docs/results/2026-11-26-h100-s25 call 3)."""
    ours = ("import torch, megakernel.ops as o\n"
            "o.load(torch.device('cuda'))\n"
            "bf = dict(dtype=torch.bfloat16, device='cuda')\n"
            "try:\n"
            "    o.op('prefill_silu_mul')(torch.zeros(4, 100, **bf), torch.zeros(4, 3584, **bf))\n"
            "except RuntimeError as e:\n"
            "    print('RAISED', str(e).splitlines()[0])\n")
    raised, said = child_raises(ours)
    if not raised:
        probe = ("import torch\nfrom torch.utils.cpp_extension import load_inline\n"
                 f"load_inline('qwen35_probe_ext', cpp_sources={PROBE_EXTENSION!r}, functions=[], extra_cflags=['-O3'])\n"
                 "try:\n    torch.ops.qwen35_probe.fail(torch.zeros(1, device='cuda'))\n"
                 "except RuntimeError as e:\n    print('RAISED', e)\n")
        if not child_raises(probe)[0]:
            pytest.skip("this machine loses C++ exceptions thrown inside JIT-built extensions: a minimal "
                        f"load_inline op does too (ours: {said.splitlines()[0] if said else ''})")
    assert raised, said
    assert "qwen35_megakernel.prefill_silu_mul: gate_up is not a [T, 7168] buffer ([4, 100])" in said, said


@gpu
@needs_gpu
def test_opcheck_every_op(mk):
    """torch.library.opcheck of the decode op and of every prefill op, with the arguments a real
    decode step and a real (eager) prefill pass them."""
    from megakernel import ops
    from megakernel.prefill import PrefillPlan
    from helpers import first_candidate_gemms

    state = mk.new_state(max_seq_len=64)
    mk.prefill(ids(20, 22), state)
    token = ids(1, 23)[0].to(mk.device)
    out = torch.empty(1, dtype=torch.int64, device=mk.device)
    logits = torch.empty(1, mk.k.VOCAB, dtype=torch.float32, device=mk.device)
    torch.library.opcheck(ops.op("decode"), mk.decode_args(mk.clone_state(state), token, out, logits))
    if mk.fast_prefill is None:
        pytest.skip(f"the prefill ops: {mk.prefill_note}")
    checked = set()  # (op, which arguments were None)

    def checking(name, real):
        def call(*args):
            key = (name, tuple(a is None for a in args))
            if key not in checked:
                # (bind's id_range must be pinned host memory, which opcheck's copies of the arguments are not: its
                # schema is checked without it, the call itself made with it)
                torch.library.opcheck(real, args[:2] + (None,) + args[3:] if name == "prefill_bind" else args)
                checked.add(key)
            return real(*args)
        return call

    # a prompt continuing the sequence: its earlier keys in one piece (flash + attn_gate) and in
    # several (attn_merge_gate: 1,100 positions); 9 rows (split-K GEMMs) and 320 (the norms folded:
    # silu_mul and attn_prep given the residual stream); a fresh prompt of 320 (folded: its last layer's
    # last row by attn_last_row, gemv_add_row and gate_up_swiglu_row)
    for max_seq, pieces, T, fresh in ((64, 1, 9, False), (1100, 3, 9, False), (1100, 3, 320, False), (320, 1, 320, True)):
        start = mk.new_state(max_seq_len=max_seq)
        if not fresh:
            mk.prefill(ids(20, 22), start)
        plan = PrefillPlan(mk, T, max_seq, fresh=fresh, gemms=first_candidate_gemms(mk))  # (prefill_gemm_lt checked too)
        assert plan.pieces == pieces and (plan.folded is not None) == (plan.split_k == 1) and (T < 320 or plan.folded)
        plan.op = {name: checking(name, real) for name, real in plan.op.items()}
        plan.gemm.op = checking("prefill_gemm_lt", ops.op("prefill_gemm_lt", mk.ops_namespace))
        target = mk.clone_state(start)  # (alive while the plan writes through its pointers)
        plan.bind(ids(T, 24).to(mk.device), target)
        plan.run()
        torch.cuda.synchronize()
    assert {name for name, _ in checked} == {n for n in ops.OP_NAMES if n.startswith("prefill_")}
    x_at = {"prefill_silu_mul": 2, "prefill_attn_prep": 9}  # (where the residual stream goes: the folded norms)
    folded = {name for name, nones in checked if name in x_at and len(nones) > x_at[name] and not nones[x_at[name]]}
    assert folded == set(x_at), checked


@gpu
@needs_gpu
def test_torch_compile_fullgraph_around_the_decode_op(mk):
    """A function that calls the decode op compiles with fullgraph=True (the op's schema and fake
    implementation are all torch.compile needs) and gives the eager call's bits."""
    from megakernel import ops

    state = mk.new_state(max_seq_len=64)
    mk.prefill(ids(20, 25), state)
    token = ids(1, 26)[0].to(mk.device)
    decode = ops.op("decode")

    def step(st, token):
        out = torch.empty(1, dtype=torch.int64, device=token.device)
        logits = torch.empty(1, mk.k.VOCAB, dtype=torch.float32, device=token.device)
        decode(*mk.decode_args(st, token, out, logits))
        return logits, out

    eager_state, compiled_state = mk.clone_state(state), mk.clone_state(state)
    le, oe = step(eager_state, token)
    lc, oc = torch.compile(step, fullgraph=True)(compiled_state, token)
    assert torch.equal(le, lc) and torch.equal(oe, oc)
    assert torch.equal(eager_state.dn_state, compiled_state.dn_state)
    assert torch.equal(eager_state.k_cache, compiled_state.k_cache)


@gpu
@needs_gpu
# racecheck does not follow the ring's mbarrier hand-offs between the producer's asynchronous copies
# and the compute warps' reads: it reports every read of a slot as a race (megakernel/NOTES.md, "v8").
# The ring schedule (the default on sm_90) gets memcheck and synccheck; racecheck covers the register
# schedule, whose shared memory is ordered by bar.sync alone.
# Every run includes a step the device-side check refuses (sanitize.py). initcheck: no read of memory
# that nothing wrote (the workspace, the state, the fault words, the outputs).
# A batch of 8 rows at different positions (the ring schedule; issue 19) gets memcheck and initcheck.
@pytest.mark.parametrize("tool,schedule,batch", [("memcheck", "ring", 1), ("synccheck", "ring", 1), ("initcheck", "ring", 1),
                                                 ("memcheck", "register", 1), ("synccheck", "register", 1),
                                                 ("initcheck", "register", 1), ("racecheck", "register", 1),
                                                 ("memcheck", "ring", 8), ("initcheck", "ring", 8)])
def test_compute_sanitizer_clean(tool, schedule, batch, tmp_path):
    exe = shutil.which("compute-sanitizer") or (
        os.path.join(os.path.dirname(nvcc_path()), "compute-sanitizer") if nvcc_path() else None)
    if not exe or not os.path.exists(exe):
        pytest.skip("compute-sanitizer is not installed")
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1", CUDA_LAUNCH_BLOCKING="1")
    # synccheck must be told how many mbarriers to track: its automatic count overflows on the ring's and
    # the instrumented launch fails. The ring's: 2 x RING_MAX_SLOTS in each block, one block per SM, and
    # the grid barrier's pollers' 2 (grid_sync.cuh).
    # (1024 ran clean on 2026-11-23 and 25 and overflowed on 2026-11-26 at 7b41f40 and after it; 4,224
    # = 132 x 32 ran clean: docs/results/2026-11-26-h100-s21, calls 5-7)
    if tool == "synccheck":
        from megakernel.ops import load as load_megakernel

        _, k = load_megakernel("cuda")
        per_block = 2 * k.RING_MAX_SLOTS + 2
        track = ["--num-cuda-barriers", str(torch.cuda.get_device_properties(0).multi_processor_count * per_block)]
    else:
        track = []
    # initcheck tracks what every kernel writes: with a kernel filter the weights' initialising kernels
    # go untracked and every read of them is reported (run 3 of docs/results/2026-11-24-h100-device-checks)
    only = [] if tool == "initcheck" else ["--kernel-name", "kns=mk_decode_kernel"]
    cmd = [exe, "--tool", tool, *track, *only, "--error-exitcode", "3",
           sys.executable, "-m", "megakernel", "sanitize-run", "--steps", "2", "--schedule", schedule, "--batch", str(batch)]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=150)
        out, status = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as e:  # e.g. a grid barrier that never opens under instrumentation
        text = [x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr)]
        out, status = "TIMEOUT after 150 s\n" + "".join(text), -1
    # every run's whole report, appended to one file ($OUT when set)
    log_dir = os.environ.get("OUT") or str(tmp_path)
    with open(os.path.join(log_dir, "sanitizers.log"), "a") as f:
        f.write(f"\n##### {tool} / {schedule} schedule / batch {batch}: exit status {status}\n{' '.join(cmd)}\n{out}")
    # the sanitizer's own report lines ("=========") first: the hazard or bad access is described there
    report = [line for line in out.splitlines() if line.startswith("=========")]
    # memcheck and synccheck end with "ERROR SUMMARY: 0 errors", racecheck with "RACECHECK SUMMARY: n hazards displayed
    # (0 errors, n warnings)" (warnings: same-value writes, benign)
    clean = re.search(r"ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: \d+ hazards? displayed \(0 errors", out)
    assert status == 0 and clean, "\n".join(report[:80]) or out[-4000:]
    assert "refused step: token id" in out, out[-4000:]  # the device-side check's path ran and was reported


def test_anatomy_of_a_stream_only_launch_has_no_phase_rows():
    """The stream-only schedule stamps no phases: the table says so instead of printing the unset
    stamps' differences, and still reports the ring's full time."""
    from megakernel.anatomy import anatomy_lines

    lines = anatomy_lines({"ring_full_us": {"min": 23.6, "median": 24.0, "max": 24.3}})
    assert "no phase stamps" in lines[0] and len(lines) == 2
    assert "median 24.0" in lines[1]
    full = anatomy_lines({"DeltaNet in-proj": {"first": 1.0, "median": 2.0, "last": 3.0, "exit": 1.5, "fence": 0.75,
                                               "fence_mean": 0.25, "stall": 4.125, "unit_last": 0.5},
                          "ring_full_us": {"min": 1.0, "median": 2.0, "max": 3.0, "lm_head": 0.5}})
    assert "fence" in full[0] and "stall" in full[0] and "DeltaNet in-proj" in full[1] and "50%" in full[1]
    assert full[1].split()[-5:-1] == ["1.50", "0.75", "0.25", "4.12"]  # exit, the last block's fence, the mean fence, stall
    assert "lm_head's chunks 0.5" in full[-1]
    dn = anatomy_lines({"DeltaNet core": {"first": 0.0, "median": 1.0, "last": 2.0, "exit": 1.0, "fence": 0.5, "fence_mean": 0.5,
                                          "stall": 0.0, "unit_last": 0.0, "unit0 convolved": 1.25, "unit0 rows updated": 2.5,
                                          "unit0 done": 2.75},
                        "ring_full_us": {"min": 1.0, "median": 2.0, "max": 3.0, "lm_head": 0.5}})
    assert "  DeltaNet core, block 0's unit: unit0 convolved 1.25, unit0 rows updated 2.50, unit0 done 2.75" in dn


def test_variant_notes_name_the_ring_slots_a_batch_runs_with():
    """`compare ab` prints tier.variant_notes(B): ring slots asked above what fits beside B rows are clamped by
    ring_slots_for, and the note says so (no GPU: the tier's attributes set by hand)."""
    t = object.__new__(tier_mod.MegakernelTier)
    t.schedule, t.ring_slots, t.ring_slots_by_batch, t.max_batch = "ring", 12, [12, 12, 12, 12, 12, 12, 11, 11], 8
    t.batch_ring_slots = 12  # (no batch cap: what fits alone)
    assert t.variant_notes(1) == [] and t.variant_notes(6) == []
    assert t.variant_notes(8) == ["ring_slots=12 runs with 11 at batch 8 (the most that fit beside 8 rows' shared memory)"]
    t.ring_slots = 11
    assert t.variant_notes(8) == []
    # the default batch cap (tier_mod.BATCH_RING_SLOTS from BATCH_RING_SLOTS_FROM rows on): batch 1 keeps its 12
    t.ring_slots, t.batch_ring_slots = 12, tier_mod.BATCH_RING_SLOTS
    first, cap = tier_mod.BATCH_RING_SLOTS_FROM, tier_mod.BATCH_RING_SLOTS
    assert t.ring_slots_for(1) == 12 and t.ring_slots_for(first - 1) == 12
    assert [t.ring_slots_for(b) for b in range(first, 9)] == [min(cap, t.ring_slots_by_batch[b - 1]) for b in range(first, 9)]
    assert t.variant_notes(8) == [f"ring_slots=12 runs with {cap} at batch 8 (batch_ring_slots={cap} from {first} rows on)"]
    t.ring_slots = 9  # (below the cap: what was asked)
    assert t.ring_slots_for(8) == 9 and t.variant_notes(8) == []
    t.schedule = "register"
    assert t.variant_notes(8) == []
