"""`python -m compare ab` on the CPU (the reference tier at the tiny config, a reference tier with
one variant attribute, the Triton tier in the interpreter): variant specs, their errors, and a
whole run's table and JSON."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import TRITON_MARKS

from compare import tiers
from compare.ab import parse_value, parse_variant
from compare.__main__ import main
from compare.common import UsageError
from reference import ReferenceTier, TierInputError


def test_variant_specs():
    allowed = ("grid", "schedule", "cuda_graph")
    assert parse_variant("base", allowed) == ("base", {})
    assert parse_variant("g:grid=97,schedule=register", allowed) == ("g", {"grid": 97, "schedule": "register"})
    assert parse_variant("e:cuda_graph=false", allowed) == ("e", {"cuda_graph": False})
    assert parse_value("0x10") == 16 and parse_value("TRUE") is True and parse_value("ring") == "ring"
    for bad, msg in ((":grid=1", "name before ':' is empty"), ("a:grid", "'grid' is not attr=value"),
                     ("a:grid=", "'grid=' is not attr=value"),
                     ("a:flags=1", "'flags' is not a variant attribute of this tier; expected one of grid, schedule")):
        with pytest.raises(UsageError, match=msg):
            parse_variant(bad, allowed)
    with pytest.raises(UsageError, match=r"this tier has no variants"):
        parse_variant("a:x=1", ())


def run(capsys, *argv):
    status = main(["ab", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_unknown_attribute_is_one_line(capsys):
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "a", "b:grid=2")
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [
        "error: variant 'b:grid=2': 'grid' is not a variant attribute of this tier; expected one of "
        "(none: this tier has no variants)"]


def test_a_whole_run(capsys, tmp_path):
    path = tmp_path / "ab.json"
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--rounds", "1", "--reps", "1", "--tg", "2",
                           "--pp", "3", "a", "b", "--json", str(path))
    assert status == 0, err
    assert "round 1 a" in out and "round 1 b" in out
    table = [line for line in out.splitlines() if line.startswith("| b")]
    assert len(table) == 1 and table[0].rstrip(" |").endswith("same")
    doc = json.loads(path.read_text())
    assert doc["tier"] == "reference" and doc["rows"] == ["tg2", "pp3"]
    assert doc["results"]["b"]["same_bits"] and len(doc["results"]["a"]["tg2"]) == 1
    assert doc["results"]["a"]["median"]["tg2"] > 0


def test_a_batch_run(scaled, capsys, tmp_path):
    """--batch B: the tg rows decode B sequences together (total tokens/s, the row named b{B}), and the
    bits compare B rows' logits, so a variant that changes only the last row's numbers is told apart."""
    path = tmp_path / "ab.json"
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tier", "scaled", "--rounds", "1",
                           "--reps", "1", "--tg", "2", "--depth", "5", "--batch", "3", "one", "last:scale=2,from_row=2",
                           "same:scale=2,from_row=3", "--json", str(path))
    assert status == 0, err
    assert "| batch 3 |" in out
    doc = json.loads(path.read_text())
    assert doc["batch"] == 3 and doc["rows"] == ["tg2 b3", "tg2 @ d5 b3"]
    assert not doc["results"]["last"]["same_bits"] and doc["results"]["same"]["same_bits"]
    assert doc["results"]["last"]["notes"] == [] and doc["results"]["one"]["median"]["tg2 b3"] > 0


def test_what_a_variant_runs_differently_is_printed(scaled, capsys, tmp_path):
    """A tier's variant_notes (e.g. the megakernel's ring slots clamped at a batch) are printed and kept in the JSON."""
    path = tmp_path / "ab.json"
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tier", "scaled", "--rounds", "1",
                           "--reps", "1", "--tg", "2", "--batch", "2", "one", "big:scale=4", "--json", str(path))
    assert status == 0, err
    assert "variant big: scale=4 acts as 2 at batch 2" in out.splitlines()
    assert json.loads(path.read_text())["results"]["big"]["notes"] == ["scale=4 acts as 2 at batch 2"]


def test_a_batch_above_the_tiers_limit_is_one_line(scaled, monkeypatch, capsys):
    monkeypatch.setattr(ScaledTier, "max_batch", 2, raising=False)
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tier", "scaled", "--batch", "3", "a")
    assert status == 2 and out == ""
    assert err.strip().splitlines() == ["error: --batch 3: tier 'scaled' decodes 1 to 2 sequences together"]


def test_tiers_flag_is_refused(capsys):
    status, _, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tiers", "reference", "a")
    assert status == 2 and "use --tier NAME" in err


@pytest.mark.parametrize("argv, message", [
    (["--tier", "nope", "a"], "--tier 'nope': unknown tier; expected one of reference, hf, triton, megakernel"),
    (["a", "a"], "variant names must differ; got a, a"),
    (["--rounds", "0", "a"], "--rounds 0: expected at least 1"),
    (["--batch", "0", "a"], "--batch 0: expected at least 1"),
    (["--depth", "5000", "a"], "--depth with --tg needs 5128 positions; config tiny has 4096"),
])
def test_bad_arguments_are_one_line(capsys, argv, message):
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", *argv)
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [f"error: {message}"]


class ScaledTier(ReferenceTier):
    """The reference tier with variant attributes: `scale` multiplies the logits (> 0) of the batch rows from
    `from_row` on (default 0: every row)."""

    name = "scaled"
    variant_attributes = ("scale", "from_row")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._scale = 1
        self.from_row = 0

    @property
    def scale(self):
        return self._scale

    def variant_notes(self, batch_size):
        return [f"scale={self._scale} acts as {self._scale // 2} at batch {batch_size}"] if self._scale > 2 else []

    @scale.setter
    def scale(self, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TierInputError(f"expected an int >= 1, got {value!r}")
        self._scale = value

    def _decode(self, token_ids, state, trace):
        logits = super()._decode(token_ids, state, trace)
        rows = torch.arange(logits.shape[0]).view(-1, *[1] * (logits.dim() - 1)) >= self.from_row
        return torch.where(rows, logits * self._scale, logits)


@pytest.fixture
def scaled(monkeypatch):
    monkeypatch.setitem(tiers.TIERS, "scaled", (__name__, "ScaledTier"))


def test_variants_set_the_attributes_and_the_bits_tell_them_apart(scaled, capsys, tmp_path):
    path = tmp_path / "ab.json"
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tier", "scaled", "--rounds", "2",
                           "--reps", "1", "--tg", "2", "--depth", "5", "one", "two:scale=2", "same:scale=1",
                           "--json", str(path))
    assert status == 0, err
    assert [line.split()[:3] for line in out.splitlines() if line.startswith("round")] == [
        ["round", "1", "one"], ["round", "1", "two"], ["round", "1", "same"],
        ["round", "2", "one"], ["round", "2", "two"], ["round", "2", "same"]]  # interleaved
    doc = json.loads(path.read_text())
    assert doc["rows"] == ["tg2", "tg2 @ d5"] and doc["results"]["two"]["attrs"] == {"scale": 2}
    assert doc["results"]["same"]["same_bits"] and not doc["results"]["two"]["same_bits"]
    assert doc["results"]["two"]["max_logit_diff"] > 0 and doc["results"]["one"]["max_logit_diff"] == 0
    bits = {line.split("|")[1].strip(): line.split("|")[-2].strip() for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| variant")}
    assert bits["one"] == bits["same"] == "same" and bits["two"].startswith("max Δlogit ")


def test_a_value_the_tier_refuses_names_the_variant(scaled, capsys):
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tier", "scaled", "a", "b:scale=0")
    assert status == 2 and out == ""  # refused before any timing
    assert err.strip().splitlines() == ["error: variant 'b': scale=0: expected an int >= 1, got 0"]


@pytest.mark.parametrize("gemv", [pytest.param("cublas", marks=TRITON_MARKS)])
def test_triton_variants(gemv, capsys, tmp_path):
    """The Triton tier in the interpreter: our GEMV against torch's (`gemv=cublas`)."""
    if tiers.unavailable_reason("triton", "cpu") is not None:
        pytest.skip(tiers.unavailable_reason("triton", "cpu"))
    path = tmp_path / "ab.json"
    status, out, err = run(capsys, "--device", "cpu", "--config", "tiny", "--tier", "triton", "--rounds", "1",
                           "--reps", "1", "--tg", "1", "ours", f"{gemv}:gemv={gemv},cuda_graph=false",
                           "--json", str(path))
    assert status == 0, err
    doc = json.loads(path.read_text())
    assert doc["tier"] == "triton" and doc["results"]["cublas"]["attrs"] == {"gemv": "cublas", "cuda_graph": False}
    assert doc["results"]["cublas"]["max_logit_diff"] < 1e-4  # fp32: another GEMV rounds alike within 1e-4
    assert torch.isfinite(torch.tensor(doc["results"]["cublas"]["median"]["tg1"]))
