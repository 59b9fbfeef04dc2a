"""`python -m compare delta-rule` and megakernel/prefill_delta_rule.py without a GPU: the rules'
refusals name why, the CLI's input errors are one line each, and the table shows every row,
a rule that could not run included (with its reason), never a silent gap."""

from __future__ import annotations

import math
import types

import pytest
import torch

from compare.__main__ import main
from compare.delta_rule import inputs, padded, reference, relative_error, render
from megakernel import prefill_delta_rule
from reference import ModelConfig
from reference.delta_rule import gated_delta_rule_recurrent

CONFIG = ModelConfig.qwen3_5_0_8b()


def test_rules_refuse_with_the_reason_on_a_machine_that_cannot_run_them():
    assert prefill_delta_rule.unavailable_reason("nope", "cpu").startswith("unknown delta rule 'nope'")
    for name in prefill_delta_rule.DELTA_RULES:
        why = prefill_delta_rule.unavailable_reason(name, "cpu")
        assert why and "CUDA GPU" in why
        with pytest.raises(ValueError, match=f"delta rule '{name}' cannot run here"):
            prefill_delta_rule.make(name, 64, 16, "cpu")
    assert prefill_delta_rule.default("cpu") == "fla"  # (FlashQLA cannot run here, so not the default)


@pytest.mark.parametrize("form", [{}, {"g_chunk": 64}, {"g_linear": True}], ids=["g", "chunk-sums", "e^g"])
def test_the_rule_s_inputs_are_padded_to_its_rows_as_dn_prep_writes_them(form):
    """padded(): a 70-row prompt's inputs for a rule of 128 rows keep the prompt's rows; past them q, k, v and beta are 0
    and g's step is 0, g then in the rule's form: itself (0 past the prompt), summed within 64-row chunks (row 69's
    sum repeated), or e^g (1 past the prompt: the state is not decayed by a padding row); a rule of T rows gets q, k,
    v and beta as they are."""
    rule = prefill_delta_rule.DeltaRule("stand-in", lambda *a: None, **form)
    q, k, v, g, beta, _ = inputs(CONFIG, 70, "fresh", "model", 0, "cpu")
    args = padded(q, k, v, g, beta, 128, rule)
    for x, p in zip((q, k, v, beta), args[:3] + args[4:]):
        assert p.shape == (1, 128) + tuple(x.shape[2:]) and p.dtype == x.dtype and torch.equal(p[:, :70], x)
    assert all((p[:, 70:] == 0).all() for p in (args[0], args[1], args[2], args[4]))
    want = prefill_delta_rule.rule_gates(g, rule)
    assert args[3].shape == (1, 128, g.shape[2]) and torch.equal(args[3][:, :70], want)
    pad = {"g": torch.zeros(1, 58, g.shape[2]), "chunk-sums": want[:, 69:70].expand(1, 58, -1),
           "e^g": torch.ones(1, 58, g.shape[2])}["e^g" if rule.g_linear else "chunk-sums" if rule.g_chunk else "g"]
    assert torch.equal(args[3][:, 70:], pad)
    same = padded(q, k, v, g, beta, 70, rule)
    assert all(a is b for a, b in zip(same[:3] + same[4:], (q, k, v, beta))) and torch.equal(same[3], want)
    if rule.g_linear:  # (e^g: the decay itself, each in (0, 1])
        assert torch.allclose(want, g.exp()) and (want > 0).all() and (want <= 1).all()


