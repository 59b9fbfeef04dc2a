"""`python -m compare diff` on the CPU: the table, the JSON, the heatmap, dumps and
--against, the exit status, and one-line errors for bad input."""

import json

import pytest

from compare.__main__ import main


def run(capsys, *argv):
    status = main(["diff", "--config", "tiny", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_table_and_json(tmp_path, capsys):
    status, out, _ = run(capsys, "--tiers", "reference,hf", "--prompt-len", "9", "--decode-steps", "2",
                         "--json", str(tmp_path / "d.json"), "--png", str(tmp_path / "d.png"))
    assert status == 0
    errors, ratio_block, decode_block = out.split("error ÷ transformers' bf16 error (hf)")
    lines = errors.splitlines()
    header = next(line for line in lines if line.startswith("part"))
    assert header.split() == ["part", "reference", "hf"]
    rows = [line.split()[0] for line in lines if line.startswith(("embed", "layers.", "norm", "logits"))]
    assert rows == ["embed", "layers.0", "layers.1", "layers.2", "layers.3", "norm", "logits"]
    assert "layers.3 (attention)" in out and "layers.0 (DeltaNet)" in out
    assert "top-1 agreement" in out and "worst part of reference" in out
    report = json.loads((tmp_path / "d.json").read_text())
    assert report["config"] == "tiny" and report["prompt_len"] == 9 and report["decode_steps"] == 2
    ref = report["tiers"]["reference"]
    assert len(ref["errors"]["layers.2"]) == 3  # prefill + 2 decode steps
    assert 0 < ref["worst"]["logits"] < 0.1 and ref["ok"] is True
    assert (tmp_path / "d.png").stat().st_size > 10_000
    # the ratio to transformers' bf16 error, part by part (embed: both exact)
    hf = report["tiers"]["hf"]["worst"]
    ratios = report["ratio_to_hf"]["reference"]
    assert list(report["ratio_to_hf"]) == ["reference"] and ratios["embed"] is None
    assert ratios["layers.1"] == pytest.approx(ref["worst"]["layers.1"] / hf["layers.1"])
    rows = {line.split()[0]: line.split()[-1] for line in ratio_block.splitlines() if line.startswith(("embed", "layers."))}
    assert rows["embed"] == "—" and rows["layers.1"] == f"{ratios['layers.1']:.2f}x"
    worst = max((n for n in ratios if ratios[n] is not None), key=ratios.get)
    assert f"worst ratio of reference: {ratios[worst]:.2f}x" in ratio_block
    # the same over the decode steps alone (a tier's decode kernels, apart from its prefill)
    assert "worst over the 2 decode steps alone" in decode_block
    dec = report["ratio_to_hf_decode"]["reference"]
    hf_dec = report["tiers"]["hf"]["worst_decode"]
    assert ref["worst_decode"]["layers.1"] == max(ref["errors"]["layers.1"][1:])
    assert dec["layers.1"] == pytest.approx(ref["worst_decode"]["layers.1"] / hf_dec["layers.1"])
    rows = {line.split()[0]: line.split()[-1] for line in decode_block.splitlines() if line.startswith(("embed", "layers."))}
    assert rows["layers.1"] == f"{dec['layers.1']:.2f}x"


def test_dump_and_against(tmp_path, capsys):
    assert run(capsys, "--tiers", "reference", "--dump", str(tmp_path / "a"))[0] == 0
    status, out, _ = run(capsys, "--tiers", "reference", "--against", str(tmp_path / "a"))
    assert status == 0
    block = out.split("relative difference vs the dump")[1]
    values = [float(line.split()[-1]) for line in block.splitlines()[2:] if line.strip()]
    assert len(values) == 7 and all(v == 0.0 for v in values)  # same commit, same machine: bitwise equal


def test_out_of_tolerance_exits_nonzero(capsys, monkeypatch):
    from reference import tolerances

    monkeypatch.setattr(tolerances, "BF16_CEILING", 1e-9)
    monkeypatch.setattr(tolerances, "BF16_SLACK", 0.0)
    monkeypatch.setattr(tolerances, "HF_FACTOR", 0.0)
    status, out, _ = run(capsys, "--tiers", "reference", "--decode-steps", "1")
    assert status == 1 and "OUT OF TOLERANCE: reference" in out and "!" in out


@pytest.mark.parametrize("argv, message", [
    (["--tiers", "nope"], "unknown tier(s) ['nope']"),
    (["--prompt-len", "0"], "--prompt-len must be at least 1, got 0"),
    (["--checkpoint", "/no/such/dir"], "does not exist"),
    (["--against", "/no/such/dump"], "no such folder"),
    (["--tiers", "megakernel"], "tier 'megakernel' cannot run on cpu"),
])
def test_bad_input_is_one_line(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert message in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1


def test_hazard_weights_by_hand():
    """reference.hazard_weights: a few embedding channels 32x larger (nothing else in the embedding
    moved), every DeltaNet layer's even heads near decay 0 and odd heads near 1, the norms perturbed,
    the input untouched."""
    import math

    import torch

    from reference import ModelConfig, hazard_weights, random_weights
    from reference.weights import HAZARD_CHANNELS, HAZARD_SCALE

    config = ModelConfig.named("tiny")
    plain = random_weights(config, seed=0, dtype=torch.float32)
    before = {k: v.clone() for k, v in plain.items()}
    hard = hazard_weights(plain)
    assert all(torch.equal(plain[k], before[k]) for k in plain)
    emb, emb0 = hard["model.embed_tokens.weight"], plain["model.embed_tokens.weight"]
    ratio = (emb / emb0).nan_to_num(1.0)
    big = [c for c in range(emb.shape[1]) if torch.allclose(ratio[:, c], torch.tensor(HAZARD_SCALE))]
    assert len(big) == HAZARD_CHANNELS
    assert torch.equal(emb[:, [c for c in range(emb.shape[1]) if c not in big]],
                       emb0[:, [c for c in range(emb.shape[1]) if c not in big]])
    for i, kind in enumerate(config.layer_types):
        if kind != config.layer_types[0] or f"model.layers.{i}.linear_attn.A_log" not in hard:
            continue
        a_log, dt = hard[f"model.layers.{i}.linear_attn.A_log"], hard[f"model.layers.{i}.linear_attn.dt_bias"]
        decay = torch.exp(-a_log.exp() * torch.nn.functional.softplus(dt))
        assert (decay[0::2] < 1e-30).all() and (decay[1::2] > 0.9999).all(), decay
    assert not torch.equal(hard["model.norm.weight"], plain["model.norm.weight"])
    assert math.isclose(float(hard["model.layers.0.linear_attn.A_log"][0]), math.log(64.0), rel_tol=1e-6)


def test_diff_on_hazard_weights(tmp_path, capsys):
    status, out, err = run(capsys, "--tiers", "reference,hf", "--weights", "hazard", "--decode-steps", "2",
                           "--json", str(tmp_path / "d.json"))
    assert status == 0 and "within tolerance" in out and "(hazard weights)" in err
    assert json.loads((tmp_path / "d.json").read_text())["weights"] == "hazard"