def test_cli_errors_are_one_line(capsys):
    assert main(["delta-rule", "--rules", "fla,foo"]) == 2
    assert "expected a comma-separated list of fla, flash-qla, flashinfer" in capsys.readouterr().err
    assert main(["delta-rule", "--rules", "fla,fla"]) == 2
    assert "named twice" in capsys.readouterr().err
    assert main(["delta-rule", "--pp", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err
    assert main(["delta-rule", "--calls", "0"]) == 2
    assert "--calls 0" in capsys.readouterr().err
    assert main(["delta-rule", "--pp", ","]) == 2
    assert "no length in it" in capsys.readouterr().err
    assert main(["delta-rule", "--calls", "0"]) == 2
    assert "--calls 0" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(["delta-rule"]) == 2
        assert "no CUDA GPU" in capsys.readouterr().err


@pytest.mark.parametrize("state", ["fresh", "carried"])
@pytest.mark.parametrize("gates", ["model", "slow"])
def test_the_benchs_oracle_is_the_recurrent_rule_in_the_prefills_layout(state, gates):
    """compare delta-rule's reference (the chunked fp32 rule on the prefill's [V][K] state layout and
    [1, T, heads, dim] inputs) equals reference/delta_rule.py's token-by-token rule."""
    q, k, v, g, beta, h0 = inputs(CONFIG, 70, state, gates, 3, torch.device("cpu"))
    scale = CONFIG.linear_key_head_dim ** -0.5
    o, s = reference(q, k, v, g, beta, h0, scale)
    o2, s2 = gated_delta_rule_recurrent(q=q.float() * scale, k=k.float(), v=v.float(), g=g, beta=beta,
                              initial_state=h0.transpose(-1, -2))
    assert relative_error(o, o2) < 1e-4 and relative_error(s, s2.transpose(-1, -2)) < 1e-4
    assert o.shape == (1, 70, 16, 128) and s.shape == (1, 16, 128, 128)
    if state == "fresh":
        assert not h0.any()
    if gates == "slow":
        assert bool((g > -0.002).all() and (g <= 0).all())
    assert math.isnan(relative_error(torch.full((2,), float("nan")), torch.ones(2)))  # NaN never passes a bound
    assert relative_error(torch.ones(2), torch.ones(2)) == 0.0


def test_the_table_lists_a_rule_that_could_not_run_with_its_reason():
    rows = [{"T": 520, "state": "fresh", "gates": "model", "rule": "fla", "us": 50.0, "timing": "graph",
             "layers_ms": 0.9, "vs_first": 1.0, "err_o": 3.6e-3, "err_state": 2.9e-3, "input_state_unchanged": True},
            {"T": 520, "state": "fresh", "gates": "model", "rule": "flash-qla",
             "unavailable": "flash_qla is not importable (ImportError: x)"},
            {"T": 520, "state": "carried", "gates": "slow", "rule": "fla", "us": 51.0, "timing": "eager",
             "layers_ms": 0.92, "vs_first": 1.0, "err_o": 4e-3, "err_state": 3e-3, "input_state_unchanged": False},
            {"T": 520, "state": "carried", "gates": "slow", "rule": "flashinfer",
             "failed": "NotImplementedError: SM90 GDN prefill DSL kernel is unavailable"},
            {"T": 520, "state": "fresh", "gates": "model", "rule": "flashinfer", "us": 30.0, "timing": "graph",
             "pieces": 1, "route": "context parallel", "layers_ms": 0.54, "vs_first": 1.67, "err_o": 3.6e-3,
             "err_state": 2.9e-3, "input_state_unchanged": True}]
    table = render(rows, CONFIG, ["fla", "flash-qla", "flashinfer"])
    lines = [line for line in table.splitlines() if line.startswith("| pp")]
    assert len(lines) == 5
    assert "flashinfer (context parallel)" in lines[4] and "1.67x" in lines[4]
    assert "not run: flash_qla is not importable" in lines[1]
    assert "FAILED: NotImplementedError: SM90 GDN prefill DSL kernel is unavailable" in lines[3] and "flashinfer" in lines[3]
    assert "50.0" in lines[0] and "1.00x" in lines[0] and "3.60e-03" in lines[0]
    assert "WROTE ITS INPUT STATE" in lines[2] and "eager" in lines[2]


def test_rerender_redraws_the_table_and_the_chart_without_a_gpu(tmp_path, capsys):
    rows = [{"T": T, "state": "fresh", "gates": gates, "rule": rule, "us": us, "timing": "graph", "layers_ms": us * 0.018,
             "vs_first": v, "err_o": 3.6e-3, "err_state": 2.7e-3, "input_state_unchanged": True}
            for T, gates, rule, us, v in ((256, "model", "fla", 36.6, 1.0), (256, "model", "flash-qla", 19.1, 1.91),
                                          (520, "slow", "fla", 50.1, 1.0), (520, "slow", "flash-qla", 33.2, 1.51))]
    path = tmp_path / "delta_rule.json"
    path.write_text(__import__("json").dumps({"environment": {"device": "test", "commit": "x"}, "rules": ["fla", "flash-qla"],
                                              "rows": rows}))
    png = tmp_path / "chart.png"
    assert main(["delta-rule", "--rerender", str(path), "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.count("| pp") == 4 and "1.91x" in out
    assert png.stat().st_size > 10_000
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert main(["delta-rule", "--rerender", str(bad)]) == 2
    assert "expected a delta_rule.json" in capsys.readouterr().err


def test_the_tiers_rule_setter_refuses_with_the_reason():
    """tier.prefill_delta_rule (a `compare ab` variant attribute) on stand-ins for the tier: without a fast
    prefill only "none" is accepted; an unknown or unrunnable rule is refused naming why, the rule unchanged."""
    from megakernel.tier import MegakernelTier

    prop = MegakernelTier.prefill_delta_rule
    slow = types.SimpleNamespace(fast_prefill=None, prefill_note="slow prefill (reference ops): no fla", device="cpu")
    assert prop.fget(slow) == "none"
    prop.fset(slow, "none")
    with pytest.raises(ValueError, match="no fast prefill .*slow prefill .reference ops.: no fla.*no delta rule to choose"):
        prop.fset(slow, "fla")
    fast = types.SimpleNamespace(fast_prefill=types.SimpleNamespace(delta_rule="fla"), device="cpu")
    for name, why in (("nope", "unknown delta rule 'nope'"), ("flash-qla", "CUDA GPU only")):
        with pytest.raises(ValueError, match=why):
            prop.fset(fast, name)
    assert prop.fget(fast) == "fla"


def test_chunk_cumsum_sums_within_chunks_from_row_zero():
    g = -torch.rand(1, 130, 3, dtype=torch.float64)
    got = prefill_delta_rule.chunk_cumsum(g, 64)
    for t in (0, 1, 63, 64, 65, 127, 128, 129):
        first = t - t % 64
        assert torch.allclose(got[0, t], g[0, first:t + 1].sum(0))
    assert prefill_delta_rule.chunk_cumsum(g, 0) is g


def test_flash_qla_splits_in_four_pieces_only_where_measured_faster():
    pieces = prefill_delta_rule.flash_qla_piece_chunks
    assert [pieces(T, 64) for T in (256, 520, 1024, 1984)] == [None] * 4  # (split slower, or FlashQLA's choice)
    assert (pieces(2048, 64), pieces(4096, 64), pieces(4097, 64), pieces(8192, 64)) == (8, 16, 17, 32)
    for T in range(1985, 8193, 61):  # (never a fifth piece)
        chunks = math.ceil(T / 64)
        assert math.ceil(chunks / pieces(T, 64)) == 4
    assert pieces(8193, 64) is None and pieces(32768, 64) is None


def test_the_prefill_splits_k_only_where_measured():
    from megakernel.prefill import split_k

    assert [split_k(T, 1024) for T in (2, 64, 256)] == [2, 2, 2]  # (torch >= 2.8: aten.bmm.dtype_out)
    assert split_k(257, 1024) == 1 and split_k(520, 1024) == 1
    assert split_k(64, 2560) == 1 and split_k(64, 4096) == 1  # (measured at the 0.8B's hidden size only)


def test_flash_qla_block_dv_is_flash_qla_s_pick_but_16_for_one_short_piece():
    """FlashQLA's fused kernel's value columns a block: FlashQLA 0.1.3's own formula (hopper/fused_fwd.py: 128 where
    the grid reaches 70% of the SMs, 64 where twice it does, else 32) everywhere but one piece of at most 2,048 rows
    whose 16-column blocks all fit the SMs (the measured case), which takes 16."""
    pick = prefill_delta_rule.flash_qla_block_dv

    def flash_qla(grid, sms):
        target = int(sms * 0.7)
        return 128 if grid >= target else 64 if 2 * grid >= target else 32

    assert pick(16, 132, 520) == 16 and pick(16, 132, 2048) == 16  # (the 0.8B's 16 heads: 128 blocks)
    assert pick(16, 132, 2049) == 32 and pick(16, 127, 520) == 32  # (past the rows measured; blocks that would not fit)
    assert [pick(16 * p, 132, 520) for p in (2, 3, 4)] == [32, 64, 64]
    for grid in range(1, 300):
        for sms in (60, 78, 114, 132):
            for T in (64, 2048, 4096):
                b = pick(grid, sms, T)
                narrow = T <= 2048 and grid * 8 <= sms and flash_qla(grid, sms) == 32
                assert b == (16 if narrow else flash_qla(grid, sms)), (grid, sms, T)


def test_flashinfer_is_refused_where_its_kernels_for_the_gpu_did_not_import(monkeypatch):
    """unavailable_reason("flashinfer"): FlashInfer's gdn_kernels package sets a kernel whose CuTe DSL import failed to
    None and `import flashinfer.gdn_prefill` still succeeds, so the rule checks the kernels for this GPU's
    architecture; a GPU without any FlashInfer GDN prefill kernel is refused naming the ones there are. (CUDA and the
    package are stand-ins here.)"""
    import sys

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    cap = [(9, 0)]
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: cap[0])
    package, module = types.ModuleType("flashinfer"), types.ModuleType("flashinfer.gdn_prefill")
    package.gdn_prefill = module
    monkeypatch.setitem(sys.modules, "flashinfer", package)
    monkeypatch.setitem(sys.modules, "flashinfer.gdn_prefill", module)
    module.chunk_gated_delta_rule_sm90, module.cp_delta_rule_dsl_sm90 = None, object()
    why = prefill_delta_rule.unavailable_reason("flashinfer", "cuda")
    assert why and "not its kernels for sm_9x" in why and "chunk_gated_delta_rule_sm90" in why
    assert "cp_delta_rule_dsl_sm90" not in why
    module.chunk_gated_delta_rule_sm90 = object()
    assert prefill_delta_rule.unavailable_reason("flashinfer", "cuda") is None
    cap[0] = (10, 0)  # (another architecture's kernels: its own names)
    assert "chunk_gated_delta_rule_sm100, cp_delta_rule_dsl_sm100" in prefill_delta_rule.unavailable_reason("flashinfer", "cuda")
    cap[0] = (7, 5)
    why = prefill_delta_rule.unavailable_reason("flashinfer", "cuda")
    assert "sm_75" in why and "sm_80, sm_90, sm_100 and sm_120" in why


def test_a_failed_rule_is_written_and_makes_the_exit_status_1(monkeypatch, tmp_path, capsys):
    """`compare delta-rule` with a rule that raised (measure() stood in: no GPU here): the table and the JSON hold every
    row, the failed one saying FAILED and how, and the exit status is 1, not 0; with none failed it is 0."""
    import json

    import compare.delta_rule as dr

    ok = {"T": 520, "state": "fresh", "gates": "model", "rule": "fla", "us": 50.0, "timing": "graph", "pieces": 1,
          "route": "", "layers_ms": 0.9, "vs_first": 1.0, "err_o": 3.6e-3, "err_state": 2.9e-3, "input_state_unchanged": True}
    bad = {"T": 520, "state": "fresh", "gates": "model", "rule": "flashinfer", "failed": "RuntimeError: no kernel"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(dr, "environment", lambda: {"device": "test"})
    for rows, status in (([ok, bad], 1), ([ok], 0)):
        monkeypatch.setattr(dr, "measure", lambda *a, rows=rows: rows)
        assert main(["delta-rule", "--pp", "520", "--rules", "fla,flashinfer", "--out", str(tmp_path)]) == status
        out, err = capsys.readouterr()
        assert ("FAILED: RuntimeError: no kernel" in out) == (status == 1)
        assert ("1 row(s) FAILED" in err) == (status == 1)
        assert json.loads((tmp_path / "delta_rule.json").read_text())["rows"] == rows
